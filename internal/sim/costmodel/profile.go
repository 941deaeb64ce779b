package costmodel

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed profiles/*.yaml
var builtin embed.FS

// GPU describes one accelerator from its datasheet.
type GPU struct {
	// Name is the short, lower-case name used on the command line.
	Name string `yaml:"name"`
	// Aliases are other accepted names (matched case-insensitively).
	Aliases []string `yaml:"aliases,omitempty"`
	// BF16TFLOPS is the dense (no sparsity) BF16 tensor-core peak, TFLOP/s.
	BF16TFLOPS float64 `yaml:"bf16_tflops"`
	// FP8TFLOPS is the dense FP8 tensor-core peak, TFLOP/s; 0 means the GPU
	// has no FP8 tensor cores, so FP8 weights compute in BF16.
	FP8TFLOPS float64 `yaml:"fp8_tflops"`
	// BandwidthGBs is the device memory bandwidth, GB/s (1e9 bytes/s).
	BandwidthGBs float64 `yaml:"bandwidth_gbs"`
	// MemoryGiB is the device memory, GiB.
	MemoryGiB float64 `yaml:"memory_gib"`
	// Interconnect is the tensor-parallel link: "nvlink" or "pcie".
	Interconnect string `yaml:"interconnect"`
	// InterconnectGBs is the per-direction link bandwidth per GPU, GB/s.
	InterconnectGBs float64 `yaml:"interconnect_gbs"`
	// Efficiency overrides the default achievable fractions of peak; nil
	// fields keep DefaultEfficiency.
	Efficiency *Efficiency `yaml:"efficiency,omitempty"`
}

// Model describes a transformer from its Hugging Face config.
type Model struct {
	// Name is the short, lower-case name used on the command line.
	Name string `yaml:"name"`
	// HFID is the Hugging Face repository id, e.g. meta-llama/Llama-3.1-8B.
	HFID string `yaml:"hf_id"`
	// Aliases are other accepted names (matched case-insensitively).
	Aliases []string `yaml:"aliases,omitempty"`
	// Layers is num_hidden_layers.
	Layers int `yaml:"layers"`
	// Hidden is hidden_size.
	Hidden int `yaml:"hidden"`
	// Heads is num_attention_heads.
	Heads int `yaml:"heads"`
	// KVHeads is num_key_value_heads (GQA); equal to Heads for MHA.
	KVHeads int `yaml:"kv_heads"`
	// HeadDim is the declared head_dim; 0 means Hidden/Heads.
	HeadDim int `yaml:"head_dim"`
	// Intermediate is the dense MLP's intermediate_size.
	Intermediate int `yaml:"intermediate"`
	// Experts is the routed experts per MoE layer; 0 for a dense model.
	Experts int `yaml:"experts,omitempty"`
	// ActiveExperts is the experts each token is routed to (top-k).
	ActiveExperts int `yaml:"active_experts,omitempty"`
	// ExpertIntermediate is each expert's intermediate size
	// (moe_intermediate_size).
	ExpertIntermediate int `yaml:"expert_intermediate,omitempty"`
	// Vocab is vocab_size.
	Vocab int `yaml:"vocab"`
	// TiedEmbeddings is tie_word_embeddings (the LM head reuses the
	// embedding matrix).
	TiedEmbeddings bool `yaml:"tied_embeddings,omitempty"`
	// MaxPosition is max_position_embeddings, the default max model length
	// in tokens.
	MaxPosition int `yaml:"max_position"`
	// Thinking marks a reasoning model that emits hidden tokens first.
	Thinking bool `yaml:"thinking,omitempty"`
}

// headDim returns the declared head_dim, or hidden/heads when undeclared.
func (m *Model) headDim() int {
	if m.HeadDim > 0 {
		return m.HeadDim
	}
	return m.Hidden / m.Heads
}

// AttentionParams is the attention weights of one layer (q, k, v, o).
func (m *Model) AttentionParams() int64 {
	hd := int64(m.headDim())
	h := int64(m.Hidden)
	return h*int64(m.Heads)*hd*2 + 2*h*int64(m.KVHeads)*hd
}

// MLPParams is the MLP weights of one layer: all experts for MoE.
func (m *Model) MLPParams() int64 {
	h := int64(m.Hidden)
	if m.Experts > 0 {
		return int64(m.Experts)*3*h*int64(m.ExpertIntermediate) + h*int64(m.Experts)
	}
	return 3 * h * int64(m.Intermediate)
}

// ActiveMLPParams is the MLP weights one token touches in one layer.
func (m *Model) ActiveMLPParams() int64 {
	h := int64(m.Hidden)
	if m.Experts > 0 {
		return int64(m.ActiveExperts)*3*h*int64(m.ExpertIntermediate) + h*int64(m.Experts)
	}
	return 3 * h * int64(m.Intermediate)
}

// EmbeddingParams is the input embedding plus the LM head (counted once when
// tied).
func (m *Model) EmbeddingParams() int64 {
	e := int64(m.Vocab) * int64(m.Hidden)
	if m.TiedEmbeddings {
		return e
	}
	return 2 * e
}

// Params is the total parameter count (norms and biases ignored: < 0.1 %).
func (m *Model) Params() int64 {
	return int64(m.Layers)*(m.AttentionParams()+m.MLPParams()) + m.EmbeddingParams()
}

// ActiveParams is the parameters one token uses (MoE: routed experts only).
func (m *Model) ActiveParams() int64 {
	return int64(m.Layers)*(m.AttentionParams()+m.ActiveMLPParams()) + m.EmbeddingParams()
}

// KVBytesPerToken is the KV cache of one token over all layers, bytes,
// at kvBytes per element (2 for bf16, 1 for fp8), before TP sharding.
func (m *Model) KVBytesPerToken(kvBytes float64) float64 {
	return 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.headDim()) * kvBytes
}

func (g *GPU) validate() error {
	switch {
	case g.Name == "":
		return errors.New("gpu profile without a name")
	case g.BF16TFLOPS <= 0:
		return fmt.Errorf("gpu %s: bf16_tflops must be > 0", g.Name)
	case g.FP8TFLOPS < 0:
		return fmt.Errorf("gpu %s: fp8_tflops must be ≥ 0", g.Name)
	case g.BandwidthGBs <= 0:
		return fmt.Errorf("gpu %s: bandwidth_gbs must be > 0", g.Name)
	case g.MemoryGiB <= 0:
		return fmt.Errorf("gpu %s: memory_gib must be > 0", g.Name)
	case g.Interconnect != "nvlink" && g.Interconnect != "pcie":
		return fmt.Errorf("gpu %s: interconnect %q must be nvlink or pcie", g.Name, g.Interconnect)
	case g.InterconnectGBs <= 0:
		return fmt.Errorf("gpu %s: interconnect_gbs must be > 0", g.Name)
	}
	if g.Efficiency != nil {
		if err := g.Efficiency.validate(); err != nil {
			return fmt.Errorf("gpu %s: %w", g.Name, err)
		}
	}
	return nil
}

func (m *Model) validate() error {
	switch {
	case m.Name == "":
		return errors.New("model profile without a name")
	case m.Layers <= 0, m.Hidden <= 0, m.Heads <= 0, m.KVHeads <= 0, m.Vocab <= 0:
		return fmt.Errorf("model %s: layers, hidden, heads, kv_heads and vocab must be > 0", m.Name)
	case m.HeadDim < 0, m.Intermediate < 0, m.MaxPosition < 0:
		return fmt.Errorf("model %s: head_dim, intermediate and max_position must be ≥ 0", m.Name)
	case m.KVHeads > m.Heads || m.Heads%m.KVHeads != 0:
		return fmt.Errorf("model %s: heads (%d) must be a multiple of kv_heads (%d)", m.Name, m.Heads, m.KVHeads)
	case m.Experts == 0 && m.Intermediate == 0:
		return fmt.Errorf("model %s: intermediate must be > 0 for a dense model", m.Name)
	case m.Experts < 0, m.Experts > 0 && (m.ActiveExperts <= 0 || m.ActiveExperts > m.Experts || m.ExpertIntermediate <= 0):
		return fmt.Errorf("model %s: an MoE model needs 0 < active_experts ≤ experts and expert_intermediate > 0", m.Name)
	case m.HeadDim == 0 && m.Hidden%m.Heads != 0:
		return fmt.Errorf("model %s: hidden (%d) is not a multiple of heads (%d); declare head_dim", m.Name, m.Hidden, m.Heads)
	}
	return nil
}

// DecodeGPUs parses a YAML list of GPU profiles, rejecting unknown fields.
func DecodeGPUs(r io.Reader) ([]GPU, error) {
	var gs []GPU
	if err := decodeStrict(r, &gs); err != nil {
		return nil, fmt.Errorf("gpu profiles: %w", err)
	}
	for i := range gs {
		if err := gs[i].validate(); err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// DecodeModels parses a YAML list of model profiles, rejecting unknown
// fields.
func DecodeModels(r io.Reader) ([]Model, error) {
	var ms []Model
	if err := decodeStrict(r, &ms); err != nil {
		return nil, fmt.Errorf("model profiles: %w", err)
	}
	for i := range ms {
		if err := ms[i].validate(); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

func decodeStrict(r io.Reader, v any) error {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty document")
		}
		return err
	}
	return nil
}

// GPUs returns the built-in GPU profiles in a stable order.
func GPUs() []GPU {
	b, _ := builtin.ReadFile("profiles/gpus.yaml")
	gs, err := DecodeGPUs(bytes.NewReader(b))
	if err != nil {
		// The embedded file is tested; reaching this is a build defect.
		panic("costmodel: built-in gpus.yaml: " + err.Error())
	}
	return gs
}

// Models returns the built-in model profiles in a stable order.
func Models() []Model {
	b, _ := builtin.ReadFile("profiles/models.yaml")
	ms, err := DecodeModels(bytes.NewReader(b))
	if err != nil {
		panic("costmodel: built-in models.yaml: " + err.Error())
	}
	return ms
}

// normName folds case and the separators people swap (_, space, .) so
// "RTX_PRO_6000" finds rtx-pro-6000. Dots are kept: "llama-3.1-8b" and
// "llama-31-8b" are different names.
func normName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer("_", "-", " ", "-").Replace(s)
}

// isFile reports whether name looks like a path to a YAML profile.
func isFile(name string) bool {
	l := strings.ToLower(name)
	return strings.HasSuffix(l, ".yaml") || strings.HasSuffix(l, ".yml")
}

// LookupGPU finds a GPU by name or alias (case-insensitive), or loads a
// user profile from a .yaml file holding one GPU (or a list whose first
// entry is used).
func LookupGPU(name string) (GPU, error) {
	if isFile(name) {
		f, err := os.Open(name)
		if err != nil {
			return GPU{}, fmt.Errorf("gpu profile: %w", err)
		}
		defer f.Close()
		gs, err := DecodeGPUs(f)
		if err != nil {
			return GPU{}, fmt.Errorf("%s: %w", name, err)
		}
		if len(gs) == 0 {
			return GPU{}, fmt.Errorf("%s: no gpu profile", name)
		}
		return gs[0], nil
	}
	n := normName(name)
	var names []string
	for _, g := range GPUs() {
		if normName(g.Name) == n {
			return g, nil
		}
		for _, a := range g.Aliases {
			if normName(a) == n {
				return g, nil
			}
		}
		names = append(names, g.Name)
	}
	return GPU{}, fmt.Errorf("unknown gpu %q (known: %s, or a .yaml profile)", name, strings.Join(names, ", "))
}

// LookupModel finds a model by name, Hugging Face id or alias
// (case-insensitive), or loads a user profile from a .yaml file.
func LookupModel(name string) (Model, error) {
	if isFile(name) {
		f, err := os.Open(name)
		if err != nil {
			return Model{}, fmt.Errorf("model profile: %w", err)
		}
		defer f.Close()
		ms, err := DecodeModels(f)
		if err != nil {
			return Model{}, fmt.Errorf("%s: %w", name, err)
		}
		if len(ms) == 0 {
			return Model{}, fmt.Errorf("%s: no model profile", name)
		}
		return ms[0], nil
	}
	n := normName(name)
	var names []string
	for _, m := range Models() {
		if normName(m.Name) == n || normName(m.HFID) == n {
			return m, nil
		}
		for _, a := range m.Aliases {
			if normName(a) == n {
				return m, nil
			}
		}
		names = append(names, m.Name)
	}
	return Model{}, fmt.Errorf("unknown model %q (known: %s, their Hugging Face ids, or a .yaml profile)", name, strings.Join(names, ", "))
}
