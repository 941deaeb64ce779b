package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/watch"
)

// WatchOptions is everything "goodput watch" needs: listenSet says
// --listen was given; served (tests) is watch.Host's Served.
type WatchOptions struct {
	watch.Spec
	listenSet bool
	served    func(metricsURL string)
	fs        *pflag.FlagSet
}

func newWatchCmd(env Env) *cobra.Command {
	var o WatchOptions
	cmd := &cobra.Command{Use: "watch --config FILE",
		Short: "Synthetic SLA monitoring of LLM API vendors: probes on a schedule, Prometheus metrics, burn rates",
		Long:  helpText("watch"), Example: helpText("watch.examples"), Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.listenSet, o.fs = cmd.Flags().Changed("listen"), cmd.Flags()
			return runWatch(cmd.Context(), env, &o)
		}}
	fs := cmd.Flags()
	fs.StringVar(&o.Config, "config", "", "the watch config (YAML): targets, intervals, SLOs, probes (required)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:9464", `address serving Prometheus /metrics ("" none; --once serves it only when given)`)
	fs.StringVar(&o.RecordsDir, "records-dir", "", "append each target's probes as records to DIR/NAME.records.jsonl (default: none)")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.BoolVar(&o.Once, "once", false, "probe every target once, print one line per target and exit: 3 when a probe was not ok")
	return cmd
}

func runWatch(ctx context.Context, env Env, o *WatchOptions) error {
	h := watch.Host{Dir: env.Dir, Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv, Secrets: env.secrets,
		Version: Version, Target: watchTarget(env), Served: o.served}
	failed, err := o.Run(ctx, h, o.listenSet)
	var (
		ce *watch.ConfigError
		se *setting.Error
	)
	switch {
	case errors.As(err, &ce):
		return usageError{err}
	case errors.As(err, &se) && se.Field == "Listen":
		// The address could not be served: the machine's fault, no usage error.
		return errors.New(settingError(o.fs, &o.Spec, err).Error())
	case o.Once && ctx.Err() != nil:
		return interruptedError{"the probes were cut short"}
	case err != nil:
		return settingError(o.fs, &o.Spec, err)
	case len(failed) > 0:
		return &GateError{Failed: failed}
	}
	return nil
}

// watchTarget builds a watch target's run.Target as bench builds its own
// (targetFlags), so backend names and API-key handling are bench's.
func watchTarget(env Env) func(t *watch.Target, base string, headers []string, body string) (run.Target, error) {
	return func(t *watch.Target, base string, headers []string, body string) (run.Target, error) {
		tf := targetFlags{TargetSpec: run.TargetSpec{
			Backend: t.Backend, Endpoint: t.Endpoint, Model: t.Model, APIKeyEnv: t.APIKeyEnv,
			MaxTokensField: "max_tokens", ContinuousUsage: "auto", Timeout: t.Timeout,
			MaxResponseTokens: openai.DefaultMaxResponseTokens, Headers: headers, ExtraBody: body,
		}}
		if _, _, err := tf.Protocol(); err != nil {
			return run.Target{}, t.FieldError("backend", fmt.Errorf("%q: want %s", t.Backend, backendNames))
		}
		// The watch config builds valid headers and probe bodies, so what
		// is left to refuse is the backend's.
		rt, err := tf.runTarget(env, base, false)
		if err != nil {
			return rt, t.FieldError("backend", errors.New(err.Error()))
		}
		return rt, nil
	}
}
