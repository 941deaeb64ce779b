package promexport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

const ms = int64(time.Millisecond)

// histLines renders the classic exposition of a histogram series holding
// observations whose smallest containing bucket is firstLE (all of them
// fall in one bucket in these tests), with the given sum and count.
func histLines(name, labels string, firstLE float64, sum float64, count int) string {
	var b strings.Builder
	for _, le := range requestBuckets {
		n := 0
		if le >= firstLE {
			n = count
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %d\n", name, labels, le, n)
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, labels, count)
	fmt.Fprintf(&b, "%s_sum{%s} %g\n%s_count{%s} %d\n", name, labels, sum, name, labels, count)
	return b.String()
}

func TestMetricsExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	slo, err := stats.ParseSLO("ttft:100 tpot:20")
	if err != nil {
		t.Fatal(err)
	}
	now := int64(0) // the windows start at creation
	m, err := NewMetrics(MetricsOptions{Registerer: reg, SLO: slo, MaxModels: 1, Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// rec1: TTFT 50 ms, TPOT (70-50)/(3-1) = 10 ms: meets the SLO. 100
	// prompt tokens: bucket <1K.
	rec1 := runlog.Record{ID: "1", Status: 200, PromptTokens: 100, CompletionTokens: 3, CachedTokens: 10,
		Chunks: []runlog.Chunk{{T: 50 * ms, Tokens: 1, Visible: true}, {T: 60 * ms, Tokens: 1, Visible: true}, {T: 70 * ms, Tokens: 1, Visible: true}}}
	// rec2: sent at 1 s, TTFT 150 ms > 100 ms: misses. 2000 prompt tokens:
	// bucket 1K-8K.
	rec2 := runlog.Record{ID: "2", Status: 200, Sent: 1000 * ms, PromptTokens: 2000, CompletionTokens: 2,
		Chunks: []runlog.Chunk{{T: 1150 * ms, Tokens: 1}, {T: 1200 * ms, Tokens: 1, Visible: true}}}
	// rec3: rate limited; no prompt length known: bucket <1K.
	rec3 := runlog.Record{ID: "3", Status: 429, ErrorClass: runlog.ErrHTTP429, Error: "HTTP 429"}
	// rec4: a second model beyond MaxModels 1: "other". One token at 30 ms:
	// no TPOT, which meets a TPOT limit; TTFT 30 ms meets: good.
	rec4 := runlog.Record{ID: "4", Status: 200, PromptTokens: 5, CompletionTokens: 1,
		Chunks: []runlog.Chunk{{T: 30 * ms, Tokens: 1, Visible: true}}}
	warm := runlog.Record{ID: "w", Warmup: true, Status: 200}
	now = int64(10 * time.Second)
	m.ObserveLabeled(&rec1, "m", RouteChat)
	m.ObserveLabeled(&rec2, "m", RouteChat)
	m.ObserveLabeled(&rec3, "m", RouteChat)
	m.ObserveLabeled(&rec4, "other-model", RouteCompletions)
	m.ObserveLabeled(&warm, "m", RouteChat)
	now = int64(10500 * time.Millisecond)

	// Windows at 10.5 s: all four finished at 10 s, inside both windows,
	// which began with the Metrics at 0: 10.5 s long. Good: rec1 and rec4,
	// 2 of 4 = 0.5; goodput 2 / 10.5 s = 0.19047619047619047 req/s.
	chat := `model="m",route="/v1/chat/completions"`
	want := `
# HELP goodput_requests_total Finished streamed completion requests by upstream status class (none: no response).
# TYPE goodput_requests_total counter
goodput_requests_total{input_bucket="1K-8K",` + chat + `,status_class="2xx"} 1
goodput_requests_total{input_bucket="<1K",` + chat + `,status_class="2xx"} 1
goodput_requests_total{input_bucket="<1K",` + chat + `,status_class="4xx"} 1
goodput_requests_total{input_bucket="<1K",model="other",route="/v1/completions",status_class="2xx"} 1
# HELP goodput_request_failures_total Failed streamed completion requests by error class.
# TYPE goodput_request_failures_total counter
goodput_request_failures_total{class="http_429",` + chat + `} 1
# HELP goodput_slo_met_requests_total Finished streamed requests that met every --goodput constraint.
# TYPE goodput_slo_met_requests_total counter
goodput_slo_met_requests_total{input_bucket="1K-8K",` + chat + `} 0
goodput_slo_met_requests_total{input_bucket="<1K",` + chat + `} 1
goodput_slo_met_requests_total{input_bucket="<1K",model="other",route="/v1/completions"} 1
# HELP goodput_output_tokens_total Generated tokens of successful streamed requests.
# TYPE goodput_output_tokens_total counter
goodput_output_tokens_total{` + chat + `} 5
goodput_output_tokens_total{model="other",route="/v1/completions"} 1
# HELP goodput_input_tokens_total Prompt tokens of successful streamed requests.
# TYPE goodput_input_tokens_total counter
goodput_input_tokens_total{` + chat + `} 2100
goodput_input_tokens_total{model="other",route="/v1/completions"} 5
# HELP goodput_cached_input_tokens_total Prompt tokens served from the server's prefix cache, successful streamed requests.
# TYPE goodput_cached_input_tokens_total counter
goodput_cached_input_tokens_total{` + chat + `} 10
goodput_cached_input_tokens_total{model="other",route="/v1/completions"} 0
# HELP goodput_slo_attainment_ratio Fraction of streamed requests finished in the window that met every --goodput constraint (failed requests count as not met); absent while the window is empty.
# TYPE goodput_slo_attainment_ratio gauge
goodput_slo_attainment_ratio{window="1m"} 0.5
goodput_slo_attainment_ratio{window="5m"} 0.5
# HELP goodput_slo_goodput_requests_per_second Requests per second finished in the window that met every --goodput constraint.
# TYPE goodput_slo_goodput_requests_per_second gauge
goodput_slo_goodput_requests_per_second{window="1m"} 0.19047619047619047
goodput_slo_goodput_requests_per_second{window="5m"} 0.19047619047619047
# HELP goodput_slo_limit_seconds The --goodput constraints: the limit on each metric (ttft, tpot, e2el, ttp) that has one.
# TYPE goodput_slo_limit_seconds gauge
goodput_slo_limit_seconds{metric="tpot"} 0.02
goodput_slo_limit_seconds{metric="ttft"} 0.1
# HELP goodput_time_to_first_token_seconds Time from sending a request to the first chunk carrying a generated token (content or reasoning), successful streamed requests.
# TYPE goodput_time_to_first_token_seconds histogram
` +
		// TTFTs: rec2 0.15 s (first bucket 0.25), rec1 0.05 s (bucket
		// 0.05, bounds are inclusive), rec4 0.03 s (bucket 0.05).
		histLines("goodput_time_to_first_token_seconds", `input_bucket="1K-8K",`+chat, 0.25, 0.15, 1) +
		histLines("goodput_time_to_first_token_seconds", `input_bucket="<1K",`+chat, 0.05, 0.05, 1) +
		histLines("goodput_time_to_first_token_seconds", `input_bucket="<1K",model="other",route="/v1/completions"`, 0.05, 0.03, 1)
	names := []string{"goodput_requests_total", "goodput_request_failures_total", "goodput_slo_met_requests_total",
		"goodput_output_tokens_total", "goodput_input_tokens_total", "goodput_cached_input_tokens_total",
		"goodput_slo_attainment_ratio", "goodput_slo_goodput_requests_per_second", "goodput_slo_limit_seconds",
		"goodput_time_to_first_token_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// TPOT: rec1 10 ms, rec2 (1200-1150)/(2-1) = 50 ms; ITL: rec1's two
	// 10 ms gaps and rec2's 50 ms gap.
	for _, c := range []struct {
		name    string
		h       *prometheus.HistogramVec
		bucket  string
		count   uint64
		sumSecs float64
	}{
		{"tpot <1K", m.tpot, "<1K", 1, 0.01},
		{"tpot 1K-8K", m.tpot, "1K-8K", 1, 0.05},
		{"itl <1K", m.itl, "<1K", 2, 0.02},
		{"itl 1K-8K", m.itl, "1K-8K", 1, 0.05},
		{"ttp 1K-8K", m.ttp, "1K-8K", 1, 0.2},
		{"e2e <1K", m.e2e, "<1K", 1, 0.07},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pb = histogramOf(t, c.h.WithLabelValues("m", RouteChat, c.bucket))
			if pb.GetSampleCount() != c.count || !near(pb.GetSampleSum(), c.sumSecs) {
				t.Errorf("count, sum = %d, %g; want %d, %g", pb.GetSampleCount(), pb.GetSampleSum(), c.count, c.sumSecs)
			}
			if pb.Schema == nil || len(pb.PositiveSpan) == 0 {
				t.Errorf("no native buckets: schema %v spans %v", pb.Schema, pb.PositiveSpan)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestMetricsLint runs promlint over every family Metrics registers, each
// with a sample (the windowed gauges need an SLO and an observation).
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(MetricsOptions{Registerer: reg, SLO: stats.SLO{TTFT: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveLabeled(&runlog.Record{Status: 200, PromptTokens: 3, CompletionTokens: 2,
		Chunks: []runlog.Chunk{{T: 10 * ms, Tokens: 1, Visible: true}, {T: 20 * ms, Tokens: 1, Visible: true}}}, "m", RouteChat)
	m.ObserveLabeled(&runlog.Record{Status: 503, ErrorClass: runlog.ErrHTTP5xx}, "m", RouteChat)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 16 {
		t.Errorf("gathered %d families; want every metric (16)", len(mfs))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func TestModelLabels(t *testing.T) {
	long := strings.Repeat("x", maxModelLen+1)
	tests := []struct {
		name  string
		allow []string
		max   int
		in    []string
		want  []string
	}{
		{"first come up to the cap", nil, 2, []string{"a", "b", "c", "a"}, []string{"a", "b", "other", "a"}},
		{"allow-list", []string{"b"}, 0, []string{"a", "b"}, []string{"other", "b"}},
		{"empty is unknown", nil, 2, []string{""}, []string{"unknown"}},
		{"junk is other", nil, 5, []string{long, "a\x00b", "\xff"}, []string{"other", "other", "other"}},
		{"reserved names", nil, 5, []string{"other", "unknown"}, []string{"other", "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s modelSet
			s.init(tt.allow, tt.max)
			for i, in := range tt.in {
				if got := s.label(in); got != tt.want[i] {
					t.Errorf("label(%q) = %q; want %q", in, got, tt.want[i])
				}
			}
		})
	}
}

func TestStatusClassAndBuckets(t *testing.T) {
	for _, c := range []struct {
		code int
		want string
	}{{0, "none"}, {101, "1xx"}, {200, "2xx"}, {302, "3xx"}, {429, "4xx"}, {503, "5xx"}, {700, "none"}} {
		if got := StatusClass(c.code); got != c.want {
			t.Errorf("StatusClass(%d) = %q; want %q", c.code, got, c.want)
		}
	}
	if got, want := bucketNames([]int{1024, 8192}), []string{"<1K", "1K-8K", ">=8K"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("bucketNames(1024, 8192) = %q; want %q", got, want)
	}
	if got := bucketNames([]int{500}); strings.Join(got, " ") != "<500 >=500" {
		t.Errorf("bucketNames(500) = %q; want [<500 >=500]", got)
	}
	m := &Metrics{edges: []int{1024, 8192}}
	// Edges belong to the bucket above them, as in stats.
	for n, want := range map[int]int{0: 0, 1023: 0, 1024: 1, 8191: 1, 8192: 2} {
		if got := m.bucketOf(n); got != want {
			t.Errorf("bucketOf(%d) = %d; want %d", n, got, want)
		}
	}
}

func TestMeetsSLO(t *testing.T) {
	// One token at 40 ms, visible: TTFT = TTP = E2E = 40 ms, no TPOT.
	one := runlog.Record{Chunks: []runlog.Chunk{{T: 40 * ms, Tokens: 1, Visible: true}}, CompletionTokens: 1}
	// Hidden tokens only: no TTP.
	hidden := runlog.Record{Chunks: []runlog.Chunk{{T: 40 * ms, Tokens: 1}, {T: 50 * ms, Tokens: 1}}, CompletionTokens: 2}
	failed := one
	failed.ErrorClass = runlog.ErrStream
	tests := []struct {
		name string
		slo  stats.SLO
		rec  runlog.Record
		want bool
	}{
		{"ttft met at the limit", stats.SLO{TTFT: 40 * time.Millisecond}, one, true},
		{"ttft missed", stats.SLO{TTFT: 39 * time.Millisecond}, one, false},
		{"no tpot meets tpot", stats.SLO{TPOT: time.Millisecond}, one, true},
		{"tpot 10 ms missed", stats.SLO{TPOT: 9 * time.Millisecond}, hidden, false},
		{"no visible token misses ttp", stats.SLO{TTP: time.Hour}, hidden, false},
		{"e2e", stats.SLO{E2E: 50 * time.Millisecond}, hidden, true},
		{"failed never meets", stats.SLO{TTFT: time.Hour}, failed, false},
		{"no token misses ttft", stats.SLO{TTFT: time.Hour}, runlog.Record{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.slo.Met(&tt.rec); got != tt.want {
				t.Errorf("SLO(%v).Met = %t; want %t", tt.slo, got, tt.want)
			}
		})
	}
}

func TestNewMetricsNeedsRegisterer(t *testing.T) {
	if _, err := NewMetrics(MetricsOptions{}); err == nil {
		t.Error("NewMetrics(no Registerer) = nil error; want one")
	}
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(MetricsOptions{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(MetricsOptions{Registerer: reg}); err == nil {
		t.Error("NewMetrics twice on one registry = nil error; want a duplicate registration error")
	}
}

// histogramOf reads one histogram series.
func histogramOf(t *testing.T, o prometheus.Observer) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

// TestObserveUnstreamed: a non-streamed answer counts, with its E2E and
// tokens, but gives no per-token timing samples.
func TestObserveUnstreamed(t *testing.T) {
	m, err := NewMetrics(MetricsOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	rec := runlog.Record{Status: 200, PromptTokens: 7, CompletionTokens: 5,
		Chunks: []runlog.Chunk{{T: 80 * ms, Tokens: 5, Visible: true}}}
	m.ObserveUnstreamed(&rec, "m", RouteChat)
	for _, c := range []struct {
		name string
		h    *prometheus.HistogramVec
		want uint64
	}{{"e2e", m.e2e, 1}, {"ttft", m.ttft, 0}, {"ttp", m.ttp, 0}, {"itl", m.itl, 0}, {"tpot", m.tpot, 0}, {"output tokens", m.outTok, 1}} {
		if got := histogramOf(t, c.h.WithLabelValues("m", RouteChat, "<1K")).GetSampleCount(); got != c.want {
			t.Errorf("%s samples = %d; want %d", c.name, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("m", RouteChat, "<1K", "2xx")); got != 1 {
		t.Errorf("requests_total = %v; want 1", got)
	}
}
