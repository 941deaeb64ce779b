package watch

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/wire"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/wire/openai"
)

// simVendor starts goodput's simulated engine on 127.0.0.1 and returns
// its URL.
func simVendor(t *testing.T) string {
	t.Helper()
	url, stop, err := simserve.Start(t.Context(), "127.0.0.1:0", sim.DefaultConfig(), simserve.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return url
}

// TestEndToEndDegradation watches two simulated vendors over HTTP with the
// OpenAI chat backend, SLO ttft:100 tpot:50. Halfway, vendor "slow" is
// slowed 40-fold (POST /goodput/slowdown?factor=40, as an operator
// degrading a test vendor would): its TTFT moves from milliseconds to
// hundreds of them and its TPOT to about 260 ms, so every probe misses and
// its burn rate rises to about (1 − 4/8) / 0.01 = 50, over the 14.4 that
// pages, while "steady" keeps its probes in the SLO and stays far under
// it. (A host too loaded to keep the simulator's schedule may make one
// steady probe late; the page threshold absorbs it, as it would a
// vendor's one-off.)
func TestEndToEndDegradation(t *testing.T) {
	if testing.Short() {
		t.Skip("real HTTP over a few seconds")
	}
	urls := map[string]string{"steady": simVendor(t), "slow": simVendor(t)}
	cfg := &Config{File: "e2e.yaml"}
	for i, name := range []string{"steady", "slow"} {
		cfg.Targets = append(cfg.Targets, Target{
			Name: name, BaseURL: urls[name], Backend: "openai-chat",
			SLO: stats.SLO{TTFT: 100 * time.Millisecond, TPOT: 50 * time.Millisecond}, Objective: 0.99,
			Interval: 150 * time.Millisecond, Timeout: 10 * time.Second,
			Probe: Probe{PromptTokens: 32, MaxTokens: 2}, index: i, lines: map[string]int{},
		})
	}
	open := func(t Target, now func() int64) (Backend, error) {
		return openai.NewClient(wire.Config{BaseURL: t.BaseURL, Endpoint: "/v1/chat/completions", Now: now, Timeout: t.Timeout, MaxConns: 2})
	}

	// Probes are counted as they finish; the test moves on at counts, not
	// after sleeps.
	const perPhase = 4
	var mu sync.Mutex
	counts := map[string]int{}
	var misses int
	flip, finished := make(chan struct{}), make(chan struct{})
	var flipOnce, doneOnce sync.Once
	onProbe := func(r Result) {
		mu.Lock()
		defer mu.Unlock()
		if r.Outcome != OutcomeOK && r.Outcome != OutcomeSLOMiss && r.Outcome != "cancelled" {
			t.Errorf("%s probe: %s (%v)", r.Target, r.Outcome, r.Err)
		}
		counts[r.Target]++
		if counts["steady"] >= perPhase && counts["slow"] >= perPhase {
			flipOnce.Do(func() { close(flip) })
		}
		if r.Target == "slow" && r.Outcome == OutcomeSLOMiss {
			misses++
		}
		if misses >= perPhase {
			doneOnce.Do(func() { close(finished) })
		}
	}
	reg := prometheus.NewRegistry()
	w, err := New(cfg, Options{Open: open, Registerer: reg, OnProbe: onProbe})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx) }()
	select {
	case <-flip:
	case <-ctx.Done():
		t.Fatal("the first probes did not finish within a minute")
	}
	resp, err := http.Post(urls["slow"]+"/goodput/slowdown?factor=40", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /goodput/slowdown: %s", resp.Status)
	}
	select {
	case <-finished:
	case <-ctx.Done():
		t.Fatal("the degraded probes did not finish within a minute")
	}
	// Read the metrics before stopping: the in-flight probes are
	// cancelled then, which counts for neither vendor.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}

	// TTFT: the steady vendor's probes under the 0.1 s bucket; the slow
	// vendor's since the slowdown above it, those before under it.
	const page = 14.4
	steadyCount, steadyFast := histogram(t, mfs, "goodput_watch_time_to_first_token_seconds", "steady", 0.1)
	if steadyCount < 2*perPhase || steadyCount-steadyFast > 1 {
		t.Errorf("steady TTFT: %d of %d probes under 0.1 s; want all (but one), and at least %d", steadyFast, steadyCount, 2*perPhase)
	}
	slowCount, slowFast := histogram(t, mfs, "goodput_watch_time_to_first_token_seconds", "slow", 0.1)
	if slowCount-slowFast < perPhase || slowFast < perPhase-1 {
		t.Errorf("slow TTFT: %d of %d probes under 0.1 s; want about %d under and at least %d over", slowFast, slowCount, perPhase, perPhase)
	}
	for _, win := range []string{"5m", "1h"} {
		if v, ok := gauge(mfs, "goodput_watch_slo_burn_rate", "steady", win); !ok || v >= page {
			t.Errorf("steady burn rate %s = %v (present %v); want under %v", win, v, ok, page)
		}
		if v, ok := gauge(mfs, "goodput_watch_slo_burn_rate", "slow", win); !ok || v < page {
			t.Errorf("slow burn rate %s = %v (present %v); want ≥ %v", win, v, ok, page)
		}
	}
	if v, _ := counter(mfs, "goodput_watch_probes_total", "slow", "slo_miss"); v < perPhase {
		t.Errorf("slow slo_miss probes = %v; want ≥ %d", v, perPhase)
	}
	if v, _ := counter(mfs, "goodput_watch_probes_total", "steady", "slo_miss"); v > 1 {
		t.Errorf("steady slo_miss probes = %v; want at most one", v)
	}
}

// labels reports whether m has every label of want.
func labels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

func family(mfs []*dto.MetricFamily, name string) *dto.MetricFamily {
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// histogram returns a vendor's observation count and how many were at or
// under le (which must be a bucket bound).
func histogram(t *testing.T, mfs []*dto.MetricFamily, name, vendor string, le float64) (count, under uint64) {
	t.Helper()
	mf := family(mfs, name)
	if mf == nil {
		t.Fatalf("no %s", name)
	}
	for _, m := range mf.GetMetric() {
		if !labels(m, map[string]string{"vendor": vendor}) {
			continue
		}
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == le {
				return h.GetSampleCount(), b.GetCumulativeCount()
			}
		}
		t.Fatalf("%s has no bucket le=%v", name, le)
	}
	return 0, 0
}

func gauge(mfs []*dto.MetricFamily, name, vendor, window string) (float64, bool) {
	mf := family(mfs, name)
	for _, m := range mf.GetMetric() {
		if labels(m, map[string]string{"vendor": vendor, "window": window}) {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func counter(mfs []*dto.MetricFamily, name, vendor, outcome string) (float64, bool) {
	mf := family(mfs, name)
	for _, m := range mf.GetMetric() {
		if labels(m, map[string]string{"vendor": vendor, "outcome": outcome}) {
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}
