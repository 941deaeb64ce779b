package simserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
)

// slowRun is what one streamed completion showed in a synctest bubble.
type slowRun struct {
	departures []int64            // server ns of each token chunk
	metrics    *perRequestMetrics // the usage chunk's per-request timing
	ttftSum    float64            // vllm:time_to_first_token_seconds' sum
	e2eSum     float64            // vllm:e2e_request_latency_seconds' sum
	factor     float64            // goodput_sim_slowdown_factor
}

// runSlowed serves one streamed completion of a 300-token prompt and 8
// tokens in a bubble (fake clock). setup, when set, runs before the
// request, on the server (to POST a slowdown through its handler).
func runSlowed(t *testing.T, opt Options, setup func(s *Server)) slowRun {
	t.Helper()
	var out slowRun
	synctest.Test(t, func(t *testing.T) {
		s, err := New(testConfig(), opt)
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		if setup != nil {
			setup(s)
		}
		w := &flushWriter{now: s.clock}
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, words(300))
		var wg sync.WaitGroup
		wg.Go(func() {
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body)))
		})
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		wg.Wait()
		cancel()
		<-done
		for _, f := range w.flushes {
			if strings.Contains(f.data, `"text":" `) {
				out.departures = append(out.departures, f.t)
			}
			if i := strings.Index(f.data, `"metrics":`); i >= 0 {
				var c struct {
					Metrics *perRequestMetrics `json:"metrics"`
				}
				data := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f.data), "data: "))
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					t.Fatalf("usage chunk %q: %v", f.data, err)
				}
				out.metrics = c.Metrics
			}
		}
		mfs, err := s.gatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "vllm:time_to_first_token_seconds":
				out.ttftSum = mf.Metric[0].GetHistogram().GetSampleSum()
			case "vllm:e2e_request_latency_seconds":
				out.e2eSum = mf.Metric[0].GetHistogram().GetSampleSum()
			case "goodput_sim_slowdown_factor":
				out.factor = mf.Metric[0].GetGauge().GetValue()
			}
		}
	})
	return out
}

// TestSlowdownStretchesIterations checks that a slowdown of 3, set through
// POST /goodput/slowdown, makes every token leave 3 times as late: TTFT
// and TPOT (and so E2E) triple, in the stream, in the per-request timing
// and in /metrics.
func TestSlowdownStretchesIterations(t *testing.T) {
	base := runSlowed(t, Options{}, nil)
	slow := runSlowed(t, Options{}, func(s *Server) {
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/goodput/slowdown?factor=3", nil))
		if w.Code != 200 {
			t.Fatalf("POST /goodput/slowdown = %d %s", w.Code, w.Body)
		}
	})
	if len(base.departures) != 8 || base.metrics == nil || slow.metrics == nil {
		t.Fatalf("%d token chunks, metrics %v, %v; want 8 and both", len(base.departures), base.metrics, slow.metrics)
	}
	var want []int64
	for _, d := range base.departures {
		want = append(want, 3*d)
	}
	if diff := cmp.Diff(want, slow.departures); diff != "" {
		t.Errorf("token departures slowed 3× (-3 × unslowed +slowed):\n%s", diff)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v; want %v", name, got, want)
		}
	}
	near("prefill ms (time_to_first_token_ms)", *slow.metrics.TimeToFirstTokenMs, 3**base.metrics.TimeToFirstTokenMs)
	near("decode ms (generation_time_ms)", *slow.metrics.GenerationTimeMs, 3**base.metrics.GenerationTimeMs)
	near("mean ITL ms", *slow.metrics.MeanITLMs, 3**base.metrics.MeanITLMs)
	near("TTFT histogram sum", slow.ttftSum, 3*base.ttftSum)
	near("E2E histogram sum", slow.e2eSum, 3*base.e2eSum)
	if base.factor != 1 || slow.factor != 3 {
		t.Errorf("goodput_sim_slowdown_factor = %v, %v; want 1, 3", base.factor, slow.factor)
	}
}

// TestSlowdownScheduled checks Options.SlowdownAfter: iterations that
// start before it run at full speed, those that start after it 3 times as
// long.
func TestSlowdownScheduled(t *testing.T) {
	base := runSlowed(t, Options{}, nil)
	if len(base.departures) != 8 {
		t.Fatalf("%d token chunks; want 8", len(base.departures))
	}
	after := base.departures[2] // the start of the 4th iteration
	got := runSlowed(t, Options{Slowdown: 3, SlowdownAfter: time.Duration(after)}, nil)
	var want []int64
	start, prev := int64(0), int64(0)
	for _, d := range base.departures {
		f := int64(1)
		if start >= after {
			f = 3
		}
		end := start + f*(d-prev)
		want = append(want, end)
		start, prev = end, d
	}
	if diff := cmp.Diff(want, got.departures); diff != "" {
		t.Errorf("departures with a slowdown of 3 from %d ns (-want +got):\n%s", after, diff)
	}
	if want[2] != base.departures[2] || want[7] == base.departures[7] {
		t.Fatalf("the expectation itself is wrong: %v vs %v", want, base.departures)
	}
}

func TestSlowdownEndpoint(t *testing.T) {
	s, url := newTestServer(t, testConfig(), Options{ServedModelName: "m"})
	req := func(method, path, contentType, body string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		want                            string // in the body
		factor                          float64
	}{
		{"get", "GET", "/goodput/slowdown", "", "", 200, `{"factor":1}`, 1},
		{"query", "POST", "/goodput/slowdown?factor=3", "", "", 200, `{"factor":3}`, 3},
		{"json", "POST", "/goodput/slowdown", "application/json", `{"factor":1.5}`, 200, `{"factor":1.5}`, 1.5},
		{"form", "POST", "/goodput/slowdown", "application/x-www-form-urlencoded", `factor=2`, 200, `{"factor":2}`, 2},
		{"zero", "POST", "/goodput/slowdown?factor=0", "", "", 400, "factor", 2},
		{"negative", "POST", "/goodput/slowdown", "", `factor=-1`, 400, "factor", 2},
		{"too big", "POST", "/goodput/slowdown?factor=1001", "", "", 400, "at most 1000", 2},
		{"not a number", "POST", "/goodput/slowdown?factor=fast", "", "", 400, `want a number, got \"fast\"`, 2},
		{"missing", "POST", "/goodput/slowdown", "", "", 400, "factor: required", 2},
		{"json without factor", "POST", "/goodput/slowdown", "", `{"f":2}`, 400, "factor: required", 2},
		{"method", "PUT", "/goodput/slowdown", "", "", 405, "not allowed", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := req(tt.method, tt.path, tt.ctype, tt.body)
			if code != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%s %s %q = %d %s; want %d with %s", tt.method, tt.path, tt.body, code, body, tt.status, tt.want)
			}
			if got := s.Slowdown(); got != tt.factor {
				t.Errorf("factor now %v; want %v", got, tt.factor)
			}
		})
	}
	if _, body := httpGet(t, url+"/metrics"); !strings.Contains(body, `goodput_sim_slowdown_factor{model_name="m"} 2`) {
		t.Errorf("/metrics lacks the factor 2:\n%s", tail(body, 2000))
	}
}

func TestSlowdownOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  Options
		ok   bool
	}{
		{"none", Options{}, true},
		{"at once", Options{Slowdown: 2}, true},
		{"later", Options{Slowdown: 0.5, SlowdownAfter: time.Minute}, true},
		{"negative", Options{Slowdown: -1}, false},
		{"NaN", Options{Slowdown: math.NaN()}, false},
		{"too big", Options{Slowdown: MaxSlowdown + 1}, false},
		{"after without factor", Options{SlowdownAfter: time.Minute}, false},
		{"negative after", Options{Slowdown: 2, SlowdownAfter: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(sim.DefaultConfig(), tt.opt)
			if (err == nil) != tt.ok {
				t.Errorf("New(%+v) = %v; want ok %v", tt.opt, err, tt.ok)
			}
		})
	}
	s, err := New(sim.DefaultConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSlowdown(0); err == nil {
		t.Error("SetSlowdown(0) = nil; want an error")
	}
	if err := s.SetSlowdown(4); err != nil || s.Slowdown() != 4 {
		t.Errorf("SetSlowdown(4) = %v, then Slowdown() = %v; want nil, 4", err, s.Slowdown())
	}
}
