package costmodel

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed profiles/*.yaml profiles/kernels/*.csv
var builtin embed.FS

// GPU describes one accelerator: its datasheet peaks, what public
// microbenchmarks measured it to sustain, its memory as CUDA reports it, and
// the link tensor parallelism runs over. The sustained figures drive the
// cost model; the datasheet ones are kept for reference and for deriving a
// sustained figure nobody has published.
type GPU struct {
	// Name is the short, lower-case name used on the command line.
	Name string `yaml:"name"`
	// Aliases are other accepted names (matched case-insensitively).
	Aliases []string `yaml:"aliases,omitempty"`
	// BF16TFLOPS is the datasheet dense (no sparsity) BF16 tensor-core
	// peak with FP32 accumulation, TFLOP/s.
	BF16TFLOPS float64 `yaml:"bf16_tflops"`
	// FP8TFLOPS is the datasheet dense FP8 tensor-core peak, TFLOP/s; 0
	// means the GPU has no FP8 tensor cores, so FP8 weights compute in BF16.
	FP8TFLOPS float64 `yaml:"fp8_tflops"`
	// BandwidthGBs is the datasheet device memory bandwidth, GB/s (1e9 B/s).
	BandwidthGBs float64 `yaml:"bandwidth_gbs"`
	// MemoryGiB is the device memory as CUDA reports it (the "total
	// capacity of X GiB" PyTorch prints), GiB — not the marketing size.
	MemoryGiB float64 `yaml:"memory_gib"`
	// Interconnect is the tensor-parallel link family: "nvlink", "pcie" or
	// "xgmi" (AMD Infinity Fabric).
	Interconnect string `yaml:"interconnect"`
	// InterconnectGBs is the datasheet per-direction link bandwidth per
	// GPU, GB/s.
	InterconnectGBs float64 `yaml:"interconnect_gbs"`
	// Sustained holds what the GPU was measured to sustain; a zero figure
	// is derived from the datasheet (see Sustained).
	Sustained Sustained `yaml:"sustained,omitempty"`
	// Link names the all-reduce figures (see Links): nvlink3, nvlink4,
	// nvlink5, pcie4, pcie4-nop2p, pcie5, pcie5-nop2p, xgmi3. "" means the
	// Interconnect's usual one (nvlink → nvlink4, pcie → pcie4-nop2p,
	// xgmi → xgmi3).
	Link string `yaml:"link,omitempty"`
	// AllReduce overrides the link's all-reduce figures with ones measured
	// on this machine (an nccl-tests all_reduce_perf sweep); zero fields
	// keep the link's.
	AllReduce AllReduceFigures `yaml:"allreduce,omitempty"`
	// Efficiency overrides the model's physical constants; zero fields
	// keep DefaultEfficiency.
	Efficiency *Efficiency `yaml:"efficiency,omitempty"`
	// Kernels names measured kernel tables of this GPU that price the
	// kernels they cover instead of the formula (see KernelTables): a
	// built-in table (a name in profiles/kernels/, e.g. h200.csv), a
	// kernel table CSV file (relative to the profile's own file), or a
	// directory of aiconfigurator's CSV tables (optionally with the GPU's
	// file prefix: DIR/h200_sxm). "" means none.
	Kernels string `yaml:"kernels,omitempty"`
	// KernelTables, when set, is used instead of loading Kernels.
	KernelTables *KernelTables `yaml:"-"`
}

// Sources of a sustained figure.
const (
	// SourceMeasured marks a figure taken from a public microbenchmark
	// (cited beside it in the profile) or the user's own measurement.
	SourceMeasured = "measured"
	// SourceDatasheet marks a figure nobody has published a measurement
	// of: the datasheet figure times the default sustained fraction.
	SourceDatasheet = "datasheet"
)

// Default sustained fractions of the datasheet, for a GPU whose sustained
// figure is not given. They are the medians of the measured built-in
// profiles: dense BF16 GEMMs sustain 0.80 of the datasheet on power-limited
// server parts (A100 0.87, H100 0.80, B200 0.78, L40S 0.74); a device-to-
// device copy moves 0.76 of an HBM datasheet (A100 0.76, H100 0.75) and
// 0.90 of a GDDR one (RTX 4090 0.91, RTX PRO 6000 0.90).
const (
	DefaultComputeFraction = 0.80
	DefaultHBMFraction     = 0.76
	DefaultGDDRFraction    = 0.90
)

// Sustained is what a GPU sustains in practice: the GEMM rate of large
// dense matmuls (as mamf-finder or a torch.mm sweep measures it) and the
// device memory-copy bandwidth (cudaMemcpy device to device, read + write
// counted, as p2pBandwidthLatencyTest's diagonal reports it). A zero figure
// is derived: BF16 from the datasheet × DefaultComputeFraction; FP8 from
// its datasheet × the BF16 sustained/datasheet ratio (same clocks and power
// limit); bandwidth from the datasheet × DefaultHBMFraction (or
// DefaultGDDRFraction when GDDR is set).
type Sustained struct {
	// BF16TFLOPS is the sustained dense BF16 GEMM rate, TFLOP/s.
	BF16TFLOPS float64 `yaml:"bf16_tflops,omitempty"`
	// BF16Source is SourceMeasured or SourceDatasheet.
	BF16Source string `yaml:"bf16_source,omitempty"`
	// FP8TFLOPS is the sustained dense FP8 GEMM rate, TFLOP/s.
	FP8TFLOPS float64 `yaml:"fp8_tflops,omitempty"`
	// FP8Source is SourceMeasured or SourceDatasheet.
	FP8Source string `yaml:"fp8_source,omitempty"`
	// BandwidthGBs is the sustained device memory-copy bandwidth, GB/s.
	BandwidthGBs float64 `yaml:"bandwidth_gbs,omitempty"`
	// BandwidthSource is SourceMeasured or SourceDatasheet.
	BandwidthSource string `yaml:"bandwidth_source,omitempty"`
	// GDDR marks GDDR device memory (for the derived bandwidth fraction).
	GDDR bool `yaml:"gddr,omitempty"`
}

// Resolved returns the three sustained figures with zero ones derived as
// Sustained describes, and their sources.
func (g *GPU) Resolved() Sustained {
	s := g.Sustained
	if s.BF16TFLOPS == 0 {
		s.BF16TFLOPS, s.BF16Source = g.BF16TFLOPS*DefaultComputeFraction, SourceDatasheet
	}
	if s.FP8TFLOPS == 0 && g.FP8TFLOPS > 0 {
		s.FP8TFLOPS, s.FP8Source = g.FP8TFLOPS*s.BF16TFLOPS/g.BF16TFLOPS, SourceDatasheet
	}
	if s.BandwidthGBs == 0 {
		f := DefaultHBMFraction
		if s.GDDR {
			f = DefaultGDDRFraction
		}
		s.BandwidthGBs, s.BandwidthSource = g.BandwidthGBs*f, SourceDatasheet
	}
	return s
}

// Model describes a transformer from its Hugging Face config.json (see
// ParseHFConfig, which fills it from one).
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
	// KVHeads is num_key_value_heads (GQA); equal to Heads for MHA. For MLA
	// it is Heads (the latent KV is shared; see KVLoraRank).
	KVHeads int `yaml:"kv_heads"`
	// HeadDim is the declared head_dim; 0 means Hidden/Heads.
	HeadDim int `yaml:"head_dim"`
	// Intermediate is the dense MLP's intermediate_size (MoE models: that
	// of their leading dense layers, if any).
	Intermediate int `yaml:"intermediate"`
	// Experts is the routed experts per MoE layer; 0 for a dense model.
	Experts int `yaml:"experts,omitempty"`
	// ActiveExperts is the experts each token is routed to (top-k).
	ActiveExperts int `yaml:"active_experts,omitempty"`
	// ExpertIntermediate is each expert's intermediate size
	// (moe_intermediate_size).
	ExpertIntermediate int `yaml:"expert_intermediate,omitempty"`
	// SharedExpertIntermediate is the intermediate size of the always-on
	// shared expert(s) of an MoE layer (DeepSeek: n_shared_experts ×
	// moe_intermediate_size; Qwen2-MoE: shared_expert_intermediate_size);
	// 0 for none.
	SharedExpertIntermediate int `yaml:"shared_expert_intermediate,omitempty"`
	// DenseLayers is how many leading layers of an MoE model are dense
	// (DeepSeek-V3's first_k_dense_replace), using Intermediate.
	DenseLayers int `yaml:"dense_layers,omitempty"`
	// KVLoraRank is MLA's compressed KV rank (kv_lora_rank); > 0 marks
	// multi-head latent attention, whose KV cache holds KVLoraRank +
	// QKRopeHeadDim values per token per layer.
	KVLoraRank int `yaml:"kv_lora_rank,omitempty"`
	// QLoraRank is MLA's compressed query rank (q_lora_rank); 0 projects
	// queries directly.
	QLoraRank int `yaml:"q_lora_rank,omitempty"`
	// QKNopeHeadDim and QKRopeHeadDim are MLA's per-head query/key widths
	// without and with rotary embedding; VHeadDim its value width.
	QKNopeHeadDim int `yaml:"qk_nope_head_dim,omitempty"`
	QKRopeHeadDim int `yaml:"qk_rope_head_dim,omitempty"`
	VHeadDim      int `yaml:"v_head_dim,omitempty"`
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

// MLA reports whether the model uses multi-head latent attention.
func (m *Model) MLA() bool { return m.KVLoraRank > 0 }

// qkDim and vDim are the per-head widths attention multiplies over: for
// MLA the query/key width (nope + rope) and the value width.
func (m *Model) qkDim() int {
	if m.MLA() {
		return m.QKNopeHeadDim + m.QKRopeHeadDim
	}
	return m.headDim()
}

func (m *Model) vDim() int {
	if m.MLA() {
		return m.VHeadDim
	}
	return m.headDim()
}

// AttentionParams is the attention weights of one layer: q, k, v, o (MLA:
// the q path, kv_a, kv_b and o).
func (m *Model) AttentionParams() int64 {
	h := int64(m.Hidden)
	heads := int64(m.Heads)
	if m.MLA() {
		qk := int64(m.qkDim())
		q := h * heads * qk
		if m.QLoraRank > 0 {
			q = h*int64(m.QLoraRank) + int64(m.QLoraRank)*heads*qk
		}
		kvA := h * int64(m.KVLoraRank+m.QKRopeHeadDim)
		kvB := int64(m.KVLoraRank) * heads * int64(m.QKNopeHeadDim+m.VHeadDim)
		o := heads * int64(m.VHeadDim) * h
		return q + kvA + kvB + o
	}
	hd := int64(m.headDim())
	return h*heads*hd*2 + 2*h*int64(m.KVHeads)*hd
}

// moeLayers is the number of MoE layers (0 for a dense model).
func (m *Model) moeLayers() int {
	if m.Experts == 0 {
		return 0
	}
	return m.Layers - m.DenseLayers
}

// denseMLPParams is one dense MLP layer's weights (gate, up, down).
func (m *Model) denseMLPParams() int64 { return 3 * int64(m.Hidden) * int64(m.Intermediate) }

// moeMLPParams is one MoE layer's weights with experts of them routed:
// the routed experts, the shared expert and the router.
func (m *Model) moeMLPParams(experts int) int64 {
	h := int64(m.Hidden)
	return int64(experts)*3*h*int64(m.ExpertIntermediate) + 3*h*int64(m.SharedExpertIntermediate) + h*int64(m.Experts)
}

// MLPParams is the MLP weights of one layer: all experts for MoE (of an
// MoE layer when the model has leading dense layers).
func (m *Model) MLPParams() int64 {
	if m.Experts > 0 {
		return m.moeMLPParams(m.Experts)
	}
	return m.denseMLPParams()
}

// ActiveMLPParams is the MLP weights one token touches in one layer (of an
// MoE layer for MoE models).
func (m *Model) ActiveMLPParams() int64 {
	if m.Experts > 0 {
		return m.moeMLPParams(m.ActiveExperts)
	}
	return m.denseMLPParams()
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

// layerParams sums per-layer weights over dense and MoE layers, with mlp
// giving an MoE layer's MLP weights.
func (m *Model) layerParams(moe int64) int64 {
	moeL := int64(m.moeLayers())
	denseL := int64(m.Layers) - moeL
	return int64(m.Layers)*m.AttentionParams() + denseL*m.denseMLPParams() + moeL*moe
}

// Params is the total parameter count (norms and biases ignored: < 0.1 %).
func (m *Model) Params() int64 {
	return m.layerParams(m.MLPParams()) + m.EmbeddingParams()
}

// ActiveParams is the parameters one token uses (MoE: routed experts only).
func (m *Model) ActiveParams() int64 {
	return m.layerParams(m.ActiveMLPParams()) + m.EmbeddingParams()
}

// kvValuesPerToken is the KV cache values one token stores per layer:
// K and V for each KV head, or MLA's latent plus rotary key.
func (m *Model) kvValuesPerToken() float64 {
	if m.MLA() {
		return float64(m.KVLoraRank + m.QKRopeHeadDim)
	}
	return 2 * float64(m.KVHeads) * float64(m.headDim())
}

// KVBytesPerToken is the KV cache of one token over all layers, bytes,
// at kvBytes per element (2 for bf16, 1 for fp8), before TP sharding.
func (m *Model) KVBytesPerToken(kvBytes float64) float64 {
	return float64(m.Layers) * m.kvValuesPerToken() * kvBytes
}

func (g *GPU) validate() error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case g.Name == "":
		return errors.New("gpu profile without a name")
	case !(g.BF16TFLOPS > 0) || bad(g.BF16TFLOPS):
		return fmt.Errorf("gpu %s: bf16_tflops must be > 0", g.Name)
	case bad(g.FP8TFLOPS):
		return fmt.Errorf("gpu %s: fp8_tflops must be ≥ 0", g.Name)
	case !(g.BandwidthGBs > 0) || bad(g.BandwidthGBs):
		return fmt.Errorf("gpu %s: bandwidth_gbs must be > 0", g.Name)
	case !(g.MemoryGiB > 0) || bad(g.MemoryGiB):
		return fmt.Errorf("gpu %s: memory_gib must be > 0", g.Name)
	case g.Interconnect != "nvlink" && g.Interconnect != "pcie" && g.Interconnect != "xgmi":
		return fmt.Errorf("gpu %s: interconnect %q must be nvlink, pcie or xgmi", g.Name, g.Interconnect)
	case !(g.InterconnectGBs > 0) || bad(g.InterconnectGBs):
		return fmt.Errorf("gpu %s: interconnect_gbs must be > 0", g.Name)
	}
	s := &g.Sustained
	for _, f := range []struct {
		name, src string
		v         float64
	}{{"bf16_tflops", s.BF16Source, s.BF16TFLOPS}, {"fp8_tflops", s.FP8Source, s.FP8TFLOPS}, {"bandwidth_gbs", s.BandwidthSource, s.BandwidthGBs}} {
		switch {
		case bad(f.v):
			return fmt.Errorf("gpu %s: sustained.%s = %v must be ≥ 0", g.Name, f.name, f.v)
		case f.v > 0 && f.src != SourceMeasured && f.src != SourceDatasheet:
			return fmt.Errorf("gpu %s: sustained.%s needs its source (sustained.%s_source: measured or datasheet), got %q", g.Name, f.name, strings.TrimSuffix(strings.TrimSuffix(f.name, "_tflops"), "_gbs"), f.src)
		}
	}
	if s.FP8TFLOPS > 0 && g.FP8TFLOPS == 0 {
		return fmt.Errorf("gpu %s: sustained.fp8_tflops given but the GPU has no fp8_tflops", g.Name)
	}
	if _, err := g.link(); err != nil {
		return err
	}
	if bad(g.AllReduce.LatencyUs) || bad(g.AllReduce.BusGBs) {
		return fmt.Errorf("gpu %s: allreduce latency_us and bus_gbs must be ≥ 0", g.Name)
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
	case m.HeadDim < 0, m.Intermediate < 0, m.MaxPosition < 0, m.SharedExpertIntermediate < 0, m.DenseLayers < 0:
		return fmt.Errorf("model %s: head_dim, intermediate, max_position, shared_expert_intermediate and dense_layers must be ≥ 0", m.Name)
	// Bounds far above any model, and low enough that parameter counts
	// cannot overflow int64.
	case m.Layers > 1<<10, m.Hidden > 1<<16, m.Heads > 1<<10, m.KVHeads > 1<<10, m.Vocab > 1<<22, m.Intermediate > 1<<20,
		m.ExpertIntermediate > 1<<18, m.SharedExpertIntermediate > 1<<20, m.Experts > 1<<12, m.ActiveExperts > 1<<12,
		m.HeadDim > 1<<10, m.KVLoraRank > 1<<14, m.QLoraRank > 1<<14, m.QKNopeHeadDim > 1<<10, m.QKRopeHeadDim > 1<<10, m.VHeadDim > 1<<10:
		return fmt.Errorf("model %s: a dimension is implausibly large (layers ≤ 1024, hidden ≤ 65536, heads ≤ 1024, vocab ≤ 4 M, intermediate ≤ 1 M, experts ≤ 4096)", m.Name)
	case m.KVHeads > m.Heads || m.Heads%m.KVHeads != 0:
		return fmt.Errorf("model %s: heads (%d) must be a multiple of kv_heads (%d)", m.Name, m.Heads, m.KVHeads)
	case m.DenseLayers > m.Layers:
		return fmt.Errorf("model %s: dense_layers (%d) exceeds layers (%d)", m.Name, m.DenseLayers, m.Layers)
	case (m.Experts == 0 || m.DenseLayers > 0) && m.Intermediate == 0:
		return fmt.Errorf("model %s: intermediate must be > 0 for dense layers", m.Name)
	case m.Experts < 0, m.Experts > 0 && (m.ActiveExperts <= 0 || m.ActiveExperts > m.Experts || m.ExpertIntermediate <= 0):
		return fmt.Errorf("model %s: an MoE model needs 0 < active_experts ≤ experts and expert_intermediate > 0", m.Name)
	case m.KVLoraRank < 0, m.QLoraRank < 0, m.QKNopeHeadDim < 0, m.QKRopeHeadDim < 0, m.VHeadDim < 0:
		return fmt.Errorf("model %s: MLA ranks and head dims must be ≥ 0", m.Name)
	case m.KVLoraRank > 0 && (m.QKNopeHeadDim <= 0 || m.QKRopeHeadDim <= 0 || m.VHeadDim <= 0):
		return fmt.Errorf("model %s: MLA (kv_lora_rank > 0) needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim > 0", m.Name)
	case m.KVLoraRank == 0 && m.HeadDim == 0 && m.Hidden%m.Heads != 0:
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
		g := gs[0]
		// A kernel table named by a relative path is beside the profile
		// (unless it is a built-in table's name).
		if k := g.Kernels; k != "" && !filepath.IsAbs(k) {
			if _, err := builtin.ReadFile("profiles/kernels/" + k); err != nil {
				g.Kernels = filepath.Join(filepath.Dir(name), k)
			}
		}
		if _, err := g.kernelTables(); err != nil {
			return GPU{}, fmt.Errorf("%s: %w", name, err)
		}
		return g, nil
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
	return GPU{}, &UnknownError{Kind: "gpu", Name: name, Known: names, Else: "or a .yaml profile"}
}

// UnknownError is a GPU or model name no profile has: the names known,
// for the caller to suggest the nearest.
type UnknownError struct {
	// Kind is "gpu" or "model"; Name the name asked for.
	Kind, Name string
	// Known are the profiles' names; Else what else the name may be.
	Known []string
	Else  string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown %s %q (known: %s, %s)", e.Kind, e.Name, strings.Join(e.Known, ", "), e.Else)
}

// LookupModel finds a model by name, Hugging Face id or alias
// (case-insensitive), or loads a user profile from a .yaml file or a
// Hugging Face config.json (any path ending in .json; see ParseHFConfig).
func LookupModel(name string) (Model, error) {
	if isHFConfig(name) {
		return LoadHFConfig(name)
	}
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
	return Model{}, &UnknownError{Kind: "model", Name: name, Known: names, Else: "their Hugging Face ids, a .yaml profile or a config.json"}
}
