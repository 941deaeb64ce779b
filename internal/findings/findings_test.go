package findings

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

const ms = int64(time.Millisecond)

// spec describes one synthetic request; times in ms from the run start.
type spec struct {
	sent, lag float64 // send time; intended = sent − lag
	ttft      float64
	n         int     // output tokens, one per chunk
	itl       float64 // gap between chunks
	hidden    int     // leading chunks that are hidden (reasoning)
	prompt    int
	cached    int
	class     runlog.ErrorClass
}

func (s spec) record(i int) runlog.Record {
	r := runlog.Record{
		ID: strconv.Itoa(i), Intended: int64((s.sent - s.lag) * float64(ms)), Sent: int64(s.sent * float64(ms)),
		PromptTokens: s.prompt, CachedTokens: s.cached, ErrorClass: s.class, Status: 200, TokenSource: runlog.TokensUsage,
	}
	if s.class != runlog.ErrNone {
		r.Status = 0
		r.End = r.Sent + 10*ms
		return r
	}
	t := s.sent + s.ttft
	for k := range s.n {
		r.Chunks = append(r.Chunks, runlog.Chunk{T: int64(t * float64(ms)), Tokens: 1, Visible: k >= s.hidden})
		t += s.itl
	}
	r.CompletionTokens = s.n
	r.End = r.Chunks[len(r.Chunks)-1].T
	return r
}

// many builds n requests from f(i).
func many(n int, f func(i int) spec) []runlog.Record {
	recs := make([]runlog.Record, n)
	for i := range recs {
		recs[i] = f(i).record(i)
	}
	return recs
}

// plain is a healthy request: 100 ms TTFT, 60 ms TPOT (slower than
// reading speed, so that rule stays quiet), lengths that vary.
func plain(i int) spec {
	return spec{sent: float64(i) * 100, ttft: 100, n: 10 + i%20, itl: 60, prompt: 300 + 37*(i%17)}
}

func summarize(recs []runlog.Record, slo string) *stats.Summary {
	o := stats.Options{}
	if slo != "" {
		s, err := stats.ParseSLO(slo)
		if err != nil {
			panic(err)
		}
		o.SLO = s
	}
	s := stats.Summarize(recs, o)
	return &s
}

func ids(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func find(fs []Finding, id string) (Finding, bool) {
	for _, f := range fs {
		if f.ID == id {
			return f, true
		}
	}
	return Finding{}, false
}

// TestRules runs every rule on records built to trigger it and on records
// built not to.
func TestRules(t *testing.T) {
	twoLevels := &runlog.Meta{Levels: []runlog.Level{{RequestRate: 1}, {RequestRate: 2}}}
	tests := []struct {
		name  string
		recs  []runlog.Record
		slo   string
		in    Input // Summary filled in by the test
		id    string
		want  bool
		sev   Severity
		check func(t *testing.T, f Finding)
	}{
		{name: "client-bound by send lag", id: "client-bound", want: true, sev: Critical,
			// A backlog that grows: each send 5 ms later than the one
			// before, at 10 req/s (a 100 ms gap), with ~1.3 s requests.
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 5 * float64(i); return s }),
			in:   Input{Level: &runlog.Level{RequestRate: 10}},
			check: func(t *testing.T, f Finding) {
				if f.Evidence["send_lag_p50_ms"] != 497.5 || f.Evidence["arrival_gap_ms"] != 100.0 || !strings.HasPrefix(f.Message, "CLIENT-BOUND") {
					t.Errorf("evidence %v message %q; want send_lag_p50_ms 497.5, arrival_gap_ms 100 and a loud message", f.Evidence, f.Message)
				}
			}},
		{name: "a constant lag below the gap is not client-bound", id: "client-bound", want: false,
			// 20 ms late, every time, at 10 req/s: the schedule is kept.
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 20; return s }),
			in:   Input{Level: &runlog.Level{RequestRate: 10}}},
		{name: "sending all at once is not client-bound", id: "client-bound", want: false,
			// --request-rate inf: the sends take ~100 ms to leave (P50
			// 17 ms, P99 99 ms, as the issue saw) beside 4.5 s requests.
			recs: many(200, func(i int) spec {
				s := plain(i)
				s.sent, s.lag, s.ttft, s.itl = float64(i)/2, float64(i)/2, 2000, 100
				return s
			}),
			in: Input{Level: &runlog.Level{}, ClientCPU: 0.0142}},
		{name: "late sends at 1.4 % client CPU are not client-bound", id: "client-bound", want: false,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 5 * float64(i); return s }),
			in:   Input{Level: &runlog.Level{RequestRate: 10}, ClientCPU: 0.0142}},
		{name: "late sends at 1.4 % client CPU: the host was busy", id: "host-busy", want: true, sev: Warning,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 5 * float64(i); return s }),
			in:   Input{Level: &runlog.Level{RequestRate: 10}, ClientCPU: 0.0142},
			check: func(t *testing.T, f Finding) {
				if f.Evidence["client_cpu_pct"] != 1.42 || !strings.HasPrefix(f.Message, "The host was busy") || strings.Contains(f.Message, "CLIENT-BOUND") {
					t.Errorf("finding %+v; want the host blamed at 1.42 %% client CPU", f)
				}
			}},
		{name: "late sends beside the embedded simulator are not client-bound", id: "client-bound", want: false,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 5 * float64(i); return s }),
			in:   Input{Meta: &runlog.Meta{Target: "embedded-sim", Levels: []runlog.Level{{RequestRate: 10}}}}},
		{name: "late sends beside the embedded simulator: the host was busy", id: "host-busy", want: true, sev: Warning,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 5 * float64(i); return s }),
			in:   Input{Meta: &runlog.Meta{Target: "embedded-sim", Levels: []runlog.Level{{RequestRate: 10}}}},
			check: func(t *testing.T, f Finding) {
				if !strings.Contains(f.Message, "the embedded simulator runs in the same process") {
					t.Errorf("message %q; want the embedded simulator named", f.Message)
				}
			}},
		{name: "on schedule the host is not busy", id: "host-busy", want: false,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 1; return s }), in: Input{ClientCPU: 0.0142}},
		{name: "on schedule is not client-bound", id: "client-bound", want: false,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 1; return s })},
		{name: "a full cap is not client-bound", id: "client-bound", want: false,
			// The cap's wait made every send late: the cap explains the lag.
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 80; return s }),
			in:   Input{Level: &runlog.Level{RequestRate: 10, MaxConcurrency: 4, DelayedArrivals: 2}}},
		{name: "cap limited", id: "concurrency-cap-limited", want: true, sev: Info,
			recs: many(200, func(i int) spec { s := plain(i); s.lag = 80; return s }),
			in:   Input{Level: &runlog.Level{RequestRate: 10, MaxConcurrency: 4, DelayedArrivals: 2}},
			check: func(t *testing.T, f Finding) {
				// 2 of 200 = 1 %; the message blames the cap, not the client.
				if f.Evidence["delayed_pct"] != 1.0 || f.Evidence["max_concurrency"] != 4 || f.Evidence["offered_rps"] != 10.0 ||
					f.Evidence["send_lag_p50_ms"] != 80.0 {
					t.Errorf("evidence %v; want delayed_pct 1, max_concurrency 4, offered_rps 10, send_lag_p50_ms 80", f.Evidence)
				}
				if !strings.Contains(f.Message, "--max-concurrency 4 cap limited the offered load") || strings.Contains(f.Message, "CLIENT-BOUND") ||
					strings.Contains(f.Message, "more cores") {
					t.Errorf("message %q; want the cap named, not the client", f.Message)
				}
			}},
		{name: "cap limited heavily", id: "concurrency-cap-limited", want: true, sev: Warning,
			recs: many(200, plain), in: Input{Level: &runlog.Level{RequestRate: 10, MaxConcurrency: 4, DelayedArrivals: 20}},
			check: func(t *testing.T, f Finding) {
				// 20 of 200 = 10 %: the rate no longer describes the load.
				if f.Evidence["delayed_pct"] != 10.0 || !strings.Contains(f.Message, "20 of 200 arrivals (10 %)") {
					t.Errorf("finding %+v; want 20 of 200 (10 %%)", f)
				}
			}},
		{name: "few delayed arrivals", id: "concurrency-cap-limited", want: false,
			recs: many(200, plain), in: Input{Level: &runlog.Level{RequestRate: 10, MaxConcurrency: 4, DelayedArrivals: 1}}},
		{name: "client-bound by cpu", id: "client-bound", want: true, sev: Critical,
			recs: many(200, plain), in: Input{ClientCPU: 0.9}},
		{name: "cpu fine", id: "client-bound", want: false,
			recs: many(200, plain), in: Input{ClientCPU: 0.3}},

		{name: "retries amplify the load", id: "retry-amplification", want: true, sev: Critical,
			// 100 requests, 60 of them retried once (40 with a 429, 20
			// with a 503): 160 attempts, ×1.6.
			recs: func() []runlog.Record {
				recs := many(100, plain)
				for i := range 60 {
					r := plain(i).record(1000 + i)
					r.Retried, r.ErrorClass = true, runlog.ErrHTTP429
					if i >= 40 {
						r.ErrorClass = runlog.ErrHTTP5xx
					}
					recs = append(recs, r)
				}
				return recs
			}(),
			check: func(t *testing.T, f Finding) {
				by, _ := f.Evidence["retried_by_class"].(map[string]any)
				if f.Evidence["amplification_x"] != 1.6 || f.Evidence["retried_attempts"] != 60 || by["http_429"] != 40 || by["http_5xx"] != 20 ||
					!strings.Contains(f.Message, "160 attempts for 100 requests") {
					t.Errorf("evidence %v message %q", f.Evidence, f.Message)
				}
			}},
		{name: "a few retries are not news", id: "retry-amplification", want: false,
			recs: func() []runlog.Record {
				recs := many(100, plain)
				r := plain(0).record(1000)
				r.Retried, r.ErrorClass = true, runlog.ErrHTTP429
				return append(recs, r)
			}()},
		{name: "429s critical", id: "failures-http_429", want: true, sev: Critical,
			recs: many(100, func(i int) spec {
				s := plain(i)
				if i%10 == 0 {
					s.class = runlog.ErrHTTP429
				}
				return s
			}),
			check: func(t *testing.T, f Finding) {
				if f.Evidence["failed"] != 10 || f.Evidence["failed_pct"] != 10.0 || !strings.Contains(f.Message, "overload") {
					t.Errorf("finding %+v; want 10 failed, 10 %%, overload", f)
				}
			}},
		{name: "one timeout is a warning", id: "failures-timeout", want: true, sev: Warning,
			recs: many(100, func(i int) spec {
				s := plain(i)
				if i == 3 {
					s.class = runlog.ErrTimeout
				}
				return s
			})},
		{name: "no failures", id: "failures-http_429", want: false, recs: many(100, plain)},

		{name: "queueing: every bucket high", id: "ttft-queueing", want: true, sev: Warning,
			recs: many(200, func(i int) spec {
				s := plain(i)
				s.ttft, s.prompt = 3000, 500+1500*(i%2) // <1K and 1K-8K
				return s
			}),
			check: func(t *testing.T, f Finding) {
				want := map[string]any{"<1K": 3000.0, "1K-8K": 3000.0}
				if diff := cmp.Diff(want, f.Evidence["ttft_p99_ms_by_input"]); diff != "" {
					t.Errorf("by-input evidence (-want +got):\n%s", diff)
				}
				if f.Evidence["limit_source"] != "default" || f.Evidence["ttft_limit_ms"] != 2000.0 {
					t.Errorf("limit evidence %v; want default 2000", f.Evidence)
				}
			}},
		{name: "prefill: only long inputs high", id: "ttft-prefill", want: true, sev: Warning,
			recs: many(200, func(i int) spec {
				s := plain(i)
				s.prompt = 500
				if i%2 == 1 {
					s.ttft, s.prompt = 900, 9000 // ≥8K, above the SLO below
				}
				return s
			}), slo: "ttft:500"},
		{name: "prefill needs the SLO limit", id: "ttft-prefill", want: false,
			recs: many(200, func(i int) spec {
				s := plain(i)
				s.prompt = 500
				if i%2 == 1 {
					s.ttft, s.prompt = 900, 9000
				}
				return s
			})},
		{name: "one bucket cannot split", id: "ttft-high", want: true, sev: Warning,
			recs: many(200, func(i int) spec { s := plain(i); s.ttft = 2500; return s })},
		{name: "unstable TPOT is another pattern", id: "ttft-queueing", want: false,
			recs: many(200, func(i int) spec {
				s := plain(i)
				s.ttft, s.prompt = 3000, 500+1500*(i%2)
				if i%10 == 0 {
					s.itl = 300 // TPOT P99 300 > 2 × P50 60
				}
				return s
			})},
		{name: "TTFT within limit", id: "ttft-queueing", want: false, recs: many(200, plain)},

		{name: "TPOT faster than reading", id: "tpot-below-reading-speed", want: true, sev: Info,
			recs: many(100, func(i int) spec { s := plain(i); s.itl = 20; return s }),
			check: func(t *testing.T, f Finding) {
				// 194 / 20 = 9.7× margin, against the one cited figure.
				if f.Evidence["tpot_p50_ms"] != 20.0 || f.Evidence["speed_margin_x"] != 9.7 || !strings.Contains(f.Message, "194 ms/token") ||
					!strings.Contains(f.Message, "Brysbaert 2019") {
					t.Errorf("finding %+v; want tpot_p50_ms 20, speed_margin_x 9.7, 194 ms/token cited", f)
				}
			}},
		{name: "TPOT slower than reading", id: "tpot-below-reading-speed", want: false,
			recs: many(100, func(i int) spec { s := plain(i); s.itl = 250; return s })},
		{name: "reading speed is an input", id: "tpot-below-reading-speed", want: false,
			recs: many(100, func(i int) spec { s := plain(i); s.itl = 20; return s }), in: Input{ReadingSpeedMs: 15}},

		{name: "hidden reasoning", id: "hidden-wait", want: true, sev: Warning,
			recs: many(100, func(i int) spec { s := plain(i); s.n, s.hidden = 30, 10; return s }),
			check: func(t *testing.T, f Finding) {
				// TTP = 100 + 10 × 60 = 700 ms against TTFT 100 ms.
				if f.Evidence["ttp_p50_ms"] != 700.0 || f.Evidence["ttft_p50_ms"] != 100.0 {
					t.Errorf("evidence %v; want ttp 700, ttft 100", f.Evidence)
				}
			}},
		{name: "one hidden chunk is no wait", id: "hidden-wait", want: false,
			recs: many(100, func(i int) spec { s := plain(i); s.hidden = 1; return s })},

		{name: "cache optimistic", id: "cache-optimistic", want: true, sev: Warning,
			recs: many(100, func(i int) spec { s := plain(i); s.prompt, s.cached = 1000+i, 500; return s })},
		{name: "little cache", id: "cache-optimistic", want: false,
			recs: many(100, func(i int) spec { s := plain(i); s.prompt, s.cached = 1000+i, 100; return s })},

		{name: "uniform lengths", id: "uniform-lengths", want: true, sev: Warning,
			recs: many(100, func(i int) spec { s := plain(i); s.prompt, s.n = 1024, 128; return s }),
			check: func(t *testing.T, f Finding) {
				if f.Evidence["input_cv"] != 0.0 || f.Evidence["output_cv"] != 0.0 || !strings.HasPrefix(f.Message, "input and output") {
					t.Errorf("finding %+v; want both cv 0", f)
				}
			}},
		{name: "varied lengths", id: "uniform-lengths", want: false, recs: many(100, plain)},
		{name: "the random dataset's own fixed lengths", id: "uniform-lengths", want: true, sev: Info,
			// The default workload, not a mistake of the user's: no warning.
			recs: many(100, func(i int) spec { s := plain(i); s.prompt = 1024; return s }),
			in:   Input{Meta: &runlog.Meta{Dataset: "random", Levels: []runlog.Level{{}}}},
			check: func(t *testing.T, f Finding) {
				if f.Evidence["dataset"] != "random" || !strings.HasPrefix(f.Message, "Input lengths are fixed, as the random dataset sends them by default") {
					t.Errorf("finding %+v; want the default workload named", f)
				}
			}},

		{name: "concurrency one", id: "concurrency-one", want: true, sev: Warning,
			recs: many(100, plain), in: Input{Level: &runlog.Level{MaxConcurrency: 1}}},
		{name: "concurrency eight", id: "concurrency-one", want: false,
			recs: many(100, plain), in: Input{Level: &runlog.Level{MaxConcurrency: 8}}},
		{name: "concurrency one in a sweep", id: "concurrency-one", want: false,
			recs: many(100, plain), in: Input{Meta: twoLevels, Level: &runlog.Level{MaxConcurrency: 1}}},

		{name: "long tail", id: "long-tail", want: true, sev: Info,
			recs: many(200, func(i int) spec {
				s := plain(i)
				if i%50 == 0 {
					s.ttft = 10000
				}
				return s
			}),
			check: func(t *testing.T, f Finding) {
				// mean = (196×100 + 4×10000)/200 = 298; p99 index 197.01 of
				// the sorted values falls among the four 10000s.
				want := map[string]any{"mean_ms": 298.0, "p99_ms": 10000.0, "ratio": 33.56}
				if diff := cmp.Diff(want, f.Evidence["ttft"]); diff != "" {
					t.Errorf("ttft evidence (-want +got):\n%s", diff)
				}
			}},
		{name: "no tail", id: "long-tail", want: false, recs: many(200, plain)},

		{name: "small sample", id: "small-sample", want: true, sev: Warning,
			recs: many(20, plain),
			check: func(t *testing.T, f Finding) {
				if f.Evidence["p99_needs"] != 100 || f.Evidence["p95_needs"] != nil {
					t.Errorf("evidence %v; want p99 only (20 samples suffice for p95)", f.Evidence)
				}
			}},
		{name: "enough samples", id: "small-sample", want: false, recs: many(100, plain)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Summary = summarize(tt.recs, tt.slo)
			fs := Analyze(in)
			f, got := find(fs, tt.id)
			if got != tt.want {
				t.Fatalf("Analyze: finding %s present = %v; want %v (findings %v)", tt.id, got, tt.want, ids(fs))
			}
			if !got {
				return
			}
			if f.Severity != tt.sev {
				t.Errorf("%s severity = %s; want %s", tt.id, f.Severity, tt.sev)
			}
			if f.Message == "" || f.Evidence == nil {
				t.Errorf("%s has no message or evidence: %+v", tt.id, f)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

// queued is request i of an open-loop run sending every gap ms to one
// FIFO server that takes service ms per request (its first token 50 ms
// after it starts, then 11 tokens 15 ms apart): when service > gap the
// queue grows for the whole run.
func queued(n int, gap, service float64) []runlog.Record {
	start := 0.0
	return many(n, func(i int) spec {
		sent := float64(i) * gap
		start = max(sent, start)
		s := spec{sent: sent, ttft: start - sent + 50, n: 11, itl: (service - 50) / 10, prompt: 300 + 37*(i%17)}
		start += service
		return s
	})
}

func track(recs []runlog.Record) *Tracker {
	tr := NewTracker()
	for i := range recs {
		tr.Add(&recs[i])
	}
	return tr
}

func TestOverload(t *testing.T) {
	rate10 := &runlog.Level{RequestRate: 10}
	tests := []struct {
		name string
		recs []runlog.Record
		lv   *runlog.Level
		want bool
	}{
		// Sends every 100 ms, 200 ms of service each: request i starts at
		// 200·i ms, so its wait for the first token is 100·i + 50 ms.
		{"overloaded", queued(200, 100, 200), rate10, true},
		// 50 ms of service keeps up: every wait is 50 ms.
		{"healthy", queued(200, 100, 50), rate10, false},
		// The same queue, unpaced: no rate was offered to fall behind.
		{"closed loop", queued(200, 100, 200), &runlog.Level{}, false},
		// Behind a full cap the cap is the story (CapLimited).
		{"capped", queued(200, 100, 200), &runlog.Level{RequestRate: 10, MaxConcurrency: 4, DelayedArrivals: 150}, false},
		{"too few requests", queued(40, 100, 200), rate10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Summary: summarize(tt.recs, ""), Level: tt.lv, Requests: track(tt.recs)}
			f, got := Overload(in)
			if got != tt.want {
				t.Fatalf("Overload = %v (%+v); want %v", got, f, tt.want)
			}
			if _, inAll := find(Analyze(in), "overload"); inAll != tt.want {
				t.Errorf("Analyze has overload = %v; want %v", inAll, tt.want)
			}
			if !got {
				return
			}
			// Sending window 0 → 19.9 s. Mid-window (9.95 s): 100 sent, the
			// 49 starting by 9.6 s done (end 200·i + 200 ms) → 51 in flight;
			// at the last send (19.9 s) 200 sent, 99 done → 101. First third
			// (scheduled before 6.63 s): i = 0…66, median wait at i = 33:
			// 3350 ms; last third (from 13.27 s): i = 133…199, median at
			// i = 166: 16650 ms. 200 completed over 0 → 40 s: 5 req/s.
			want := map[string]any{
				"offered_rps": 10.0, "achieved_rps": 5.0, "in_flight_mid_window": 51.0, "in_flight_at_last_send": 101.0,
				"wait_first_third_p50_ms": 3350.0, "wait_last_third_p50_ms": 16650.0, "sending_window_s": 19.9, "requests": 200,
				"send_lag_p50_ms": 0.0, "send_lag_p99_ms": 0.0,
				"response_p99_ms": round2(mustP(t, in.Summary, stats.MetricResponse, 99)),
				"e2el_p99_ms":     round2(mustP(t, in.Summary, stats.MetricE2E, 99)),
				"ttft_p99_ms":     round2(mustP(t, in.Summary, stats.MetricTTFT, 99)),
			}
			if diff := cmp.Diff(want, f.Evidence); diff != "" {
				t.Errorf("evidence (-want +got):\n%s", diff)
			}
			if f.Severity != Critical || !strings.HasPrefix(f.Message, "OVERLOADED: the server did not keep up with the offered 10 req/s (it completed 5 req/s)") ||
				!strings.Contains(f.Message, "grew from 51 at mid-run to 101 at the last send") || !strings.Contains(f.Message, "rose from 3.4 s (first third of sends) to 16.6 s") {
				t.Errorf("overload %s: %q", f.Severity, f.Message)
			}
		})
	}
}

func mustP(t *testing.T, s *stats.Summary, name string, p float64) float64 {
	t.Helper()
	v, ok := s.MetricP(name, p)
	if !ok {
		t.Fatalf("summary has no %s P%v", name, p)
	}
	return v
}

// stallRecords builds 20 long decodes with 10 ms gaps, plus short requests
// whose first tokens arrive every 200 ms. When stall is true, each decode's
// gap that spans a short request's first token is 40 ms long and ends at it
// (the prefill held the batch); otherwise decodes keep their 10 ms pace and
// the first tokens land anywhere.
func stallRecords(stall bool) []runlog.Record {
	var recs []runlog.Record
	const horizon = 4000 // ms
	var prefills []int64
	for t := int64(205); t < horizon; t += 200 {
		prefills = append(prefills, t)
	}
	for d := range 20 {
		r := runlog.Record{ID: "d" + strconv.Itoa(d), Sent: 0, Status: 200}
		t := int64(50 + d) // stagger the streams by 1 ms
		k := 0
		for t < horizon {
			r.Chunks = append(r.Chunks, runlog.Chunk{T: t * ms, Tokens: 1, Visible: true})
			next := t + 10
			if stall && k < len(prefills) && next+30 >= prefills[k] {
				next = prefills[k] // held until the prefill ends
			}
			for k < len(prefills) && prefills[k] <= next {
				k++
			}
			t = next
		}
		r.CompletionTokens, r.End = len(r.Chunks), r.Chunks[len(r.Chunks)-1].T
		recs = append(recs, r)
	}
	for i, p := range prefills {
		recs = append(recs, runlog.Record{ID: "p" + strconv.Itoa(i), Sent: (p - 100) * ms, Status: 200, End: p * ms,
			Chunks: []runlog.Chunk{{T: p * ms, Tokens: 1, Visible: true}}, CompletionTokens: 1})
	}
	return recs
}

func TestPrefillStalls(t *testing.T) {
	tests := []struct {
		name  string
		stall bool
		want  bool
	}{
		{"spikes end at prefills", true, true},
		{"steady decode", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := stallRecords(tt.stall)
			tr := NewTracker()
			for i := range recs {
				tr.Add(&recs[i])
			}
			fs := Analyze(Input{Summary: summarize(recs, ""), Requests: tr})
			f, got := find(fs, "prefill-stalls-decode")
			if got != tt.want {
				t.Fatalf("prefill-stalls-decode present = %v; want %v (%v)", got, tt.want, ids(fs))
			}
			if got && (f.Severity != Warning || !strings.Contains(f.Message, "if it already chunks (vLLM V1 always does), lower its token budget")) {
				t.Errorf("finding %+v; want a warning whose advice holds whether or not the engine chunks", f)
			}
			if got && f.Evidence["spikes_at_prefill_pct"] != 100.0 {
				t.Errorf("spikes_at_prefill_pct = %v; want 100 (every spike ends at a first token)", f.Evidence["spikes_at_prefill_pct"])
			}
		})
	}
}

// TestPrefillStallsChunkedEngine: on an engine that already chunks its
// prefills the stall is stated as chunked prefill's cost (info), never as
// advice to turn on chunked prefill.
func TestPrefillStallsChunkedEngine(t *testing.T) {
	recs := stallRecords(true)
	tr := NewTracker()
	for i := range recs {
		tr.Add(&recs[i])
	}
	meta := &runlog.Meta{Levels: []runlog.Level{{}}, Simulated: runlog.Engine{EnableChunkedPrefill: true, MaxNumBatchedTokens: 8192}}
	f, ok := find(Analyze(Input{Summary: summarize(recs, ""), Meta: meta, Requests: tr}), "prefill-stalls-decode")
	if !ok {
		t.Fatal("prefill-stalls-decode missing")
	}
	if f.Severity != Info || strings.Contains(f.Message, "Split prefills") || !strings.Contains(f.Message, "already chunks prefills (up to 8192 tokens a step)") ||
		f.Evidence["max_num_batched_tokens"] != 8192 {
		t.Errorf("finding %+v; want info naming the engine's chunking and its budget", f)
	}
}

// TestPrefillStallsNotAligned keeps the spikes but moves the first tokens
// off the spike ends: coincidence, not alignment, must not trigger.
func TestPrefillStallsNotAligned(t *testing.T) {
	recs := stallRecords(true)
	for i := range recs {
		if strings.HasPrefix(recs[i].ID, "p") {
			recs[i].Chunks[0].T += 5 * ms // lands in the next ordinary gap
			recs[i].End = recs[i].Chunks[0].T
		}
	}
	tr := NewTracker()
	for i := range recs {
		tr.Add(&recs[i])
	}
	if f, ok := find(Analyze(Input{Summary: summarize(recs, ""), Requests: tr}), "prefill-stalls-decode"); ok {
		t.Errorf("prefill-stalls-decode fired with misaligned first tokens: %v", f.Evidence)
	}
}

func TestSLASentence(t *testing.T) {
	// TTFT = 12·i ms for i = 1..100: P50 at rank 49.5 = (600+612)/2 = 606;
	// P99 at rank 98.01 = 1188 + 0.01×12 = 1188.12 → "1.2 s". TPOT 40 ms.
	// Input 4096 tokens → "4K" (the summary has P90, not P95). Headroom
	// 1 − 1188.12/2000 = 0.406 → "~41 %".
	recs := many(100, func(i int) spec {
		return spec{sent: float64(i) * 10, ttft: 12 * float64(i+1), n: 11, itl: 40, prompt: 4096}
	})
	in := Input{Summary: summarize(recs, "ttft:2000"), Level: &runlog.Level{MaxConcurrency: 60}}
	got := SLASentence(in)
	// Every TTFT (≤ 1200 ms) is within 2 s: 100 % met, the SLO kept; the
	// bound is per request, as the terminal's SLO block counts it.
	want := "TTFT P50 606 ms, P99 1.2 s; TPOT P99 40 ms; input P95 4K tokens, concurrency 60; SLO per request TTFT <= 2 s: met by 100 % of requests, P99 headroom ~41 %"
	if got != want {
		t.Errorf("SLASentence =\n %q; want\n %q", got, want)
	}

	// A missed SLO says by how much: 12·(i+1) ≤ 1000 for i+1 ≤ 83, so 83 %
	// met against the 99 % target, and 1188.12/1000 − 1 = 18.8 % → "19 %"
	// over, for the tighter of the two constraints.
	in.Summary = summarize(recs, "ttft:1000 tpot:50")
	in.Level = &runlog.Level{RequestRate: 8}
	got = SLASentence(in)
	want = "TTFT P50 606 ms, P99 1.2 s; TPOT P99 40 ms; input P95 4K tokens, rate 8 req/s, peak concurrency " +
		strconv.Itoa(in.Summary.PeakConcurrency) + "; SLO per request TTFT <= 1 s, TPOT <= 50 ms: missed, met by 83 % of requests (target 99 %); TTFT P99 19 % over its bound"
	if got != want {
		t.Errorf("SLASentence =\n %q; want\n %q", got, want)
	}

	if met, ok := SLOMet(in.Summary); met || !ok {
		t.Errorf("SLOMet(83 %%) = %v, %v; want false, true", met, ok)
	}

	// Failures miss the SLO even when every P99 is within its bound: 5 of
	// 100 failed, 95 % met, short of 99 %; no P99 is over, so none is named.
	recs = many(100, func(i int) spec {
		s := spec{sent: float64(i) * 10, ttft: 100, n: 11, itl: 40, prompt: 4096}
		if i%20 == 0 {
			s.class = runlog.ErrHTTP5xx
		}
		return s
	})
	in = Input{Summary: summarize(recs, "ttft:2000"), Level: &runlog.Level{MaxConcurrency: 60}}
	got = SLASentence(in)
	want = "TTFT P50 100 ms, P99 100 ms; TPOT P99 40 ms; input P95 4K tokens, concurrency 60; SLO per request TTFT <= 2 s: missed, met by 95 % of requests (target 99 %)"
	if got != want {
		t.Errorf("SLASentence =\n %q; want\n %q", got, want)
	}
	if met, ok := SLOMet(summarize(recs, "")); ok || met {
		t.Errorf("SLOMet(no SLO) = %v, %v; want false, false", met, ok)
	}

	if got := SLASentence(Input{Summary: summarize(nil, "")}); got != "" {
		t.Errorf("SLASentence(no requests) = %q; want empty", got)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   float64
		dur  string
		toks string
	}{
		{4.25, "4.2 ms", "4"},
		{45, "45 ms", "45"},
		{999.4, "999 ms", "999"},
		{1000, "1 s", "1000"},
		{1024, "1 s", "1K"},
		{1536, "1.5 s", "1.5K"},
		{4096, "4.1 s", "4K"},
	}
	for _, tt := range tests {
		if got := dur(tt.in); got != tt.dur {
			t.Errorf("dur(%v) = %q; want %q", tt.in, got, tt.dur)
		}
		if got := tokens(tt.in); got != tt.toks {
			t.Errorf("tokens(%v) = %q; want %q", tt.in, got, tt.toks)
		}
	}
}

func TestFindingJSON(t *testing.T) {
	fs := []Finding{
		{ID: "client-bound", Severity: Critical, Message: "CLIENT-BOUND: x.", Evidence: map[string]any{"b": 2.5, "a": 1}},
	}
	j, err := json.Marshal(fs[:1])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(j); got != `[{"id":"client-bound","severity":"critical","message":"CLIENT-BOUND: x.","evidence":{"a":1,"b":2.5}}]` {
		t.Errorf("JSON = %s", got)
	}
}

// TestAnalyzeOrder checks the verdict comes first and the SLA sentence last.
func TestAnalyzeOrder(t *testing.T) {
	recs := many(20, func(i int) spec { s := plain(i); s.lag = 50 * float64(i); s.prompt, s.n = 1000, 10; return s })
	fs := Analyze(Input{Summary: summarize(recs, "ttft:2000")})
	got := ids(fs)
	if len(got) < 3 || got[0] != "client-bound" || got[len(got)-1] != "sla" {
		t.Errorf("Analyze order = %v; want client-bound first, sla last", got)
	}
	if !slices.Contains(got, "uniform-lengths") || !slices.Contains(got, "small-sample") {
		t.Errorf("Analyze = %v; want uniform-lengths and small-sample too", got)
	}
	if Analyze(Input{}) != nil {
		t.Error("Analyze(no summary) returned findings")
	}
}

// BenchmarkTracker feeds 100,000 requests of 128 tokens, as a large
// benchmark's records file would.
func BenchmarkTracker(b *testing.B) {
	recs := many(1000, func(i int) spec { s := plain(i); s.n, s.itl = 128, 10; return s })
	b.ReportAllocs()
	for b.Loop() {
		tr := NewTracker()
		for range 100 {
			for i := range recs {
				tr.Add(&recs[i])
			}
		}
		prefillStalls(Input{Requests: tr})
	}
}

func TestEveryErrorClassHasAdvice(t *testing.T) {
	for _, c := range runlog.ErrorClasses {
		if failureAdvice[c] == "" {
			t.Errorf("error class %q has no failure advice", c)
		}
	}
}

// TestTrackerBounded runs the stall scenario ten times over, one after the
// other, through a Tracker whose cap on first tokens is far below their
// number: it keeps no more than the cap, and still tells stalls (every
// sampled spike ends at a first token) from a steady decode.
func TestTrackerBounded(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stall bool
	}{{"spikes end at prefills", true}, {"steady decode", false}} {
		t.Run(tt.name, func(t *testing.T) {
			var recs []runlog.Record
			for k := range int64(10) {
				for _, r := range stallRecords(tt.stall) {
					shift := k * 4000 * ms
					r.Sent, r.End = r.Sent+shift, r.End+shift
					r.Chunks = slices.Clone(r.Chunks)
					for i := range r.Chunks {
						r.Chunks[i].T += shift
					}
					recs = append(recs, r)
				}
			}
			tr := NewTracker()
			tr.limit = 64
			for i := range recs {
				tr.Add(&recs[i])
			}
			if len(tr.firsts) > tr.limit || tr.level == 0 {
				t.Errorf("Tracker kept %d first tokens at level %d; want ≤ %d past level 0", len(tr.firsts), tr.level, tr.limit)
			}
			f, got := find(Analyze(Input{Summary: summarize(recs, ""), Requests: tr}), "prefill-stalls-decode")
			if got != tt.stall {
				t.Fatalf("prefill-stalls-decode present = %v; want %v", got, tt.stall)
			}
			if got && f.Evidence["spikes_at_prefill_pct"] != 100.0 {
				t.Errorf("spikes_at_prefill_pct = %v; want 100", f.Evidence["spikes_at_prefill_pct"])
			}
		})
	}
}

// TestSLASentenceIntervals: with intervals asked for, the sentence quotes
// each figure's interval (none said for a P99 of 100 requests) and says
// when the SLO verdict is within its own interval. Given intervals: TTFT
// P50 606 ms [580, 640]; attainment 99.5 % [98.1, 99.87 %] spans the 99 %
// target, so the kept SLO could be missed on a rerun.
func TestSLASentenceIntervals(t *testing.T) {
	recs := many(100, func(i int) spec {
		return spec{sent: float64(i) * 10, ttft: 12 * float64(i+1), n: 11, itl: 40, prompt: 4096}
	})
	s := summarize(recs, "ttft:2000")
	s.Options.Confidence = 0.95
	for i := range s.Metrics {
		if s.Metrics[i].Name == stats.MetricTTFT {
			s.Metrics[i].MedianCI = stats.Interval{Lo: 580, Hi: 640, Level: 0.95}
			for j := range s.Metrics[i].Percentiles {
				if s.Metrics[i].Percentiles[j].P == 50 {
					s.Metrics[i].Percentiles[j].CI = s.Metrics[i].MedianCI
				}
			}
		}
	}
	s.SLO.Attainment, s.SLO.AttainmentCI = 0.995, stats.Interval{Lo: 0.981, Hi: 0.9987, Level: 0.95}
	got := SLASentence(Input{Summary: s, Level: &runlog.Level{MaxConcurrency: 60}})
	want := "TTFT P50 606 ms [580–640 ms], P99 1.2 s (too few for an interval); TPOT P99 40 ms (too few for an interval); input P95 4K tokens, concurrency 60; " +
		"SLO per request TTFT <= 2 s: met by 99.5 % [98.1–99.87 %] of requests, but the interval spans the 99 % target: a rerun could miss it, P99 headroom ~41 %"
	if got != want {
		t.Errorf("SLASentence =\n %q; want\n %q", got, want)
	}
}

// TestCacheOptimisticNotForSharedHistories: 40 % of prompt tokens from the
// prefix cache flags a random workload's TTFT as optimistic, but not a
// conversation's or an agent trace's, whose hits are the traffic's own.
func TestCacheOptimisticNotForSharedHistories(t *testing.T) {
	s := &stats.Summary{InputTokens: 1000, CachedTokens: 400, CachedShare: 0.4}
	for ds, want := range map[string]bool{"random": true, "sharegpt": true, "conversations": false, "weka": false, "TraceLab": false, "otel": false} {
		if _, got := cacheOptimistic(Input{Summary: s, Meta: &runlog.Meta{Dataset: ds}}); got != want {
			t.Errorf("dataset %s: cache-optimistic %v, want %v", ds, got, want)
		}
	}
}

// setCI sets metric name's p-th percentile interval (the median's too for
// p 50) on s.
func setCI(s *stats.Summary, name string, p float64, iv stats.Interval) {
	for i := range s.Metrics {
		if s.Metrics[i].Name != name {
			continue
		}
		for j := range s.Metrics[i].Percentiles {
			if s.Metrics[i].Percentiles[j].P == p {
				s.Metrics[i].Percentiles[j].CI = iv
			}
		}
		if p == 50 {
			s.Metrics[i].MedianCI = iv
		}
	}
}

// TestFindingsNeedTheirDifferenceBeyondTheInterval: a rule whose figure
// clears its bar fires without an interval, and with one that clears the
// bar too, but not when the interval reaches back across the bar: the
// difference could be the run's noise.
func TestFindingsNeedTheirDifferenceBeyondTheInterval(t *testing.T) {
	// TTFT P99 above the 2 s default with a stable TPOT; TPOT P50 of 40 ms
	// below the 194 ms reading speed.
	recs := many(400, func(i int) spec {
		return spec{sent: float64(i) * 10, ttft: 100 + 8*float64(i), n: 11, itl: 40, prompt: 300}
	})
	for _, tt := range []struct {
		id, metric string
		p          float64
		clear, not stats.Interval
	}{
		{"ttft-high", stats.MetricTTFT, 99, stats.Interval{Lo: 2500, Hi: 3300, Level: 0.95}, stats.Interval{Lo: 1900, Hi: 3300, Level: 0.95}},
		{"tpot-below-reading-speed", stats.MetricTPOT, 50, stats.Interval{Lo: 38, Hi: 42, Level: 0.95}, stats.Interval{Lo: 38, Hi: 200, Level: 0.95}},
	} {
		s := summarize(recs, "")
		if _, ok := find(Analyze(Input{Summary: s}), tt.id); !ok {
			t.Fatalf("%s: no finding without intervals; the records are built to trigger it", tt.id)
		}
		setCI(s, tt.metric, tt.p, tt.clear)
		if _, ok := find(Analyze(Input{Summary: s}), tt.id); !ok {
			t.Errorf("%s: quiet with the interval %+v clear of its bar", tt.id, tt.clear)
		}
		setCI(s, tt.metric, tt.p, tt.not)
		if f, ok := find(Analyze(Input{Summary: s}), tt.id); ok {
			t.Errorf("%s fired with the interval %+v across its bar: %s", tt.id, tt.not, f.Message)
		}
	}

	// A long tail: P99 4× the mean fires; an interval whose low end is
	// within 3× the mean's high end does not.
	tail := many(400, func(i int) spec {
		ttft := 100.0
		if i%50 == 0 {
			ttft = 3000
		}
		return spec{sent: float64(i) * 10, ttft: ttft, n: 11, itl: 40, prompt: 300}
	})
	s := summarize(tail, "")
	if _, ok := find(Analyze(Input{Summary: s}), "long-tail"); !ok {
		t.Fatal("long-tail: no finding without intervals")
	}
	m, _ := s.Metric(stats.MetricTTFT)
	setCI(s, stats.MetricTTFT, 99, stats.Interval{Lo: 2.9 * m.Mean, Hi: 3000, Level: 0.95})
	if f, ok := find(Analyze(Input{Summary: s}), "long-tail"); ok && f.Evidence[stats.MetricTTFT] != nil {
		t.Errorf("long-tail named TTFT with its P99's low end at 2.9× the mean: %s", f.Message)
	}
}
