package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/watch"
)

// WatchOptions is everything "goodput watch" needs.
type WatchOptions struct {
	Config     string
	Listen     string
	RecordsDir string
	Duration   time.Duration
	Once       bool
	listenSet  bool
	// served, when set (tests), is called with the /metrics URL after
	// --once has probed, while the endpoint still serves.
	served func(metricsURL string)
}

func newWatchCmd(env Env) *cobra.Command {
	var o WatchOptions
	cmd := &cobra.Command{
		Use:     "watch --config FILE",
		Short:   "Synthetic SLA monitoring of LLM API vendors: probes on a schedule, Prometheus metrics, burn rates",
		Long:    helpText("watch"),
		Example: helpText("watch.examples"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.listenSet = cmd.Flags().Changed("listen")
			return runWatch(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Config, "config", "", "the watch config (YAML): targets, intervals, SLOs, probes (required)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:9464", `address serving Prometheus /metrics ("" none; --once serves it only when given)`)
	fs.StringVar(&o.RecordsDir, "records-dir", "", "append each target's probes as records to DIR/NAME.records.jsonl (default: none)")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.BoolVar(&o.Once, "once", false, "probe every target once, print one line per target and exit: 3 when a probe was not ok")
	return cmd
}

// watchPath is p relative to the command's directory.
func watchPath(env Env, p string) string {
	if p != "" && env.Dir != "" && !filepath.IsAbs(p) {
		return filepath.Join(env.Dir, p)
	}
	return p
}

func runWatch(ctx context.Context, env Env, o *WatchOptions) error {
	switch {
	case o.Config == "":
		return usagef("--config is required: the YAML file listing the targets to watch (see docs/watch.md)")
	case o.Duration < 0:
		return usagef("--duration %v: want ≥ 0", o.Duration)
	case o.Once && o.Duration > 0:
		return usagef("--once probes every target once: give --duration only to watch continuously")
	}
	cfg, err := watch.LoadConfig(watchPath(env, o.Config), o.Config)
	if err != nil {
		return usageError{err}
	}
	targets, stopSim, err := watchTargets(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer stopSim()

	reg := prometheus.NewRegistry()
	note := func(s string) { fmt.Fprintln(env.Stderr, "goodput: watch: "+s) }
	wo := watch.Options{
		Open: func(t watch.Target, now func() int64) (run.Backend, error) {
			rt := targets[t.Name]
			// One probe in flight per target: a small pool is enough.
			return rt.Open(rt.BaseURL, 2, now)
		},
		Registerer: reg, RecordsDir: watchPath(env, o.RecordsDir), Version: Version, Note: note,
	}
	if env.secrets != nil {
		wo.Filter = env.secrets.Writer
	}
	w, err := watch.New(cfg, wo)
	if err != nil {
		return err
	}
	defer w.Close()

	metricsURL, stopMetrics, err := serveWatchMetrics(env, o, reg)
	if err != nil {
		return err
	}
	defer stopMetrics()

	if o.Once {
		results, err := w.Once(ctx)
		_ = watch.WriteResults(env.Stdout, results)
		if o.served != nil && metricsURL != "" {
			o.served(metricsURL)
		}
		if ctx.Err() != nil {
			return interruptedError{"the probes were cut short"}
		}
		if err != nil {
			return err
		}
		if failed := watch.NotOK(results); len(failed) > 0 {
			return &GateError{Failed: failed}
		}
		return nil
	}

	fmt.Fprintf(env.Stderr, "goodput: watching %s (Ctrl-C to stop)\n", watch.Intervals(cfg))
	rctx := ctx
	if o.Duration > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	err = w.Run(rctx)
	_ = watch.WriteSummary(env.Stdout, w.Summary())
	return err
}

// watchTargets checks each target's backend and key against what the
// command line accepts, then builds its run.Target through targetFlags,
// so backend names and API-key handling are bench's own. Targets at
// base_url embedded share one embedded simulator, started here; stop
// stops it.
func watchTargets(ctx context.Context, env Env, cfg *watch.Config) (targets map[string]run.Target, stop func(), err error) {
	stop = func() {}
	flags := make([]targetFlags, len(cfg.Targets))
	embedded := false
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		tf := targetFlags{TargetSpec: run.TargetSpec{
			Backend: t.Backend, Endpoint: t.Endpoint, Model: t.Model, APIKeyEnv: t.APIKeyEnv,
			MaxTokensField: "max_tokens", ContinuousUsage: "auto", Timeout: t.Timeout,
			MaxResponseTokens: openai.DefaultMaxResponseTokens,
		}}
		if _, _, err := tf.backend(); err != nil {
			return nil, stop, usageError{t.FieldError("backend", fmt.Errorf("%q: want %s", t.Backend, backendNames))}
		}
		if t.APIKeyEnv != "" && (env.Getenv == nil || env.Getenv(t.APIKeyEnv) == "") {
			return nil, stop, usageError{t.FieldError("api_key_env", fmt.Errorf("the environment variable %s is not set: export it with the API key", t.APIKeyEnv))}
		}
		keys := make([]string, 0, len(t.Headers))
		for k := range t.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			tf.Headers = append(tf.Headers, k+"="+t.Headers[k])
		}
		if body := t.Probe.Body(); body != nil {
			b, err := json.Marshal(body)
			if err != nil {
				return nil, stop, usageError{t.FieldError("probe", err)}
			}
			tf.ExtraBody = string(b)
		}
		embedded = embedded || t.BaseURL == watch.Embedded
		flags[i] = tf
	}
	simURL := ""
	if embedded {
		log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		url, stopServer, err := simserve.Start(ctx, "127.0.0.1:0", sim.DefaultConfig(), simserve.Options{Logger: log})
		if err != nil {
			return nil, stop, fmt.Errorf("the embedded simulator: %w", err)
		}
		simURL, stop = url, func() { _ = stopServer() }
	}
	targets = map[string]run.Target{}
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		base := t.BaseURL
		if base == watch.Embedded {
			base = simURL
		}
		rt, err := flags[i].runTarget(env, base, false)
		if err != nil {
			stop()
			return nil, func() {}, usageError{t.FieldError(watchField(err), errors.New(err.Error()))}
		}
		if t.Endpoint == "" {
			t.Endpoint = rt.Endpoint // the records say which path was probed
		}
		targets[t.Name] = rt
	}
	return targets, stop, nil
}

// watchField is the config field behind a flag runTarget names.
func watchField(err error) string {
	var fu *flagUsage
	if errors.As(err, &fu) {
		switch fu.flag {
		case "--header":
			return "headers"
		case "--extra-body":
			return "probe"
		}
	}
	return "backend"
}

// serveWatchMetrics serves reg on --listen (for --once only when the flag
// was given) and returns its URL ("" when not served) and the stop.
func serveWatchMetrics(env Env, o *WatchOptions, reg *prometheus.Registry) (string, func(), error) {
	if o.Listen == "" || strings.EqualFold(o.Listen, "none") || (o.Once && !o.listenSet) {
		return "", func() {}, nil
	}
	url, stop, err := watch.Serve(o.Listen, reg, env.secrets)
	if err != nil {
		return "", nil, fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	fmt.Fprintf(env.Stderr, "goodput: metrics at %s\n", url)
	return url, stop, nil
}
