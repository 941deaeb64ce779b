package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const ms = int64(time.Millisecond)

func chunk(tMs int64, tokens int32, visible bool) runlog.Chunk {
	return runlogtest.Chunk(tMs, tokens, visible)
}

// handRecords and handMeta are the hand-made run of runlogtest.
func handRecords() []runlog.Record { return runlogtest.Records() }

func handMeta() *runlog.Meta { return runlogtest.Meta() }

func handSummary(t *testing.T) *stats.Summary {
	t.Helper()
	slo, err := stats.ParseSLO("ttft:500 tpot:12 ttp:250")
	if err != nil {
		t.Fatal(err)
	}
	s := stats.Summarize(handRecords(), stats.Options{SLO: slo})
	return &s
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func TestTerminalGolden(t *testing.T) {
	noSLO := stats.Summarize(handRecords(), stats.Options{Percentiles: []float64{99}, Metrics: []string{"ttft", "tpot", "itl"}, Buckets: []int{}})
	tests := []struct {
		name string
		s    *stats.Summary
		meta *runlog.Meta
		opt  TermOptions
	}{
		{"terminal.golden", handSummary(t), handMeta(), TermOptions{}},
		{"terminal_color.golden", handSummary(t), handMeta(), TermOptions{TTY: true}},
		{"terminal_nocolor_env.golden", handSummary(t), handMeta(), TermOptions{TTY: true, NoColor: true}},
		{"terminal_vllm_defaults.golden", &noSLO, nil, TermOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Terminal(&b, tt.s, tt.meta, tt.opt); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// TestTerminalHandValues checks lines of the report against figures worked
// out by hand for handRecords, independent of the golden file.
func TestTerminalHandValues(t *testing.T) {
	var b bytes.Buffer
	if err := Terminal(&b, handSummary(t), handMeta(), TermOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"============ Serving Benchmark Result ============\n",
		"Successful requests:                     3\n",
		"Failed requests:                         1\n",
		"Maximum request concurrency:             4\n",
		"Request rate configured (RPS):           2.00\n",
		// First send 0 → last end 1100 ms.
		"Benchmark duration (s):                  1.10\n",
		"Total input tokens:                      12100\n",
		"Total generated tokens:                  9\n",
		// 3 / 1.1 = 2.727…; goodput: only r1 meets ttft≤500, tpot≤12, ttp≤250 → 1/1.1.
		"Request throughput (req/s):              2.73\n",
		"Request goodput (req/s):                 0.91\n",
		"Output token throughput (tok/s):         8.18\n",
		// [0,1 s) window: r1's 4 tokens + r2's 4.
		"Peak output token throughput (tok/s):    8.00\n",
		"Peak concurrent requests:                3.00\n",
		// 12109 / 1.1 = 11008.18.
		"Total Token throughput (tok/s):          11008.18\n",
		"---------------Time to First Token----------------\n",
		// TTFT [100, 200, 1000]: mean 433.33; p99 v=1.98 → 1000 − 800·0.02 = 984.
		"Mean TTFT (ms):                          433.33\n",
		"Median TTFT (ms):                        200.00\n",
		"P99 TTFT (ms):                           984.00\n",
		"-----Time per Output Token (excl. 1st token)------\n",
		"---------------Inter-token Latency----------------\n",
		// Chunk gaps [10,10,10,20,20]: mean 14.
		"Mean ITL (ms):                           14.00\n",
		// r2 has a 2-token chunk, so the per-token block is shown: [10×5, 20].
		"Mean ITL per token (ms):                 11.67\n",
		"----------------End-to-end Latency----------------\n",
		"P50 E2EL (ms):                           240.00\n",
		"-----------------Time to Publish------------------\n",
		"Median TTP (ms):                         220.00\n",
		"--------Response Time (from intended send)--------\n",
		"Median Response Time (ms):               250.00\n",
		"Requests meeting SLO:                    1 of 4 (25.00%)\n",
		"  tpot <= 12 ms:                         2 of 4 (50.00%)\n",
		"http_5xx:                                1\n",
		"Load:                                    rate 2 req/s, burstiness 1, max concurrency 4\n",
		// Sent prompts [100, 500, 2000, 10000]: mean 12600/4 = 3150;
		// population std √((3050² + 2650² + 1150² + 6850²)/4) = 4017.8.
		"Input length (tok) P50/P90/P99:          1250 / 7600 / 9760 (mean 3150, std 4017.8)\n",
		"Send lag (ms) P50/P99/max:               0.00 / 9.70 / 10.00\n",
		"Token counts from:                       2 usage, 1 counted\n",
		"Prompt length mismatch (tok) P50/P99:    10 / 10\n",
		// 5 / 12100 = 0.041%.
		"Cached prompt tokens:                    5 (0.04%)\n",
		"Warm-up requests (excluded):             1\n",
		"! p99 needs at least 100 samples",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Terminal output lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("Terminal(TermOptions{}) output contains ANSI escapes; want plain text")
	}
	for i, l := range strings.Split(out, "\n") {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("line %d %q has trailing blanks", i+1, l)
		}
	}
}

func TestTerminalWriteError(t *testing.T) {
	err := Terminal(failWriter{}, handSummary(t), nil, TermOptions{})
	if !errors.Is(err, errWrite) {
		t.Errorf("Terminal(failing writer) = %v; want %v", err, errWrite)
	}
}

var errWrite = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestCenter(t *testing.T) {
	tests := []struct {
		in   string
		c    byte
		want string
	}{
		// 26 chars: 24 fill, 12 each side.
		{" Serving Benchmark Result ", '=', "============ Serving Benchmark Result ============"},
		// 19 chars: 31 fill, 15 left and 16 right (Python puts the odd one right).
		{"Time to First Token", '-', "---------------Time to First Token----------------"},
		{strings.Repeat("x", 60), '-', strings.Repeat("x", 60)},
	}
	for _, tt := range tests {
		if got := center(tt.in, tt.c); got != tt.want {
			t.Errorf("center(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestResultJSONGolden(t *testing.T) {
	b, err := ResultJSON(handSummary(t), handMeta(), map[string]any{"tokenizer_id": "meta-llama/Meta-Llama-3-8B", "note": "hand-made"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "result.golden.json", b)
}

// TestResultJSONTypes checks vLLM's keys carry vLLM's JSON types, read back
// with encoding/json's generic decoding.
func TestResultJSONTypes(t *testing.T) {
	b, err := ResultJSON(handSummary(t), handMeta(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// Hand values: rate 2, concurrency 4, 1.1 s, 3 completed, goodput 1/1.1.
	want := map[string]any{
		"date": "20260314-150926", "backend": "openai-chat", "endpoint_type": "openai-chat", "label": nil,
		"model_id": "llama-3-8b", "tokenizer_id": "llama-3-8b", "num_prompts": 4.0, "tp": "1",
		"request_rate": 2.0, "burstiness": 1.0, "max_concurrency": 4.0,
		"duration": 1.1, "completed": 3.0, "failed": 1.0,
		"total_input_tokens": 12100.0, "total_output_tokens": 9.0,
		"request_goodput": 1 / 1.1, "max_output_tokens_per_s": 8.0, "max_concurrent_requests": 3.0,
		"mean_ttft_ms": 1300.0 / 3, "median_ttft_ms": 200.0, "p99_ttft_ms": 984.0, "p50_ttft_ms": 200.0,
		"mean_itl_ms": 14.0, "p90_itl_ms": 20.0, "std_itl_ms": math.Sqrt(24),
		"median_ttp_ms": 220.0, "median_response_ms": 250.0, "slo_attainment": 0.25,
	}
	for k, w := range want {
		g, ok := m[k]
		if !ok {
			t.Errorf("key %q missing", k)
			continue
		}
		if gf, ok := g.(float64); ok {
			if wf, ok := w.(float64); ok && math.Abs(gf-wf) < 1e-9 {
				continue
			}
		}
		if g != w {
			t.Errorf("result[%q] = %#v; want %#v", k, g, w)
		}
	}
	// Floats keep a decimal point, as Python writes them; counts do not.
	for _, frag := range []string{`"duration": 1.1,`, `"burstiness": 1.0,`, `"completed": 3,`, `"max_output_tokens_per_s": 8.0,`, `"request_rate": 2.0,`} {
		if !bytes.Contains(b, []byte(frag)) {
			t.Errorf("result lacks %s", frag)
		}
	}
}

func TestResultJSONNoSLOUnpaced(t *testing.T) {
	s := stats.Summarize(handRecords(), stats.Options{})
	meta := handMeta()
	meta.Levels[0].RequestRate, meta.Levels[0].MaxConcurrency, meta.Levels[0].NumPrompts = 0, 0, 0
	b, err := ResultJSON(&s, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"request_rate": "inf",`, `"max_concurrency": null,`, `"request_goodput": null,`, `"slo_attainment": null,`, `"num_prompts": 4,`} {
		if !bytes.Contains(b, []byte(frag)) {
			t.Errorf("result lacks %s:\n%s", frag, b)
		}
	}
	if _, err := ResultJSON(&s, nil, nil); err != nil {
		t.Errorf("ResultJSON(nil meta) error = %v", err)
	}
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{3, "3.0"}, {1.1, "1.1"}, {0, "0.0"}, {-2.5, "-2.5"}, {1e-4, "0.0001"}, {1e-5, "1e-05"},
		{9999999999999998, "9999999999999998.0"}, {1e16, "1e+16"}, {1.5e16, "1.5e+16"},
		{math.NaN(), "null"}, {math.Inf(1), "null"},
	}
	for _, tt := range tests {
		got, err := pyFloat(tt.in).MarshalJSON()
		if err != nil || string(got) != tt.want {
			t.Errorf("pyFloat(%v).MarshalJSON() = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestParseResultRoundTrip writes the hand summary and reads it back.
func TestParseResultRoundTrip(t *testing.T) {
	s := handSummary(t)
	b, err := ResultJSON(s, handMeta(), map[string]any{"note": "x"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseResultJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	good, attain := 1/1.1, 0.25
	bucketAttain := []float64{0.5, 0, 0}
	ttft, _ := s.Metric("ttft")
	want := &Result{
		Date: "20260314-150926", Backend: "openai-chat", ModelID: "llama-3-8b", TokenizerID: "llama-3-8b",
		NumPrompts: 4, RequestRate: 2, Burstiness: 1, MaxConcurrency: 4,
		Duration: 1.1, Completed: 3, Failed: 1, TotalInputTokens: 12100, TotalOutputTokens: 9,
		RequestThroughput: 3 / 1.1, OutputThroughput: 9 / 1.1, TotalTokenThroughput: 12109 / 1.1,
		RequestGoodput: &good, MaxOutputTokensPerS: 8, MaxConcurrentRequests: 3,
		SLOAttainment: &attain,
		Failures:      map[string]int{"http_5xx": 1},
		Warnings:      s.Warnings,
		SLOSpec:       "ttft:500 tpot:12 ttp:250",
	}
	if diff := cmp.Diff(want, r, cmpopts.EquateApprox(1e-12, 0),
		cmpopts.IgnoreFields(Result{}, "Metrics", "Buckets", "Conditions", "Extra")); diff != "" {
		t.Errorf("ParseResultJSON(ResultJSON(s)) mismatch (-want +got):\n%s", diff)
	}
	if got := r.Metrics["ttft"]; got.Mean != ttft.Mean || got.Median != ttft.Median || got.Std != ttft.Std ||
		!cmp.Equal(got.Percentiles, ttft.Percentiles) {
		t.Errorf("Metrics[ttft] = %+v; want %+v", got, ttft)
	}
	for _, name := range []string{"ttft", "tpot", "itl", "itl_token", "e2el", "ttp", "response"} {
		if _, ok := r.Metrics[name]; !ok {
			t.Errorf("Metrics lacks %q", name)
		}
	}
	if len(r.Buckets) != 3 {
		t.Fatalf("len(Buckets) = %d; want 3", len(r.Buckets))
	}
	for i, b := range r.Buckets {
		sb := s.Buckets[i]
		if b.Label != sb.Label || b.Lo != sb.Lo || b.Hi != sb.Hi || b.Requests != sb.Requests || b.Failed != sb.Failed ||
			b.SLOAttainment == nil || *b.SLOAttainment != bucketAttain[i] {
			t.Errorf("Buckets[%d] = %+v; want %+v", i, b, sb)
		}
		if v, _ := b.Metrics["ttft"].P(99); len(b.Metrics["ttft"].Percentiles) == 0 || v != mustP(sb, "ttft", 99) {
			t.Errorf("Buckets[%d] ttft p99 = %v; want %v", i, v, mustP(sb, "ttft", 99))
		}
	}
	if r.Conditions["model"] != "llama-3-8b" {
		t.Errorf("Conditions[model] = %v; want llama-3-8b", r.Conditions["model"])
	}
	for _, k := range []string{"tp", "note"} {
		if _, ok := r.Extra[k]; !ok {
			t.Errorf("Extra lacks %q", k)
		}
	}
}

func mustP(b stats.BucketSummary, name string, p float64) float64 {
	m, _ := b.Metric(name)
	v, _ := m.P(p)
	return v
}

// vllmSample is shaped like a real `vllm bench serve --save-result` file
// (keys and types from vllm/benchmarks/serve.py), values invented.
const vllmSample = `{"date": "20250101-120000", "endpoint_type": "openai", "backend": "openai", "label": null,
"model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
"num_prompts": 1000, "version": "0.3.3", "request_rate": "inf", "burstiness": 1.0, "max_concurrency": null,
"duration": 90.66, "completed": 1000, "failed": 0, "total_input_tokens": 44012, "total_output_tokens": 1462,
"request_throughput": 11.03, "request_goodput": null, "output_throughput": 16.13, "total_token_throughput": 501.56,
"max_output_tokens_per_s": 120.0, "max_concurrent_requests": 64, "rtfx": 0.0,
"mean_ttft_ms": 43073.78, "median_ttft_ms": 43307.82, "std_ttft_ms": 10.5, "p99_ttft_ms": 83289.33, "p99.9_ttft_ms": 84000.5,
"mean_tpot_ms": 49.13, "median_tpot_ms": 50.31, "std_tpot_ms": 1.0, "p99_tpot_ms": 51.96,
"mean_itl_ms": 48.6, "median_itl_ms": 43.66, "std_itl_ms": 2.0, "p99_itl_ms": 55.69,
"probe_p99_e2el_ms": 3.0}`

func TestParseVLLMResult(t *testing.T) {
	r, err := ParseResultJSON([]byte(vllmSample))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(r.RequestRate, 1) || r.MaxConcurrency != 0 || r.RequestGoodput != nil || r.Completed != 1000 ||
		r.MaxConcurrentRequests != 64 || r.Duration != 90.66 || r.TotalOutputTokens != 1462 {
		t.Errorf("ParseResultJSON(vLLM) = %+v", r)
	}
	want := MetricStats{Mean: 43073.78, Median: 43307.82, Std: 10.5,
		Percentiles: []stats.PercentileValue{{P: 99, Value: 83289.33}, {P: 99.9, Value: 84000.5}}}
	if diff := cmp.Diff(want, r.Metrics["ttft"]); diff != "" {
		t.Errorf("Metrics[ttft] mismatch (-want +got):\n%s", diff)
	}
	if len(r.Metrics) != 3 {
		t.Errorf("Metrics has %d entries; want ttft, tpot, itl", len(r.Metrics))
	}
	for _, k := range []string{"version", "rtfx", "probe_p99_e2el_ms"} {
		if _, ok := r.Extra[k]; !ok {
			t.Errorf("Extra lacks %q", k)
		}
	}
}

func TestParseResultErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not json", `{`, "want an object"},
		{"array", `[]`, "want an object"},
		{"null", `null`, "want an object"},
		{"string count", `{"completed": "3"}`, `key "completed": want a number`},
		{"fractional count", `{"failed": 1.5}`, `key "failed": want an integer`},
		{"bad rate", `{"request_rate": "fast"}`, `key "request_rate": want a number or "inf"`},
		{"bad bucket", `{"buckets": [{"lo": "x"}]}`, `key "lo" in buckets[0]`},
		{"bucket not object", `{"buckets": [1]}`, "in buckets[0]: want an object"},
		{"bad metric", `{"p99_ttft_ms": "slow"}`, `key "p99_ttft_ms"`},
		{"bad warnings", `{"warnings": "x"}`, `key "warnings"`},
		{"bad slo", `{"slo": {"spec": 5}}`, `key "spec" in slo`},
		{"slo not object", `{"slo": 5}`, "in slo: want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseResultJSON([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseResultJSON(%s) error = %v; want one containing %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestMetricKey(t *testing.T) {
	tests := []struct {
		in         string
		stat, name string
		ok         bool
	}{
		{"mean_ttft_ms", "mean", "ttft", true},
		{"p99.9_e2el_ms", "p99.9", "e2el", true},
		{"median_e2el_including_client_queue_ms", "median", "e2el_including_client_queue", true},
		{"std_itl_token_ms", "std", "itl_token", true},
		{"probe_p99_e2el_ms", "", "", false},
		{"pinf_ttft_ms", "", "", false},
		{"p1e2_ttft_ms", "", "", false},
		{"p101_ttft_ms", "", "", false},
		{"mean_ms", "", "", false},
		{"duration", "", "", false},
	}
	for _, tt := range tests {
		stat, name, ok := metricKey(tt.in)
		if stat != tt.stat || name != tt.name || ok != tt.ok {
			t.Errorf("metricKey(%q) = %q, %q, %v; want %q, %q, %v", tt.in, stat, name, ok, tt.stat, tt.name, tt.ok)
		}
	}
}

func FuzzParseResultJSON(f *testing.F) {
	f.Add([]byte(vllmSample))
	f.Add([]byte(`{"buckets": [{"label": "<1K", "hi": null}], "request_rate": 2}`))
	f.Add([]byte(`{"p50_x_ms": 1, "failures": {"a": 1}}`))
	if b, err := os.ReadFile(filepath.Join("testdata", "result.golden.json")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseResultJSON(data)
		if err != nil {
			if r != nil {
				t.Fatalf("ParseResultJSON returned a result with error %v", err)
			}
			return
		}
		for name, m := range r.Metrics {
			for i := 1; i < len(m.Percentiles); i++ {
				if m.Percentiles[i-1].P > m.Percentiles[i].P {
					t.Fatalf("Metrics[%q].Percentiles not sorted: %v", name, m.Percentiles)
				}
			}
		}
	})
}
