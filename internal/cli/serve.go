package cli

import (
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
			return settingError(cmd.Flags(), &o, o.Serve(cmd.Context(), o.cluster.Spec, o.gateway.GatewaySpec,
				givenIn(cmd.Flags(), &o.cluster.Spec), env.Stderr, run.DescribeEngine))
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
