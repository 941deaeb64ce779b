// Command goodput measures LLM serving performance the way users feel it:
// TTFT, time to publish, TPOT/ITL, end-to-end latency, throughput and
// goodput, against any OpenAI-compatible streaming endpoint or an embedded
// simulated engine. Run "goodput help" for the subcommands.
package main

import (
	"os"
	"runtime/debug"

	"github.com/goodput/goodput/internal/cli"
)

func main() {
	bi, ok := debug.ReadBuildInfo()
	cli.Version = buildVersion(cli.Version, bi, ok)
	ctx, stop := cli.InterruptContext(os.Stderr)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
