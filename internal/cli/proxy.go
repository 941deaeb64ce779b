package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/proxy"
)

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
