package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// runFor runs w until d has passed on the (bubble's) clock.
func runFor(t *testing.T, w *Watcher, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestRunSpreadsProbes: three targets every 30 s, watched for 95 s,
// probe at 0, 10 and 20 s into each interval (plus under 1 s of jitter):
// a at 0, 30, 60, 90; b at 10, 40, 70; c at 20, 50, 80. The records say
// the same: each probe's intended send time is its due time.
func TestRunSpreadsProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{}
		var mu sync.Mutex
		var results []Result
		w, err := New(testTargets(3, 30*time.Second), Options{Open: fs.open, OnProbe: func(r Result) {
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		runFor(t, w, 95*time.Second)
		for i, name := range []string{"a", "b", "c"} {
			sent := fs.get(name).sent
			var want []time.Duration
			for at := time.Duration(i) * 10 * time.Second; at < 95*time.Second; at += 30 * time.Second {
				want = append(want, at)
			}
			if len(sent) != len(want) {
				t.Fatalf("target %s: %d probes; want %d", name, len(sent), len(want))
			}
			for k, s := range sent {
				if j := s.Sub(start) - want[k]; j < 0 || j >= time.Second {
					t.Errorf("target %s probe %d sent at %v; want %v plus jitter in [0, 1s)", name, k, s.Sub(start), want[k])
				}
			}
		}
		for _, r := range results {
			if r.Outcome != OutcomeOK || r.Record == nil {
				t.Fatalf("result %+v; want ok", r)
			}
			// The fake backend answers at once: sent when intended.
			if lag := r.Record.SendLag(); lag != 0 {
				t.Errorf("%s: send lag %v; want 0", r.Record.ID, lag)
			}
		}
	})
}

// TestRunSkipsWhileSlow: a probe that takes 25 s on a 10 s interval makes
// the two probes due while it runs be skipped and counted missed, never
// run beside it or queued behind it; the next probe keeps the grid.
func TestRunSkipsWhileSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{answers: map[string]func(int) answer{
			"a": func(int) answer { return answer{ttft: 25 * time.Second, tokens: 1} },
		}}
		cfg := testTargets(1, 10*time.Second)
		cfg.Targets[0].Timeout = time.Minute
		reg := prometheus.NewRegistry()
		w, err := New(cfg, Options{Open: fs.open, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		runFor(t, w, 65*time.Second)
		b := fs.get("a")
		if b.maxInflight != 1 {
			t.Errorf("%d probes in flight at once; want 1", b.maxInflight)
		}
		var at []time.Duration
		for _, s := range b.sent {
			at = append(at, s.Sub(start).Truncate(10*time.Second))
		}
		if want := []time.Duration{0, 30 * time.Second, 60 * time.Second}; len(at) != len(want) || at[0] != want[0] || at[1] != want[1] || at[2] != want[2] {
			t.Errorf("probes sent at %v; want %v (plus jitter)", at, want)
		}
		if got := testutil.ToFloat64(w.metrics.missed.WithLabelValues("a", "m")); got != 4 {
			t.Errorf("missed probes = %v; want 4 (10 s and 20 s, 40 s and 50 s)", got)
		}
		s := w.Summary()[0]
		if s.Missed != 4 || s.Outcomes[OutcomeOK] != 2 || s.Outcomes[string(runlog.ErrCancelled)] != 1 {
			t.Errorf("summary %+v; want 2 ok, 1 cancelled at the end, 4 missed", s)
		}
	})
}

// TestResolveRetried: a model that could not be resolved is a counted,
// failed probe, and resolution is tried again at the next one; once
// resolved it is not asked again.
func TestResolveRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{resolveFails: 1}
		cfg := testTargets(1, 30*time.Second)
		cfg.Targets[0].Model = "" // labelled by the model resolved
		var notes []string
		w, err := New(cfg, Options{Open: fs.open, Note: func(s string) { notes = append(notes, s) }})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var got []Result
		for range 3 {
			rs, err := w.Once(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rs...)
		}
		if got[0].Outcome != OutcomeResolve || !got[0].Counted || got[0].Good || got[0].Record != nil || got[0].Model != modelUnknown {
			t.Errorf("first probe %+v; want a counted resolve_error, no record, model unknown", got[0])
		}
		for _, r := range got[1:] {
			if r.Outcome != OutcomeOK || r.Model != "fake-model" {
				t.Errorf("later probe %+v; want ok with the resolved model", r)
			}
		}
		if n := fs.get("a").resolves; n != 2 {
			t.Errorf("Resolve called %d times; want 2", n)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "tried again at the next probe") {
			t.Errorf("notes = %q", notes)
		}
	})
}

// TestProbeTimeout: a vendor that never answers is a timeout (counted,
// bad), not a cancellation.
func TestProbeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{answers: map[string]func(int) answer{"a": func(int) answer { return answer{hang: true} }}}
		cfg := testTargets(1, 30*time.Second)
		cfg.Targets[0].Timeout = 5 * time.Second
		w, err := New(cfg, Options{Open: fs.open})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		rs, _ := w.Once(t.Context())
		r := rs[0]
		if r.Outcome != string(runlog.ErrTimeout) || !r.Counted || r.Good {
			t.Errorf("result %+v; want a counted timeout", r)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("the probe took %v; want the 5s timeout", d)
		}
	})
}

// TestMetrics checks the exposition after a hand-made sequence of probes
// of one target (SLO ttft:1000, objective 0.75): ok, ok, slo_miss,
// http_5xx and http_429 advertising a 7 s wait. Four count toward the SLO
// (the 429 does not), two of them good: burn = (1 − 2/4) / (1 − 0.75) = 2
// in both windows.
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seq := []answer{
			{ttft: 200 * time.Millisecond, gap: 10 * time.Millisecond, tokens: 5},
			{ttft: 400 * time.Millisecond, gap: 30 * time.Millisecond, tokens: 5},
			{ttft: 1500 * time.Millisecond, gap: 10 * time.Millisecond, tokens: 5},
			{class: runlog.ErrHTTP5xx},
			{class: runlog.ErrHTTP429},
		}
		fs := &fakes{answers: map[string]func(int) answer{"a": func(k int) answer { return seq[k] }}}
		cfg := testTargets(1, 30*time.Second)
		cfg.Targets[0].SLO = stats.SLO{TTFT: time.Second}
		cfg.Targets[0].Objective = 0.75
		reg := prometheus.NewRegistry()
		w, err := New(cfg, Options{Open: fs.open, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for range seq {
			if _, err := w.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		want := `
# HELP goodput_watch_probes_total Probes by outcome: ok, slo_miss, resolve_error, prepare_error, or the error class (http_429, http_5xx, timeout, connect, ...).
# TYPE goodput_watch_probes_total counter
goodput_watch_probes_total{model="m",outcome="http_429",vendor="a"} 1
goodput_watch_probes_total{model="m",outcome="http_5xx",vendor="a"} 1
goodput_watch_probes_total{model="m",outcome="ok",vendor="a"} 2
goodput_watch_probes_total{model="m",outcome="slo_miss",vendor="a"} 1
# HELP goodput_watch_rate_limited_total Probes answered 429 (rate limited): counted apart, never as server failures, and outside the SLO.
# TYPE goodput_watch_rate_limited_total counter
goodput_watch_rate_limited_total{model="m",vendor="a"} 1
# HELP goodput_watch_rate_limit_retry_after_seconds The wait the vendor advertised (Retry-After, or its rate-limit reset headers) with its last 429 answer to a probe; absent until one advertised a wait.
# TYPE goodput_watch_rate_limit_retry_after_seconds gauge
goodput_watch_rate_limit_retry_after_seconds{model="m",vendor="a"} 7
# HELP goodput_watch_slo_burn_rate Error-budget burn rate of the probes over the window: (1 - good/total) / (1 - objective); rate-limited probes are not counted. Absent while the window holds no counted probe.
# TYPE goodput_watch_slo_burn_rate gauge
goodput_watch_slo_burn_rate{model="m",vendor="a",window="1h"} 2
goodput_watch_slo_burn_rate{model="m",vendor="a",window="5m"} 2
# HELP goodput_watch_slo_good_total Probes that met the target's SLO.
# TYPE goodput_watch_slo_good_total counter
goodput_watch_slo_good_total{model="m",vendor="a"} 2
# HELP goodput_watch_slo_limit_seconds The target's SLO limit on a per-probe metric (ttft, tpot, e2el, ttp), for alerts comparing the histograms with it.
# TYPE goodput_watch_slo_limit_seconds gauge
goodput_watch_slo_limit_seconds{metric="ttft",model="m",vendor="a"} 1
# HELP goodput_watch_slo_objective_ratio The share of probes that must meet the SLO (the objective burn rates are measured against).
# TYPE goodput_watch_slo_objective_ratio gauge
goodput_watch_slo_objective_ratio{model="m",vendor="a"} 0.75
# HELP goodput_watch_slo_total Probes that count toward the SLO: all but rate-limited and cancelled ones.
# TYPE goodput_watch_slo_total counter
goodput_watch_slo_total{model="m",vendor="a"} 4
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"goodput_watch_probes_total", "goodput_watch_rate_limited_total", "goodput_watch_rate_limit_retry_after_seconds",
			"goodput_watch_slo_burn_rate", "goodput_watch_slo_good_total", "goodput_watch_slo_limit_seconds",
			"goodput_watch_slo_objective_ratio", "goodput_watch_slo_total"); err != nil {
			t.Error(err)
		}
		// The histograms hold the three successful probes: TTFT 0.2 s
		// and 0.4 s under the 0.5 s bucket, 1.5 s in the 1.5 s one.
		want = `
# HELP goodput_watch_time_to_first_token_seconds Probe's time from sending to the first chunk carrying a generated token (content or reasoning), successful probes.
# TYPE goodput_watch_time_to_first_token_seconds histogram
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="0.05"} 0
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="0.1"} 0
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="0.2"} 1
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="0.3"} 1
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="0.5"} 2
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="0.75"} 2
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="1"} 2
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="1.5"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="2"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="3"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="5"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="7.5"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="10"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="15"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="20"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="30"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="60"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="120"} 3
goodput_watch_time_to_first_token_seconds_bucket{model="m",vendor="a",le="+Inf"} 3
goodput_watch_time_to_first_token_seconds_sum{model="m",vendor="a"} 2.1
goodput_watch_time_to_first_token_seconds_count{model="m",vendor="a"} 3
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "goodput_watch_time_to_first_token_seconds"); err != nil {
			t.Error(err)
		}
		// TPOT: 10, 30 and 10 ms.
		if n := testutil.CollectAndCount(w.metrics.tpot); n != 1 {
			t.Errorf("%d TPOT series; want 1", n)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	})
}

// TestOutcome: rate limits and cancellations never count toward the SLO.
func TestOutcome(t *testing.T) {
	ok := &runlog.Record{Sent: 0, Chunks: []runlog.Chunk{{T: int64(300 * time.Millisecond), Tokens: 1, Visible: true}}}
	slow := &runlog.Record{Sent: 0, Chunks: []runlog.Chunk{{T: int64(3 * time.Second), Tokens: 1, Visible: true}}}
	slo := stats.SLO{TTFT: time.Second}
	for _, tc := range []struct {
		rec           *runlog.Record
		outcome       string
		counted, good bool
	}{
		{ok, OutcomeOK, true, true},
		{slow, OutcomeSLOMiss, true, false},
		{&runlog.Record{ErrorClass: runlog.ErrHTTP429}, "http_429", false, false},
		{&runlog.Record{ErrorClass: runlog.ErrCancelled}, "cancelled", false, false},
		{&runlog.Record{ErrorClass: runlog.ErrHTTP5xx}, "http_5xx", true, false},
		{&runlog.Record{ErrorClass: runlog.ErrTimeout}, "timeout", true, false},
		{&runlog.Record{ErrorClass: runlog.ErrConnect}, "connect", true, false},
	} {
		o, c, g := Outcome(tc.rec, slo)
		if o != tc.outcome || c != tc.counted || g != tc.good {
			t.Errorf("Outcome(%s) = %s, %v, %v; want %s, %v, %v", tc.rec.ErrorClass, o, c, g, tc.outcome, tc.counted, tc.good)
		}
	}
	// With no SLO, every success is good.
	if o, _, g := Outcome(slow, stats.SLO{}); o != OutcomeOK || !g {
		t.Errorf("Outcome(slow, no SLO) = %s, good %v; want ok", o, g)
	}
}

// TestPromptsFresh: synthesized probes differ from one another (no prefix
// cache can serve them), and a fixed prompt is sent as it is.
func TestPromptsFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{}
		cfg := testTargets(2, 30*time.Second)
		cfg.Targets[1].Probe = Probe{Prompt: "Say hi.", MaxTokens: 4}
		w, err := New(cfg, Options{Open: fs.open})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for range 3 {
			w.Once(t.Context())
		}
		a := fs.get("a").reqs
		if a[0].Prompt == "" || a[0].Prompt == a[1].Prompt || a[1].Prompt == a[2].Prompt || a[0].OutputTokens != 8 || a[0].PromptTokens != 16 {
			t.Errorf("synthesized probes %+v: want three different prompts of 16 tokens, 8 out", a)
		}
		for _, r := range fs.get("b").reqs {
			if r.Prompt != "Say hi." || r.OutputTokens != 4 {
				t.Errorf("fixed probe %+v", r)
			}
		}
	})
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	for _, tc := range []struct{ in, want string }{
		{"gpt-x", "gpt-x"},
		{"bad\xffbyte", "bad\uFFFDbyte"},
		{long, strings.Repeat("é", 64)},
	} {
		if got := labelValue(tc.in); got != tc.want {
			t.Errorf("labelValue(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestRunObeysRetryAfter: a rate-limited probe whose answer asks for 25 s
// skips the probes due within them (10 s, 20 s), counted as missed; the
// next one goes at 30 s.
func TestRunObeysRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{answers: map[string]func(int) answer{
			"a": func(k int) answer {
				if k == 0 {
					return answer{class: runlog.ErrHTTP429, retryAfter: 25 * time.Second}
				}
				return answer{ttft: time.Second, tokens: 1}
			},
		}}
		cfg := testTargets(1, 10*time.Second)
		w, err := New(cfg, Options{Open: fs.open, Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		runFor(t, w, 45*time.Second)
		var at []time.Duration
		for _, s := range fs.get("a").sent {
			at = append(at, s.Sub(start).Truncate(10*time.Second))
		}
		if want := []time.Duration{0, 30 * time.Second, 40 * time.Second}; len(at) != len(want) || at[0] != want[0] || at[1] != want[1] || at[2] != want[2] {
			t.Errorf("probes sent at %v; want %v (plus jitter): none within the 25 s asked", at, want)
		}
		if got := testutil.ToFloat64(w.metrics.missed.WithLabelValues("a", "m")); got != 2 {
			t.Errorf("missed probes = %v; want 2 (10 s and 20 s)", got)
		}
	})
}

// TestRunRetryAfterCapped: a probe answered 429 asking for a day skips
// the probes of one MaxRetryAfter, not of the day (the watch went
// blind for the rest of the day and counted 28,800 missed probes at once),
// and the user is told once.
func TestRunRetryAfterCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakes{answers: map[string]func(int) answer{
			"a": func(k int) answer {
				if k == 0 {
					return answer{class: runlog.ErrHTTP429, retryAfter: 24 * time.Hour}
				}
				return answer{ttft: time.Second, tokens: 1}
			},
		}}
		cfg := testTargets(1, 10*time.Second)
		var notes []string
		w, err := New(cfg, Options{Open: fs.open, Registerer: prometheus.NewRegistry(), Note: func(s string) { notes = append(notes, s) }})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		runFor(t, w, 95*time.Second)
		var at []time.Duration
		for _, s := range fs.get("a").sent {
			at = append(at, s.Sub(start).Truncate(10*time.Second))
		}
		if want := []time.Duration{0, time.Minute, 70 * time.Second, 80 * time.Second, 90 * time.Second}; fmt.Sprint(at) != fmt.Sprint(want) {
			t.Errorf("probes sent at %v; want %v (plus jitter)", at, want)
		}
		if got := testutil.ToFloat64(w.metrics.missed.WithLabelValues("a", "m")); got != 5 {
			t.Errorf("missed probes = %v; want 5 (10 s to 50 s)", got)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "asked to wait 24h0m0s: probing again after 1m0s at most") {
			t.Errorf("notes = %q; want one saying the wait was cut", notes)
		}
	})
}
