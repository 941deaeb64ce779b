package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
)

// ServeOptions configures "goodput serve".
type ServeOptions struct {
	simserve.Spec
	// cluster and gateway are the fleet behind one port, and the gateway
	// in front of it (or of the engine alone).
	cluster clusterFlags
	gateway gatewayFlags
}

func newServeCmd(env Env) *cobra.Command {
	o := ServeOptions{Spec: simserve.Spec{Engine: sim.DefaultConfig()}}
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Serve a simulated LLM engine over an OpenAI-compatible HTTP API, in real time",
		Long:    helpText("serve"),
		Example: helpText("serve.examples"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return settingError(cmd.Flags(), &o, runServe(cmd.Context(), env, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Host, "host", "127.0.0.1", "address to listen on (0.0.0.0 for all interfaces)")
	fs.IntVar(&o.Port, "port", 8000, "port to listen on (0 picks a free one)")
	fs.StringVar(&o.Engine.Model, "model", o.Engine.Model, "simulated model: "+modelList)
	fs.StringVar(&o.ServedModelName, "served-model-name", "", "model id the server answers to (default: the model's HF id)")
	fs.Float64Var(&o.Slowdown, "slowdown", 0, "stretch every engine iteration by this factor (3: three times as slow), from --slowdown-after on; 0: none")
	fs.DurationVar(&o.SlowdownAfter, "slowdown-after", 0, "start --slowdown this long after the server starts (0: at once)")
	registerEngineFlags(fs, &o.Engine)
	o.cluster.register(fs)
	o.gateway.register(fs)
	return cmd
}

// runServe serves until ctx is done (Ctrl-C).
func runServe(ctx context.Context, env Env, o *ServeOptions) error {
	switch {
	case o.cluster.Ratios != "":
		return usagef("--pd-ratios: the search over prefill/decode splits runs in virtual time (goodput sim); goodput serve serves one fleet")
	case o.gateway.Mix != "":
		return usagef("--priority-mix: goodput serve takes each request's class from its body's priority field; the mix is a load generator's (goodput sim)")
	}
	fleet, err := o.cluster.config(o.Engine)
	if err == nil {
		fleet, err = o.gateway.Apply(fleet, o.Engine)
	}
	if err != nil {
		return err
	}
	srv, err := o.Server(fleet, slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		return err
	}
	url, stop, err := srv.Start(ctx, o.Addr())
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "goodput: serving %s as %q at %s (Ctrl-C to stop)\n", srv.Fleet(run.DescribeEngine(srv.Describe())), srv.Model(), url)
	if o.Slowdown != 0 && o.Slowdown != 1 {
		fmt.Fprintf(env.Stderr, "goodput: every engine iteration runs %v× as long from %v after the start (POST %s/goodput/slowdown?factor=1 restores full speed)\n",
			o.Slowdown, o.SlowdownAfter, url)
	}
	<-ctx.Done()
	return stop()
}
