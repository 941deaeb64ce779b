package cli

// The long-running commands: serve (a simulated engine), proxy (live
// traffic) and watch (synthetic probes of vendors).

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/proxy"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/watch"
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
				flagfield.Given(cmd.Flags(), &o.cluster.Spec), env.Stderr, run.DescribeEngine))
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

func newProxyCmd(env Env) *cobra.Command {
	var s proxy.Spec
	cmd := &cobra.Command{Use: "proxy", Short: "Watch live traffic: a transparent streaming proxy with Prometheus metrics and SLO tracking",
		Long: helpText("proxy"), Example: helpText("proxy.examples"), RunE: func(cmd *cobra.Command, args []string) error {
			return settingError(cmd.Flags(), &s, s.Run(cmd.Context(), args, Version, env.Stderr))
		}}
	fs := cmd.Flags()
	fs.StringVar(&s.Listen, "listen", "127.0.0.1:9000", "address the proxy listens on")
	fs.StringVar(&s.Upstream, "upstream", "", "the server's base URL, e.g. http://127.0.0.1:8000 (required)")
	fs.StringVar(&s.MetricsListen, "metrics-listen", "", "address serving Prometheus /metrics, e.g. 127.0.0.1:9464 (default: none)")
	fs.StringArrayVar(&s.Goodput, "goodput", nil, "SLO for attainment and goodput, e.g. --goodput ttft:2000 tpot:50 (ms; ttft, tpot, e2el, ttp)")
	fs.BoolVar(&s.InjectUsage, "inject-usage", false, "ask the upstream for usage in streamed requests (exact token counts) and hide the extra usage chunk from clients that did not ask")
	fs.StringVar(&s.Records, "records", "", "write per-request records (JSONL) of live traffic to this file, rotated by size")
	fs.Int64Var(&s.RecordsMaxBytes, "records-max-bytes", proxy.DefaultRecordsMaxBytes, "rotate the records file at this size in bytes")
	fs.IntVar(&s.RecordsKeep, "records-keep", 0, "rotated records files to keep (0: all)")
	fs.StringSliceVar(&s.Models, "models", nil, "model names that get their own metric label (default: the first --max-models seen); others are \"other\"")
	fs.IntVar(&s.MaxModels, "max-models", promexport.DefaultMaxModels, "distinct model labels when --models is not given")
	fs.StringVar(&s.Buckets, "buckets", "1024,8192", "input-length bucket edges in tokens for the input_bucket label (none: one bucket)")
	fs.DurationVar(&s.UpstreamHeaderTimeout, "upstream-header-timeout", 0, "answer 504 when the upstream sends no response headers within this time (0: wait as long as the upstream takes)")
	fs.DurationVar(&s.ShutdownGrace, "shutdown-grace", 10*time.Second, "on Ctrl-C, time given to open streams to finish")
	fs.StringVar(&s.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}

// WatchOptions is "goodput watch"; served (tests) is watch.Host's Served.
type WatchOptions struct {
	watch.Spec
	served func(metricsURL string)
}

func newWatchCmd(env Env) *cobra.Command { return watchCmd(env, &WatchOptions{}) }

func watchCmd(env Env, o *WatchOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "watch --config FILE",
		Short: "Synthetic SLA monitoring of LLM API vendors: probes on a schedule, Prometheus metrics, burn rates",
		Long:  helpText("watch"), Example: helpText("watch.examples"), Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			failed, err := o.Run(ctx, watch.Host{Dir: env.Dir, Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv,
				Secrets: env.secrets, Version: Version, ReadyPoll: readyPoll, Served: o.served}, cmd.Flags().Changed("listen"))
			switch ce := (*setting.FileError)(nil); {
			case errors.As(err, &ce):
				return usageError{err}
			case o.Once && ctx.Err() != nil:
				return interruptedError{"the probes were cut short"}
			case err == nil && len(failed) > 0:
				return &runspec.GateError{Failed: failed}
			}
			return settingError(cmd.Flags(), o, err)
		}}
	fs := cmd.Flags()
	fs.StringVar(&o.Config, "config", "", "the watch config (YAML): targets, intervals, SLOs, probes (required)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:9464", `address serving Prometheus /metrics ("" none; --once serves it only when given)`)
	fs.StringVar(&o.RecordsDir, "records-dir", "", "append each target's probes as records to DIR/NAME.records.jsonl (default: none)")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.BoolVar(&o.Once, "once", false, "probe every target once, print one line per target and exit: 3 when a probe was not ok")
	return cmd
}
