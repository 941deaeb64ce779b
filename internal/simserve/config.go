package simserve

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// engineModelName is the id the server answers to by default: the model's
// Hugging Face id (what vLLM serves a model as), else its short name.
func engineModelName(cfg sim.Config, d runlog.Engine) string {
	if d.HFID != "" {
		return d.HFID
	}
	if d.Model != "" {
		return d.Model
	}
	return cfg.Model
}

// engineAliases are the other names a request may use for the model.
func engineAliases(cfg sim.Config, d runlog.Engine) []string {
	var out []string
	for _, s := range []string{d.Model, d.HFID} {
		if s != "" {
			out = append(out, s)
		}
	}
	if cfg.Model != "" {
		out = append(out, cfg.Model)
	}
	return out
}

// engineMaxModelLen is the resolved max_model_len (tokens), 0 if unknown.
func engineMaxModelLen(cfg sim.Config, d runlog.Engine) int {
	if d.MaxModelLen > 0 {
		return d.MaxModelLen
	}
	return cfg.MaxModelLen
}

// engineBlockSize is the engine's KV block size in tokens, which the server
// hashes prompts by so that prompt blocks map one-to-one onto KV blocks.
func engineBlockSize(cfg sim.Config, d runlog.Engine) int {
	if d.BlockSize > 0 {
		return d.BlockSize
	}
	if cfg.BlockSize > 0 {
		return cfg.BlockSize
	}
	return 16
}
