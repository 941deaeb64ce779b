package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/watch"
)

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
			var (
				ce *watch.ConfigError
				se *setting.Error
			)
			switch {
			case errors.As(err, &ce):
				return usageError{err}
			case errors.As(err, &se) && se.Field == "Listen": // the machine's fault, not the user's
				return errors.New(settingError(cmd.Flags(), o, err).Error())
			case o.Once && ctx.Err() != nil:
				return interruptedError{"the probes were cut short"}
			case err == nil && len(failed) > 0:
				return &GateError{Failed: failed}
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
