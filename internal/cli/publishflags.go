package cli

import (
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/publish"
	"github.com/goodput/goodput/internal/workload"
)

// publishFlags are the simulated publish path's flags (--publish,
// --moderation-delay): what stands between the engine's tokens and the
// client's, applied after the engine.
type publishFlags struct{ Policy publish.Policy }

func (p *publishFlags) register(fs *pflag.FlagSet) {
	fs.Var(value{ptr: &p.Policy, typ: "string", set: func(s string) error {
		q, err := publish.Parse(s, "")
		p.Policy.Mode, p.Policy.N = q.Mode, q.N
		return err
	}}, "publish", "publish policy after the engine, for visible output: none, sentence (release at sentence ends), whole (at the end), chars:N or tokens:N (in blocks); the server's first token is unchanged, the client's TTFT/TTP move (default none)")
	fs.Var(value{ptr: &p.Policy.Moderation, typ: "string", set: func(s string) error {
		d, err := workload.ParseDist(s)
		p.Policy.Moderation = d
		return err
	}}, "moderation-delay", "moderation delay of each release after the engine, ms, a distribution (fixed:80, uniform:50,150, ...); releases are checked one at a time in stream order")
}
