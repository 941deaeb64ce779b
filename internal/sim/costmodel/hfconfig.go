package costmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HFConfigError is a problem with one field of a Hugging Face config.json.
type HFConfigError struct {
	// Field is the config.json key at fault (e.g. "num_hidden_layers").
	Field string
	// Err says what is wrong with it.
	Err error
}

// Error names the field, then the problem.
func (e *HFConfigError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *HFConfigError) Unwrap() error { return e.Err }

// hfFamilies are the model_type values ParseHFConfig understands, by how
// their MLP is described.
var hfFamilies = map[string]string{
	"llama":       "dense",
	"mistral":     "dense",
	"qwen2":       "dense",
	"qwen3":       "dense",
	"mixtral":     "mixtral",
	"qwen2_moe":   "qwen-moe",
	"qwen3_moe":   "qwen-moe",
	"deepseek_v2": "deepseek",
	"deepseek_v3": "deepseek",
}

// hfConfig is a config.json's top level, keys kept raw so that each field's
// type can be checked with its name in the error.
type hfConfig map[string]json.RawMessage

// present reports whether key is set to something other than null.
func (c hfConfig) present(key string) bool {
	v, ok := c[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// int reads key as a non-negative integer; missing or null gives def, or
// an error when required.
func (c hfConfig) int(key string, required bool, def int) (int, error) {
	if !c.present(key) {
		if required {
			return 0, &HFConfigError{Field: key, Err: errors.New("missing")}
		}
		return def, nil
	}
	var n json.Number
	raw := bytes.TrimSpace(c[key])
	// json.Number also accepts a quoted number; a config's integers are
	// bare.
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, &HFConfigError{Field: key, Err: fmt.Errorf("want an integer, got %s", clip(c[key]))}
	}
	v, err := n.Int64()
	if err != nil || v < 0 || v > 1<<40 {
		return 0, &HFConfigError{Field: key, Err: fmt.Errorf("want a non-negative integer, got %s", n)}
	}
	return int(v), nil
}

// positive reads a required integer > 0.
func (c hfConfig) positive(key string) (int, error) {
	v, err := c.int(key, true, 0)
	if err == nil && v == 0 {
		err = &HFConfigError{Field: key, Err: errors.New("must be > 0")}
	}
	return v, err
}

func (c hfConfig) bool(key string) (bool, error) {
	if !c.present(key) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(c[key], &b); err != nil {
		return false, &HFConfigError{Field: key, Err: fmt.Errorf("want true or false, got %s", clip(c[key]))}
	}
	return b, nil
}

func (c hfConfig) string(key string) (string, error) {
	if !c.present(key) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(c[key], &s); err != nil {
		return "", &HFConfigError{Field: key, Err: fmt.Errorf("want a string, got %s", clip(c[key]))}
	}
	return s, nil
}

// clip shortens a raw JSON value for an error message.
func clip(b json.RawMessage) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// ParseHFConfig reads a Hugging Face config.json (Llama, Mistral, Qwen2/3,
// Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3 with MLA) into a Model named name.
// A multimodal config's "text_config" is used when the top level has no
// num_hidden_layers. Any problem is one *HFConfigError naming the field.
func ParseHFConfig(r io.Reader, name string) (Model, error) {
	var c hfConfig
	dec := json.NewDecoder(r)
	if err := dec.Decode(&c); err != nil {
		return Model{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if c == nil {
		return Model{}, errors.New("not a JSON object: null")
	}
	if !c.present("num_hidden_layers") && c.present("text_config") {
		var t hfConfig
		if err := json.Unmarshal(c["text_config"], &t); err != nil || t == nil {
			return Model{}, &HFConfigError{Field: "text_config", Err: errors.New("want an object")}
		}
		c = t
	}
	mt, err := c.string("model_type")
	if err != nil {
		return Model{}, err
	}
	family, ok := hfFamilies[mt]
	if !ok {
		known := make([]string, 0, len(hfFamilies))
		for k := range hfFamilies {
			known = append(known, k)
		}
		slices.Sort(known)
		if mt == "" {
			return Model{}, &HFConfigError{Field: "model_type", Err: fmt.Errorf("missing (want one of %s)", strings.Join(known, ", "))}
		}
		return Model{}, &HFConfigError{Field: "model_type", Err: fmt.Errorf("%q is not supported (want one of %s)", mt, strings.Join(known, ", "))}
	}
	m := Model{Name: name, Thinking: mt == "qwen3" || mt == "qwen3_moe"}
	if m.HFID, err = c.string("_name_or_path"); err != nil {
		return Model{}, err
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"num_hidden_layers", &m.Layers}, {"hidden_size", &m.Hidden}, {"num_attention_heads", &m.Heads}, {"vocab_size", &m.Vocab}} {
		if *f.dst, err = c.positive(f.key); err != nil {
			return Model{}, err
		}
	}
	if m.KVHeads, err = c.int("num_key_value_heads", false, m.Heads); err != nil {
		return Model{}, err
	}
	if m.HeadDim, err = c.int("head_dim", false, 0); err != nil {
		return Model{}, err
	}
	if m.MaxPosition, err = c.int("max_position_embeddings", false, 0); err != nil {
		return Model{}, err
	}
	if m.TiedEmbeddings, err = c.bool("tie_word_embeddings"); err != nil {
		return Model{}, err
	}
	switch family {
	case "dense":
		m.Intermediate, err = c.positive("intermediate_size")
	case "mixtral":
		// Every layer is MoE; intermediate_size is each expert's.
		if m.Experts, err = c.positive("num_local_experts"); err == nil {
			if m.ActiveExperts, err = c.positive("num_experts_per_tok"); err == nil {
				m.ExpertIntermediate, err = c.positive("intermediate_size")
			}
		}
	case "qwen-moe":
		err = m.qwenMoE(c)
	case "deepseek":
		err = m.deepseek(c)
	}
	if err != nil {
		return Model{}, err
	}
	// The relations validate checks, named by their config.json keys.
	switch {
	case m.KVHeads == 0 || m.KVHeads > m.Heads || m.Heads%m.KVHeads != 0:
		return Model{}, &HFConfigError{Field: "num_key_value_heads", Err: fmt.Errorf("%d must divide num_attention_heads %d", m.KVHeads, m.Heads)}
	case !m.MLA() && m.HeadDim == 0 && m.Hidden%m.Heads != 0:
		return Model{}, &HFConfigError{Field: "head_dim", Err: fmt.Errorf("missing, and hidden_size %d is not a multiple of num_attention_heads %d", m.Hidden, m.Heads)}
	}
	if err := m.validate(); err != nil {
		return Model{}, err
	}
	return m, nil
}

// qwenMoE reads Qwen2-MoE / Qwen3-MoE's MLP fields.
func (m *Model) qwenMoE(c hfConfig) error {
	var err error
	if m.Experts, err = c.positive("num_experts"); err != nil {
		return err
	}
	if m.ActiveExperts, err = c.positive("num_experts_per_tok"); err != nil {
		return err
	}
	if m.ExpertIntermediate, err = c.positive("moe_intermediate_size"); err != nil {
		return err
	}
	if m.SharedExpertIntermediate, err = c.int("shared_expert_intermediate_size", false, 0); err != nil {
		return err
	}
	if m.Intermediate, err = c.int("intermediate_size", false, 0); err != nil {
		return err
	}
	step, err := c.int("decoder_sparse_step", false, 1)
	if err != nil {
		return err
	}
	dense := 0
	if step > 1 {
		// Layer i is MoE when (i+1) % step == 0.
		dense = m.Layers - m.Layers/step
	}
	if c.present("mlp_only_layers") {
		var only []int
		if err := json.Unmarshal(c["mlp_only_layers"], &only); err != nil {
			return &HFConfigError{Field: "mlp_only_layers", Err: fmt.Errorf("want a list of layer indices, got %s", clip(c["mlp_only_layers"]))}
		}
		if step <= 1 {
			dense = len(only)
		}
	}
	if dense > m.Layers {
		return &HFConfigError{Field: "mlp_only_layers", Err: fmt.Errorf("lists %d layers of %d", dense, m.Layers)}
	}
	m.DenseLayers = dense
	if dense > 0 && m.Intermediate == 0 {
		return &HFConfigError{Field: "intermediate_size", Err: errors.New("missing, and the model has dense layers")}
	}
	return nil
}

// deepseek reads DeepSeek-V2/V3's MoE and MLA fields.
func (m *Model) deepseek(c hfConfig) error {
	var err error
	if m.Experts, err = c.positive("n_routed_experts"); err != nil {
		return err
	}
	if m.ActiveExperts, err = c.positive("num_experts_per_tok"); err != nil {
		return err
	}
	if m.ExpertIntermediate, err = c.positive("moe_intermediate_size"); err != nil {
		return err
	}
	shared, err := c.int("n_shared_experts", false, 0)
	if err != nil {
		return err
	}
	m.SharedExpertIntermediate = shared * m.ExpertIntermediate
	if m.DenseLayers, err = c.int("first_k_dense_replace", false, 0); err != nil {
		return err
	}
	if m.DenseLayers > m.Layers {
		return &HFConfigError{Field: "first_k_dense_replace", Err: fmt.Errorf("%d exceeds num_hidden_layers %d", m.DenseLayers, m.Layers)}
	}
	if m.DenseLayers > 0 {
		if m.Intermediate, err = c.positive("intermediate_size"); err != nil {
			return err
		}
	}
	if m.KVLoraRank, err = c.positive("kv_lora_rank"); err != nil {
		return err
	}
	if m.QLoraRank, err = c.int("q_lora_rank", false, 0); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"qk_nope_head_dim", &m.QKNopeHeadDim}, {"qk_rope_head_dim", &m.QKRopeHeadDim}, {"v_head_dim", &m.VHeadDim}} {
		if *f.dst, err = c.positive(f.key); err != nil {
			return err
		}
	}
	// The latent KV is shared by all heads; num_key_value_heads does not
	// size the cache.
	m.KVHeads = m.Heads
	m.HeadDim = m.QKNopeHeadDim + m.QKRopeHeadDim
	return nil
}

// isHFConfig reports whether name looks like a path to a config.json.
func isHFConfig(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".json") }

// LoadHFConfig reads a Hugging Face config.json file into a Model named
// after its directory (…/Llama-3.1-8B/config.json → llama-3.1-8b) or, for a
// file not named config.json, after the file.
func LoadHFConfig(path string) (Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return Model{}, fmt.Errorf("model config: %w", err)
	}
	defer f.Close()
	base := filepath.Base(path)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if strings.EqualFold(base, "config.json") {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			name = dir
		}
	}
	m, err := ParseHFConfig(f, strings.ToLower(name))
	if err != nil {
		return Model{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
