package servermetrics

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, body string, atNS int64) Snapshot {
	t.Helper()
	s, err := Parse(strings.NewReader(body), atNS)
	if err != nil {
		t.Fatalf("Parse at %d: %v", atNS, err)
	}
	return s
}

// Two vLLM scrapes 10 s apart, worked by hand.
const (
	scrapeA = `# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 1000
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 500
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 2000
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 500
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="0.1"} 10
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="0.5"} 20
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="1.0"} 30
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="+Inf"} 30
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 30
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 9
`
	scrapeB = `# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 6000
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 3000
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 6000
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 2500
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 6
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.7
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="0.1"} 20
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="0.5"} 60
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="1.0"} 80
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="+Inf"} 80
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 80
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 29
`
)

func TestComputeTwoScrapes(t *testing.T) {
	a := mustParse(t, scrapeA, 0)
	b := mustParse(t, scrapeB, 10e9)
	w, err := Compute([]Snapshot{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// Rates over 10 s: prompt (6000−1000)/10 = 500 tokens/s, generation
	// (3000−500)/10 = 250 tokens/s; prefix hit rate (2500−500)/(6000−2000)
	// = 0.5.
	//
	// TTFT inside the window: buckets le 0.1 → 20−10 = 10, le 0.5 → 60−20
	// = 40, le 1 → 80−30 = 50, +Inf → 50; count 50, sum 29−9 = 20, so the
	// mean is 0.4 s.
	//   P50: rank 0.5 × 50 = 25 falls in (0.1, 0.5], which holds 30
	//        observations after the 10 below it: 0.1 + 0.4 × (25−10)/30 = 0.3.
	//   P90: rank 45 falls in (0.5, 1], 10 after 40: 0.5 + 0.5 × 5/10 = 0.75.
	//   P99: rank 49.5: 0.5 + 0.5 × 9.5/10 = 0.975.
	if w.Seconds() != 10 || w.Scrapes != 2 || w.Kind != KindVLLM {
		t.Errorf("window = %v s, %d scrapes, %q; want 10 s, 2, vllm", w.Seconds(), w.Scrapes, w.Kind)
	}
	wantRate := map[Name]float64{PromptTokens: 500, GenerationTokens: 250, PrefixQueries: 400, PrefixHits: 200}
	if diff := cmp.Diff(wantRate, w.Rate); diff != "" {
		t.Errorf("Rate mismatch (-want +got):\n%s", diff)
	}
	if w.PrefixHitRate != 0.5 || w.PromptTokensPerSec != 500 || w.GenerationTokensPerSec != 250 {
		t.Errorf("hit rate, prompt, generation = %v, %v, %v; want 0.5, 500, 250", w.PrefixHitRate, w.PromptTokensPerSec, w.GenerationTokensPerSec)
	}
	wantGauges := map[Name]GaugeStats{
		Running: {N: 2, Mean: 5, Min: 4, Max: 6, Last: 6},
		KVUsage: {N: 2, Mean: 0.6, Min: 0.5, Max: 0.7, Last: 0.7},
	}
	if diff := cmp.Diff(wantGauges, w.Gauges, cmp.Comparer(near)); diff != "" {
		t.Errorf("Gauges mismatch (-want +got):\n%s", diff)
	}
	h := w.Histograms[TTFT]
	got := []float64{h.Count, h.Mean, h.P50, h.P90, h.P99}
	want := []float64{50, 0.4, 0.3, 0.75, 0.975}
	if diff := cmp.Diff(want, got, cmp.Comparer(near)); diff != "" {
		t.Errorf("TTFT count, mean, P50, P90, P99 mismatch (-want +got):\n%s", diff)
	}
	if len(w.Resets) != 0 {
		t.Errorf("Resets = %v; want none", w.Resets)
	}
}

func TestComputeCounterReset(t *testing.T) {
	body := func(tokens, count, le1 string) string {
		return "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total " + tokens +
			"\n# TYPE vllm:e2e_request_latency_seconds histogram\n" +
			"vllm:e2e_request_latency_seconds_bucket{le=\"1\"} " + le1 + "\n" +
			"vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"} " + count + "\n" +
			"vllm:e2e_request_latency_seconds_count " + count + "\n" +
			"vllm:e2e_request_latency_seconds_sum " + count + "\n"
	}
	// 100 → 150 (+50), then the server restarts and reads 20 (+20 from
	// zero): 70 tokens in 20 s. The histogram likewise: +4, then 3 from zero.
	snaps := []Snapshot{
		mustParse(t, body("100", "10", "5"), 0),
		mustParse(t, body("150", "14", "7"), 10e9),
		mustParse(t, body("20", "3", "1"), 20e9),
	}
	w, err := Compute(snaps)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Increase[PromptTokens]; got != 70 {
		t.Errorf("Increase[prompt_tokens] = %v; want 70", got)
	}
	if got := w.Rate[PromptTokens]; got != 3.5 {
		t.Errorf("Rate[prompt_tokens] = %v; want 3.5", got)
	}
	if got := w.Histograms[E2E].Count; got != 7 {
		t.Errorf("Histograms[e2e].Count = %v; want 7", got)
	}
	// le 1: +2 then 1 from zero = 3 of 7.
	if got := w.Histograms[E2E].Delta.Buckets[0].Count; got != 3 {
		t.Errorf("e2e le=1 bucket = %v; want 3", got)
	}
	if diff := cmp.Diff(map[Name]int{PromptTokens: 1, E2E: 1}, w.Resets); diff != "" {
		t.Errorf("Resets mismatch (-want +got):\n%s", diff)
	}
}

func TestComputeTGITokenRateFromHistograms(t *testing.T) {
	// TGI has no token counters: throughput comes from the per-request
	// histograms' sums. 100 → 1300 generated tokens over 4 s = 300/s.
	body := func(sum, count string) string {
		return "# TYPE tgi_request_generated_tokens histogram\n" +
			"tgi_request_generated_tokens_bucket{le=\"+Inf\"} " + count + "\n" +
			"tgi_request_generated_tokens_sum " + sum + "\ntgi_request_generated_tokens_count " + count + "\n"
	}
	w, err := Compute([]Snapshot{mustParse(t, body("100", "1"), 1e9), mustParse(t, body("1300", "11"), 5e9)})
	if err != nil {
		t.Fatal(err)
	}
	if w.GenerationTokensPerSec != 300 {
		t.Errorf("GenerationTokensPerSec = %v; want 300", w.GenerationTokensPerSec)
	}
}

func TestComputeGPUs(t *testing.T) {
	body := func(util0, util1 string) string {
		return "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" +
			"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} " + util0 + "\n" +
			"DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\"} " + util1 + "\n"
	}
	w, err := Compute([]Snapshot{mustParse(t, body("100", "0"), 0), mustParse(t, body("50", "20"), 1e9)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[Name]GaugeStats{
		"0": {GPUUtil: {N: 2, Mean: 0.75, Min: 0.5, Max: 1, Last: 0.5}},
		"1": {GPUUtil: {N: 2, Mean: 0.1, Min: 0, Max: 0.2, Last: 0.2}},
	}
	if diff := cmp.Diff(want, w.GPUs, cmp.Comparer(near)); diff != "" {
		t.Errorf("GPUs mismatch (-want +got):\n%s", diff)
	}
	// Over both GPUs: means 0.5 then 0.35.
	if g := w.Gauges[GPUUtil]; !near(g.Mean, 0.425) || !near(g.Max, 0.5) {
		t.Errorf("Gauges[gpu_util] = %+v; want mean 0.425, max 0.5", g)
	}
}

func TestComputeTooFew(t *testing.T) {
	a := mustParse(t, scrapeA, 0)
	for _, snaps := range [][]Snapshot{nil, {a}, {a, a}} {
		if _, err := Compute(snaps); !errors.Is(err, ErrTooFewScrapes) {
			t.Errorf("Compute(%d snapshots at one time) error = %v; want ErrTooFewScrapes", len(snaps), err)
		}
	}
}

func TestBetween(t *testing.T) {
	var snaps []Snapshot
	for _, at := range []int64{30, 10, 20, 40} {
		snaps = append(snaps, Snapshot{TimeNS: at})
	}
	var got []int64
	for _, s := range Between(snaps, 10, 30) {
		got = append(got, s.TimeNS)
	}
	if diff := cmp.Diff([]int64{10, 20, 30}, got); diff != "" {
		t.Errorf("Between(10, 30) mismatch (-want +got):\n%s", diff)
	}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	h := Histogram{Buckets: []Bucket{{1, 10}, {2, 20}, {4, 40}, {inf, 40}}, Count: 40}
	tests := []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		{"first bucket from zero", h, 0.125, 0.5},
		{"bucket edge", h, 0.5, 2},
		{"interpolated", h, 0.75, 3},
		{"top", h, 1, 4},
		{"in +Inf bucket", Histogram{Buckets: []Bucket{{1, 5}, {inf, 10}}, Count: 10}, 0.9, 1},
		{"non-monotonic scrape", Histogram{Buckets: []Bucket{{1, 10}, {2, 9}, {inf, 20}}, Count: 20}, 0.5, 1},
		{"negative first bound", Histogram{Buckets: []Bucket{{-1, 10}, {inf, 10}}, Count: 10}, 0.5, -1},
		{"q below 0", h, -0.1, math.Inf(-1)},
		{"q above 1", h, 1.1, inf},
		{"empty", Histogram{Buckets: []Bucket{{1, 0}, {inf, 0}}}, 0.5, math.NaN()},
		{"no +Inf", Histogram{Buckets: []Bucket{{1, 1}, {2, 2}}}, 0.5, math.NaN()},
		{"one bucket", Histogram{Buckets: []Bucket{{inf, 3}}}, 0.5, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.h.Quantile(tt.q)
			if !(near(got, tt.want) || math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("Quantile(%v) = %v; want %v", tt.q, got, tt.want)
			}
		})
	}
}
