package simserve

import "github.com/goodput/goodput/internal/sim"

// engineModelName is the id the server answers to by default: the model's
// Hugging Face id (what vLLM serves a model as), else its short name.
func engineModelName(cfg sim.Config, d map[string]any) string {
	if s, _ := d["hf_id"].(string); s != "" {
		return s
	}
	if s, _ := d["model"].(string); s != "" {
		return s
	}
	return cfg.Model
}

// engineAliases are the other names a request may use for the model.
func engineAliases(cfg sim.Config, d map[string]any) []string {
	var out []string
	for _, k := range []string{"model", "hf_id"} {
		if s, _ := d[k].(string); s != "" {
			out = append(out, s)
		}
	}
	if cfg.Model != "" {
		out = append(out, cfg.Model)
	}
	return out
}

// engineMaxModelLen is the resolved max_model_len (tokens), 0 if unknown.
func engineMaxModelLen(cfg sim.Config, d map[string]any) int {
	if n, ok := d["max_model_len"].(int); ok && n > 0 {
		return n
	}
	return cfg.MaxModelLen
}

// engineBlockSize is the engine's KV block size in tokens, which the server
// hashes prompts by so that prompt blocks map one-to-one onto KV blocks.
func engineBlockSize(cfg sim.Config, d map[string]any) int {
	if n, ok := d["block_size"].(int); ok && n > 0 {
		return n
	}
	if cfg.BlockSize > 0 {
		return cfg.BlockSize
	}
	return 16
}
