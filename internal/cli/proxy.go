package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/proxy"
	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/stats"
)

// ProxyOptions is everything "goodput proxy" needs.
type ProxyOptions struct {
	Listen                string
	Upstream              string
	MetricsListen         string
	Goodput               []string
	InjectUsage           bool
	Records               string
	RecordsMaxBytes       int64
	RecordsKeep           int
	Models                []string
	MaxModels             int
	Buckets               string
	UpstreamHeaderTimeout time.Duration
	ShutdownGrace         time.Duration
	LogLevel              string
	args                  []string
}

func newProxyCmd(env Env) *cobra.Command {
	var o ProxyOptions
	cmd := &cobra.Command{
		Use:     "proxy",
		Short:   "Watch live traffic: a transparent streaming proxy with Prometheus metrics and SLO tracking",
		Long:    helpText("proxy"),
		Example: helpText("proxy.examples"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runProxy(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:9000", "address the proxy listens on")
	fs.StringVar(&o.Upstream, "upstream", "", "the server's base URL, e.g. http://127.0.0.1:8000 (required)")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "", "address serving Prometheus /metrics, e.g. 127.0.0.1:9464 (default: none)")
	fs.StringArrayVar(&o.Goodput, "goodput", nil, "SLO for attainment and goodput, e.g. --goodput ttft:2000 tpot:50 (ms; ttft, tpot, e2el, ttp)")
	fs.BoolVar(&o.InjectUsage, "inject-usage", false, "ask the upstream for usage in streamed requests (exact token counts) and hide the extra usage chunk from clients that did not ask")
	fs.StringVar(&o.Records, "records", "", "write per-request records (JSONL) of live traffic to this file, rotated by size")
	fs.Int64Var(&o.RecordsMaxBytes, "records-max-bytes", proxy.DefaultRecordsMaxBytes, "rotate the records file at this size in bytes")
	fs.IntVar(&o.RecordsKeep, "records-keep", 0, "rotated records files to keep (0: all)")
	fs.StringSliceVar(&o.Models, "models", nil, "model names that get their own metric label (default: the first --max-models seen); others are \"other\"")
	fs.IntVar(&o.MaxModels, "max-models", promexport.DefaultMaxModels, "distinct model labels when --models is not given")
	fs.StringVar(&o.Buckets, "buckets", "1024,8192", "input-length bucket edges in tokens for the input_bucket label (none: one bucket)")
	fs.DurationVar(&o.UpstreamHeaderTimeout, "upstream-header-timeout", 0, "answer 504 when the upstream sends no response headers within this time (0: wait as long as the upstream takes)")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", 10*time.Second, "on Ctrl-C, time given to open streams to finish")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}

var proxySLOArg = regexp.MustCompile(`^(ttft|tpot|e2el|e2e|ttp):[0-9.]+$`)

// proxyOptions checks the flags and turns them into proxy.Options.
func (o *ProxyOptions) proxyOptions(env Env) (proxy.Options, error) {
	var po proxy.Options
	if o.Upstream == "" {
		return po, usagef("--upstream is required, e.g. --upstream http://127.0.0.1:8000")
	}
	spec := strings.Join(o.Goodput, " ")
	for _, a := range o.args {
		if !proxySLOArg.MatchString(a) || len(o.Goodput) == 0 {
			return po, usagef("unexpected argument %q (SLO terms follow --goodput, e.g. --goodput ttft:2000 tpot:50)", a)
		}
		spec += " " + a
	}
	slo, err := stats.ParseSLO(spec)
	if err != nil {
		return po, usagef("--goodput: %v", err)
	}
	buckets, err := stats.ParseBuckets(o.Buckets)
	if err != nil {
		return po, usagef("--buckets: %v", err)
	}
	switch {
	case o.RecordsMaxBytes <= 0:
		return po, usagef("--records-max-bytes %d: want > 0", o.RecordsMaxBytes)
	case o.RecordsKeep < 0:
		return po, usagef("--records-keep %d: want ≥ 0", o.RecordsKeep)
	case o.MaxModels <= 0:
		return po, usagef("--max-models %d: want > 0", o.MaxModels)
	case o.UpstreamHeaderTimeout < 0:
		return po, usagef("--upstream-header-timeout %v: want ≥ 0", o.UpstreamHeaderTimeout)
	case o.ShutdownGrace < 0:
		return po, usagef("--shutdown-grace %v: want ≥ 0", o.ShutdownGrace)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return po, usagef("--log-level %q: want debug, info, warn or error", o.LogLevel)
	}
	return proxy.Options{
		Listen: o.Listen, Upstream: o.Upstream, MetricsListen: o.MetricsListen,
		SLO: slo, InjectUsage: o.InjectUsage,
		Records: o.Records, RecordsMaxBytes: o.RecordsMaxBytes, RecordsKeep: o.RecordsKeep,
		Models: o.Models, MaxModels: o.MaxModels, Buckets: buckets,
		UpstreamHeaderTimeout: o.UpstreamHeaderTimeout, ShutdownGrace: o.ShutdownGrace,
		Version: Version,
		Logger:  slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level})),
		Ready: func(proxyURL, metricsURL string) {
			fmt.Fprintf(env.Stderr, "goodput: proxying %s → %s (Ctrl-C to stop)\n", proxyURL, redact.URLString(o.Upstream))
			if metricsURL != "" {
				fmt.Fprintf(env.Stderr, "goodput: metrics at %s\n", metricsURL)
			} else {
				fmt.Fprintln(env.Stderr, "goodput: no --metrics-listen: metrics are not served")
			}
		},
	}, nil
}

// runProxy serves until ctx is done (Ctrl-C).
func runProxy(ctx context.Context, env Env, o *ProxyOptions) error {
	po, err := o.proxyOptions(env)
	if err != nil {
		return err
	}
	err = proxy.Run(ctx, po)
	if errors.Is(err, proxy.ErrBadUpstream) {
		return usageError{err}
	}
	return err
}
