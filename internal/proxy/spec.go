package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// Spec is the proxy as a user gives it: Options' settings as text, checked
// by Options.
type Spec struct {
	Listen, Upstream, MetricsListen string
	// Goodput are the SLO's terms (stats.ParseSLO), Buckets the input
	// length bucket edges (stats.ParseBuckets).
	Goodput         []string
	InjectUsage     bool
	Records         string
	RecordsMaxBytes int64
	RecordsKeep     int
	Models          []string
	MaxModels       int
	Buckets         string
	// UpstreamHeaderTimeout and ShutdownGrace are Options'.
	UpstreamHeaderTimeout, ShutdownGrace time.Duration
	// LogLevel is slog's: debug, info, warn or error.
	LogLevel string
}

// Options checks s and returns the Options it describes and the log
// level; args are more SLO terms. Errors are *setting.Error of Spec's
// fields.
func (s Spec) Options(args []string) (Options, slog.Level, error) {
	var level slog.Level
	if s.Upstream == "" {
		return Options{}, level, setting.Errorf("", "", "%v is required, e.g. %[1]v http://127.0.0.1:8000", setting.Name("Upstream"))
	}
	if u, err := url.Parse(s.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Options{}, level, setting.Errorf("Upstream", strconv.Quote(s.Upstream), "%v: want http(s)://host[:port][/path]", ErrBadUpstream)
	}
	slo, err := stats.Spec{Goodput: s.Goodput}.SLO(args)
	if err != nil {
		return Options{}, level, err
	}
	buckets, err := stats.ParseBuckets(s.Buckets)
	if err != nil {
		return Options{}, level, setting.Errorf("Buckets", "", "%v", err)
	}
	switch {
	case s.RecordsMaxBytes <= 0:
		return Options{}, level, setting.Errorf("RecordsMaxBytes", strconv.FormatInt(s.RecordsMaxBytes, 10), "want > 0")
	case s.RecordsKeep < 0:
		return Options{}, level, setting.Errorf("RecordsKeep", strconv.Itoa(s.RecordsKeep), "want ≥ 0")
	case s.MaxModels <= 0:
		return Options{}, level, setting.Errorf("MaxModels", strconv.Itoa(s.MaxModels), "want > 0")
	case s.UpstreamHeaderTimeout < 0:
		return Options{}, level, setting.Errorf("UpstreamHeaderTimeout", s.UpstreamHeaderTimeout.String(), "want ≥ 0")
	case s.ShutdownGrace < 0:
		return Options{}, level, setting.Errorf("ShutdownGrace", s.ShutdownGrace.String(), "want ≥ 0")
	}
	if err := level.UnmarshalText([]byte(s.LogLevel)); err != nil {
		return Options{}, level, setting.Errorf("LogLevel", strconv.Quote(s.LogLevel), "want debug, info, warn or error")
	}
	return Options{Listen: s.Listen, Upstream: s.Upstream, MetricsListen: s.MetricsListen, SLO: slo, InjectUsage: s.InjectUsage,
		Records: s.Records, RecordsMaxBytes: s.RecordsMaxBytes, RecordsKeep: s.RecordsKeep,
		Models: s.Models, MaxModels: s.MaxModels, Buckets: buckets,
		UpstreamHeaderTimeout: s.UpstreamHeaderTimeout, ShutdownGrace: s.ShutdownGrace}, level, nil
}

// Run checks s (args are more SLO terms, as for Options) and proxies until
// ctx is done, logging to and noting its addresses on stderr; version goes
// in the records.
func (s Spec) Run(ctx context.Context, args []string, version string, stderr io.Writer) error {
	o, level, err := s.Options(args)
	if err != nil {
		return err
	}
	o.Version, o.Logger = version, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o.Ready = func(proxyURL, metricsURL string) {
		fmt.Fprintf(stderr, "goodput: proxying %s → %s (Ctrl-C to stop)\n", proxyURL, redact.URLString(s.Upstream))
		if metricsURL == "" {
			fmt.Fprintln(stderr, "goodput: no metrics address given: metrics are not served")
			return
		}
		fmt.Fprintf(stderr, "goodput: metrics at %s\n", metricsURL)
	}
	return Run(ctx, o)
}
