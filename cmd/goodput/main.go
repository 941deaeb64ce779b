// Command goodput measures LLM serving performance the way users feel it:
// TTFT, time to publish, TPOT/ITL, end-to-end latency, throughput and
// goodput, against any OpenAI-compatible streaming endpoint or an embedded
// simulated engine. Run "goodput help" for the subcommands.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/goodput/goodput/internal/cli"
)

func main() {
	bi, ok := debug.ReadBuildInfo()
	cli.Version = buildVersion(cli.Version, bi, ok)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C the run winds down and still reports; a
		// second one kills the process the default way.
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
