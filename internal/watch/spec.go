package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/target"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/protocols"
)

// Spec is "goodput watch" as a user gives it: the config file, the
// /metrics address ("" or none: not served), where the records go, and
// how long to watch (Once: probe every target once).
type Spec struct {
	Config, Listen, RecordsDir string
	Duration                   time.Duration
	Once                       bool
}

// Host is what a watch takes from the program running it.
type Host struct {
	// Dir resolves relative paths ("" the working directory).
	Dir            string
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Secrets are blanked from the records and the /metrics page (nil:
	// none).
	Secrets *redact.Secrets
	Version string
	// ReadyPoll is how often a starting server is asked again (zero:
	// openai's default).
	ReadyPoll time.Duration
	// Served, when set (tests), is called with the /metrics URL after
	// Once has probed, while the page still serves.
	Served func(metricsURL string)
}

// Check checks s; errors are *setting.Error of Spec's fields.
func (s Spec) Check() error {
	switch {
	case s.Config == "":
		return setting.Errorf("", "", "%v is required: the YAML file listing the targets to watch (see docs/watch.md)", setting.Name("Config"))
	case s.Duration < 0:
		return setting.Errorf("Duration", s.Duration.String(), "want ≥ 0")
	case s.Once && s.Duration > 0:
		return setting.Errorf("", "", "%v probes every target once: give %v only to watch continuously", setting.Name("Once"), setting.Name("Duration"))
	}
	return nil
}

// Run watches as s says until ctx is done or s.Duration has passed, then
// writes the summary; with s.Once it probes each target once and writes
// the results, and failed names the targets whose probe was not ok. listen
// says whether Listen was given: Once serves /metrics only then. A
// mistake in the config or a target is a *setting.FileError, in s a
// *setting.Error; a Listen not served is a *setting.OutputError.
func (s Spec) Run(ctx context.Context, h Host, listen bool) (failed []string, err error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(h.path(s.Config), s.Config)
	if err != nil {
		return nil, err
	}
	targets, stop, err := h.targets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	reg := prometheus.NewRegistry()
	o := Options{
		Open: func(t Target, now func() int64) (Backend, error) {
			rt := targets[t.Name]
			// One probe in flight per target: a small pool is enough.
			c, err := rt.Open(rt.BaseURL, 2, now)
			if err != nil {
				return nil, err // not a nil *wire.Client inside a Backend
			}
			return c, nil
		},
		Registerer: reg, RecordsDir: h.path(s.RecordsDir), Version: h.Version,
		Note: func(m string) { fmt.Fprintln(h.Stderr, "goodput: watch: "+m) },
	}
	if h.Secrets != nil {
		o.Filter = h.Secrets.Writer
	}
	w, err := New(cfg, o)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	url := ""
	if s.Listen != "" && !strings.EqualFold(s.Listen, "none") && (!s.Once || listen) {
		var stopMetrics func()
		if url, stopMetrics, err = Serve(s.Listen, reg, h.Secrets); err != nil {
			return nil, &setting.OutputError{Field: "Listen", Path: s.Listen, Err: err}
		}
		defer stopMetrics()
		fmt.Fprintf(h.Stderr, "goodput: metrics at %s\n", url)
	}
	if s.Once {
		results, err := w.Once(ctx)
		_ = WriteResults(h.Stdout, results)
		if h.Served != nil && url != "" {
			h.Served(url)
		}
		return NotOK(results), err
	}
	fmt.Fprintf(h.Stderr, "goodput: watching %s (Ctrl-C to stop)\n", Intervals(cfg))
	rctx := ctx
	if s.Duration > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, s.Duration)
		defer cancel()
	}
	err = w.Run(rctx)
	_ = WriteSummary(h.Stdout, w.Summary())
	return nil, err
}

// path is p resolved against h.Dir.
func (h Host) path(p string) string {
	if p != "" && h.Dir != "" && !filepath.IsAbs(p) {
		return filepath.Join(h.Dir, p)
	}
	return p
}

// targets checks each target's key, then builds its target.Target through
// h.target. Targets at base_url embedded share one embedded simulator,
// started here; stop stops it.
func (h Host) targets(ctx context.Context, cfg *Config) (targets map[string]target.Target, stop func(), err error) {
	stop = func() {}
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		if t.APIKeyEnv != "" && (h.Getenv == nil || h.Getenv(t.APIKeyEnv) == "") {
			return nil, stop, t.FieldError("api_key_env", fmt.Errorf("the environment variable %s is not set: export it with the API key", t.APIKeyEnv))
		}
	}
	simURL := ""
	if slices.ContainsFunc(cfg.Targets, func(t Target) bool { return t.BaseURL == Embedded }) {
		log := slog.New(slog.NewTextHandler(h.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		url, stopServer, err := simserve.Start(ctx, "127.0.0.1:0", sim.DefaultConfig(), simserve.Options{Logger: log})
		if err != nil {
			return nil, stop, fmt.Errorf("the embedded simulator: %w", err)
		}
		simURL, stop = url, func() { _ = stopServer() }
	}
	targets = map[string]target.Target{}
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		headers, body, err := t.request()
		base := t.BaseURL
		if base == Embedded {
			base = simURL
		}
		var rt target.Target
		if err == nil {
			rt, err = h.target(t, base, headers, body)
		}
		if err != nil {
			stop()
			return nil, func() {}, err
		}
		if t.Endpoint == "" {
			t.Endpoint = rt.Endpoint // the records say which path was probed
		}
		targets[t.Name] = rt
	}
	return targets, stop, nil
}

// request is what t sends beyond its config's keys: its headers as K=V,
// sorted, and its probe's body as JSON ("" none).
func (t *Target) request() (headers []string, body string, err error) {
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		headers = append(headers, k+"="+t.Headers[k])
	}
	if b := t.Probe.Body(); b != nil {
		j, err := json.Marshal(b)
		if err != nil {
			return nil, "", t.FieldError("probe", err)
		}
		body = string(j)
	}
	return headers, body, nil
}

// target is t's target.Target reaching it at base, sending headers (K=V) and
// body (JSON, "" none) with every probe, built as bench builds its own;
// the key, the URL and every header value are secrets.
func (h Host) target(t *Target, base string, headers []string, body string) (target.Target, error) {
	spec := target.Spec{Backend: t.Backend, Endpoint: t.Endpoint, Model: t.Model, APIKeyEnv: t.APIKeyEnv,
		MaxTokensField: "max_tokens", ContinuousUsage: "auto", Timeout: t.Timeout,
		MaxResponseTokens: wire.DefaultMaxResponseTokens, Headers: headers, ExtraBody: body}
	if _, _, err := spec.Protocol(); err != nil {
		return target.Target{}, t.FieldError("backend", fmt.Errorf("%q: want %s", t.Backend, protocols.Help()))
	}
	key := ""
	if k := spec.KeyEnv(); k != "" && h.Getenv != nil {
		key = h.Getenv(k)
	}
	// The config builds valid headers and probe bodies, so what is left
	// to refuse is the backend's.
	rt, err := spec.Build(base, target.Conn{APIKey: key, ReadyPoll: h.ReadyPoll})
	if err != nil {
		return rt, t.FieldError("backend", errors.New(err.Error()))
	}
	if h.Secrets != nil {
		if u, err := url.Parse(base); err == nil {
			h.Secrets.AddURL(u)
		}
		hdr, _ := spec.Header()
		h.Secrets.Add(key)
		h.Secrets.AddHeader(hdr, true)
	}
	return rt, nil
}
