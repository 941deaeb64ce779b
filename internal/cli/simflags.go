package cli

import (
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
)

// simFlags configure the simulated engine (the embedded bench target, serve
// and sim). In bench the engine's model is --sim-model, because --model is
// the id sent in requests.
type simFlags struct {
	cfg sim.Config
}

func (s *simFlags) register(fs *pflag.FlagSet) {
	s.cfg = sim.DefaultConfig()
	fs.StringVar(&s.cfg.Model, "sim-model", s.cfg.Model, "embedded simulator's model (no --base-url): llama-3.1-8b, llama-3.1-70b, mistral-7b, qwen2.5-7b, qwen3-32b, qwen3-30b-a3b, a HF id, a .yaml profile or a Hugging Face config.json path")
	registerEngineFlags(fs, &s.cfg)
}
