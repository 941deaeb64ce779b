package simserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, url := newTestServer(t, testConfig(), Options{Registerer: reg, ServedModelName: "m"})
	// 40 one-token words: 2 full 16-token blocks plus 8 tokens. Sent twice,
	// one after the other, with 5 and then 2 output tokens.
	prompt := strings.TrimSpace(strings.Repeat("word ", 40))
	var cached []int
	for _, maxTokens := range []int{5, 2} {
		resp := post(t, context.Background(), url+"/v1/completions",
			fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true}`, prompt, maxTokens))
		var got completionResponse
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cached = append(cached, got.Usage.PromptDetails.CachedTokens)
	}
	// The second request finds the first's two full blocks cached (vLLM
	// caches full blocks only): 32 tokens.
	if diff := cmp.Diff([]int{0, 32}, cached); diff != "" {
		t.Errorf("usage cached_tokens (-want +got):\n%s", diff)
	}
	// By hand: prompt tokens 40 + 40 = 80 (vLLM counts cached ones too);
	// generated 5 + 2 = 7; prefix queries 80 tokens, hits 32; both requests
	// finished by length; nothing left running, waiting or holding KV.
	const want = `
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 7
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 32
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 80
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 80
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 2
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 0
`
	names := []string{
		"vllm:generation_tokens_total", "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total",
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:prefix_cache_hits_total",
		"vllm:prefix_cache_queries_total", "vllm:prompt_tokens_total", "vllm:request_success_total",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// The cache config as an info gauge: vLLM's labels (CacheConfig's
	// fields, Python's str() of each, and engine; no model_name).
	d := s.Describe()
	wantInfo := fmt.Sprintf(`
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="%d"} 1
`, d.NumGPUBlocks)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantInfo), "vllm:cache_config_info"); err != nil {
		t.Error(err)
	}

	// Histogram sample counts: one TTFT, E2E, queue, prefill and decode
	// per request (2), and one ITL per gap between iterations that gave a
	// request tokens: (5−1) + (2−1) = 5. One prompt-tokens and one
	// generation-tokens sample per request (40 + 40, 5 + 2); one
	// iteration-tokens sample per iteration that gave tokens: each
	// request's prefill iteration counts its 40 prompt tokens (cached ones
	// too, as vLLM's prompt_len does) and its first token, each decode one
	// 1: 41 + 4×1 + 41 + 1×1 = 87 in 7 iterations.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	sums := map[string]float64{}
	buckets := map[string][]float64{}
	for _, mf := range mfs {
		if h := mf.GetMetric()[0].GetHistogram(); h != nil {
			counts[mf.GetName()] = h.GetSampleCount()
			sums[mf.GetName()] = h.GetSampleSum()
			for _, b := range h.GetBucket() {
				buckets[mf.GetName()] = append(buckets[mf.GetName()], b.GetUpperBound())
			}
			if diff := cmp.Diff(map[string]string{"engine": "0", "model_name": "m"}, labelMap(mf.GetMetric()[0])); diff != "" {
				t.Errorf("%s labels (-want +got):\n%s", mf.GetName(), diff)
			}
		}
	}
	wantCounts := map[string]uint64{
		"vllm:time_to_first_token_seconds":  2,
		"vllm:inter_token_latency_seconds":  5,
		"vllm:e2e_request_latency_seconds":  2,
		"vllm:request_queue_time_seconds":   2,
		"vllm:request_prefill_time_seconds": 2,
		"vllm:request_decode_time_seconds":  2,
		"vllm:request_prompt_tokens":        2,
		"vllm:request_generation_tokens":    2,
		"vllm:iteration_tokens_total":       7,
	}
	if diff := cmp.Diff(wantCounts, counts); diff != "" {
		t.Errorf("histogram sample counts (-want +got):\n%s", diff)
	}
	for name, want := range map[string]float64{
		"vllm:request_prompt_tokens":     80,
		"vllm:request_generation_tokens": 7,
		"vllm:iteration_tokens_total":    87,
	} {
		if sums[name] != want {
			t.Errorf("%s sum = %v; want %v", name, sums[name], want)
		}
	}
	// Bucket bounds as vLLM V1 declares them (vllm/v1/metrics/loggers.py).
	latency := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// build_1_2_5_buckets(max_model_len): Llama 3.1's 131072 ends at 1e5.
	if mml := d.MaxModelLen; mml != 131072 {
		t.Fatalf("max_model_len = %v; the test's buckets assume 131072", mml)
	}
	tokens := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}
	wantBuckets := map[string][]float64{
		"vllm:time_to_first_token_seconds":  {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
		"vllm:inter_token_latency_seconds":  {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
		"vllm:e2e_request_latency_seconds":  latency,
		"vllm:request_queue_time_seconds":   latency,
		"vllm:request_prefill_time_seconds": latency,
		"vllm:request_decode_time_seconds":  latency,
		"vllm:request_prompt_tokens":        tokens,
		"vllm:request_generation_tokens":    tokens,
		"vllm:iteration_tokens_total":       {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384},
	}
	if diff := cmp.Diff(wantBuckets, buckets); diff != "" {
		t.Errorf("histogram buckets (-want +got):\n%s", diff)
	}

	// promlint: vLLM's colon names are deliberate, and so is the _total
	// of its iteration-tokens histogram; nothing else may be flagged.
	probs, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		vllmName := p.Metric == "vllm:iteration_tokens_total" && p.Text == `non-counter metrics should not have "_total" suffix`
		if p.Text != "metric names should not contain ':'" && !vllmName {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func TestBuckets125(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []float64
	}{
		{100, []float64{1, 2, 5, 10, 20, 50, 100}}, // vLLM's docstring example
		{4, []float64{1, 2}},
		{0, nil},
	} {
		if got := buckets125(tc.max); !cmp.Equal(got, tc.want) {
			t.Errorf("buckets125(%d) = %v; want %v", tc.max, got, tc.want)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	_, url := newTestServer(t, testConfig(), Options{})
	code, body := httpGet(t, url+"/metrics")
	if code != 200 || !strings.Contains(body, `vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B"} 0`) {
		t.Errorf("GET /metrics = %d, body lacks vllm:num_requests_running:\n%s", code, tail(body, 500))
	}
}

func TestNewRejectsDuplicateRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(testConfig(), Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	// Two servers of the same model on one registry collide.
	if _, err := New(testConfig(), Options{Registerer: reg}); err == nil {
		t.Error("second New on the same registry succeeded; want a registration error")
	}
}
