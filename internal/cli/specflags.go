package cli

import (
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
)

// registerSpecFlags binds the simulated engine's speculative-decoding
// flags to c's fields, named as vLLM's --speculative-config keys are
// spelled on its older command line (--num-speculative-tokens).
func registerSpecFlags(fs *pflag.FlagSet, c *sim.Config) {
	fs.IntVar(&c.SpecTokens, "num-speculative-tokens", c.SpecTokens, "draft tokens each decode proposes per step for speculative decoding (0 = off, at most 16)")
	fs.Float64Var(&c.SpecAcceptance, "spec-acceptance", c.SpecAcceptance, "probability in (0,1] that the target accepts each draft token (0 = 0.7)")
	fs.StringVar(&c.SpecDraft, "spec-draft", c.SpecDraft, "draft proposer: ngram, eagle (priced at --spec-draft-cost-frac of the target's step per token), or a draft model name or profile")
	fs.Float64Var(&c.SpecDraftCostFrac, "spec-draft-cost-frac", c.SpecDraftCostFrac, "cost of one ngram or eagle draft token as a fraction of the target's decode step (0 = 0.05)")
}
