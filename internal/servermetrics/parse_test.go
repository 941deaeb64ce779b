package servermetrics

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current mapping")

func parseFile(t testing.TB, name string) Snapshot {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(bytes.NewReader(body), 0)
	if err != nil {
		t.Fatalf("Parse(%s) error: %v", name, err)
	}
	return s
}

func near(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// hist is what a test expects of one canonical histogram.
type hist struct {
	count, sum float64
	p50        float64 // checked when non-zero
}

// TestParseServers checks the mapping of each recorded body against values
// worked out by hand from the observations in testdata (see the comments).
func TestParseServers(t *testing.T) {
	tests := []struct {
		file   string
		kind   Kind
		values map[Name]float64
		hists  map[Name]hist
		raw    []string // families that must be kept raw
		mapped []string // families that must not appear raw
	}{
		{
			file: "vllm.txt", kind: KindVLLM,
			// Two engines (data parallel): counts add, the KV fraction is
			// the mean of 0.25 and 0.35.
			values: map[Name]float64{
				Running: 3 + 2, Waiting: 1, KVUsage: 0.30,
				PrefixQueries: 16000, PrefixHits: 6000, Preemptions: 3,
				PromptTokens: 80000, GenerationTokens: 20000,
				RequestsFinished: 90 + 10 + 60 + 5,
			},
			hists: map[Name]hist{
				// engine 0: 10 at 0.09 s, 30 at 0.2 s; engine 1: 10 at 0.09 s, 30 at 0.4 s.
				// Summed buckets: le 0.1 → 20, le 0.25 → 50, le 0.5 → 80.
				// P50: rank 40 falls in (0.1, 0.25]: 0.1 + 0.15 × (40−20)/30 = 0.2.
				TTFT:                    {count: 80, sum: 10*0.09 + 30*0.2 + 10*0.09 + 30*0.4, p50: 0.2},
				ITL:                     {count: 11900 + 7935, sum: 11900*0.02 + 7935*0.03},
				TPOT:                    {count: 165, sum: 100*0.02 + 65*0.03},
				E2E:                     {count: 165, sum: 100*2.5 + 65*4.0},
				QueueTime:               {count: 165, sum: 100*0.1 + 65*0.2},
				PrefillTime:             {count: 165, sum: 100*0.05 + 65*0.1},
				DecodeTime:              {count: 165, sum: 100*2.2 + 65*3.4},
				InferenceTime:           {count: 165, sum: 100*2.25 + 65*3.5},
				IterationTokens:         {count: 1850, sum: 900*4 + 100*600 + 800*3 + 50*700},
				RequestPromptTokens:     {count: 165, sum: 100*500 + 65*300},
				RequestGenerationTokens: {count: 165, sum: 100*120 + 65*123},
			},
			raw: []string{
				"vllm:cache_config_info", "vllm:request_params_n", "process_resident_memory_bytes",
				// Deprecated aliases lose to their new names and stay raw.
				"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds",
			},
			mapped: []string{"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:request_success_total"},
		},
		{
			file: "sglang.txt", kind: KindSGLang,
			values: map[Name]float64{
				Running: 7, Waiting: 3, KVUsage: 0.42, KVTokens: 41000, PrefixHitRate: 0.3,
				PrefixQueries: 200000, PrefixHits: 60000, Preemptions: 4,
				PromptTokens: 200000, GenerationTokens: 50000, RequestsFinished: 100,
				GenerationThroughput: 1234.5,
			},
			hists: map[Name]hist{
				// 50 at 0.15 s, 50 at 0.5 s: le 0.2 → 50, so rank 50 ends
				// exactly at 0.2.
				TTFT:      {count: 100, sum: 50*0.15 + 50*0.5, p50: 0.2},
				ITL:       {count: 49900, sum: 49900 * 0.012},
				E2E:       {count: 100, sum: 700},
				QueueTime: {count: 100, sum: 80*0.05 + 20*0.3},
			},
			raw:    []string{"sglang:max_total_num_tokens", "sglang:num_aborted_requests_total"},
			mapped: []string{"sglang:token_usage", "sglang:cached_tokens_total"},
		},
		{
			file: "tgi.txt", kind: KindTGI,
			values: map[Name]float64{
				Waiting: 6, Running: 16, BatchMaxTokens: 12000, RequestsFinished: 100,
				EngineSteps: 120 + 5000,
			},
			hists: map[Name]hist{
				QueueTime:               {count: 100, sum: 50},
				InferenceTime:           {count: 100, sum: 300},
				E2E:                     {count: 100, sum: 350},
				TPOT:                    {count: 100, sum: 2.5},
				RequestPromptTokens:     {count: 100, sum: 100000},
				RequestGenerationTokens: {count: 100, sum: 12000},
			},
			raw:    []string{"tgi_request_count", "tgi_request_failure", "tgi_batch_next_size"},
			mapped: []string{"tgi_queue_size"},
		},
		{
			file: "llamacpp.txt", kind: KindLlamaCpp,
			values: map[Name]float64{
				PromptTokens: 6886, GenerationTokens: 3469, EngineSteps: 3600,
				PromptThroughput: 237.2, GenerationThroughput: 97.9,
				KVUsage: 0.125, KVTokens: 1024, Running: 2, Waiting: 1,
			},
			raw: []string{"llamacpp:prompt_seconds_total", "llamacpp:n_busy_slots_per_decode"},
		},
		{
			file: "dcgm.txt", kind: KindDCGM,
			// Utilisation is a mean of 90 % and 40 %; memory (MiB → bytes)
			// and power add up.
			values: map[Name]float64{
				GPUUtil:         0.65,
				GPUMemUsedBytes: (73728 + 40960) << 20,
				GPUPowerWatts:   512.5 + 287.5,
			},
			raw:    []string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_FREE"},
			mapped: []string{"DCGM_FI_DEV_FB_USED"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := parseFile(t, tt.file)
			if s.Kind != tt.kind {
				t.Errorf("Kind = %q; want %q", s.Kind, tt.kind)
			}
			for n, want := range tt.values {
				if got, ok := s.Values[n]; !ok || !near(got, want) {
					t.Errorf("Values[%s] = %v (present %v); want %v", n, got, ok, want)
				}
			}
			for n, v := range s.Values {
				if _, ok := tt.values[n]; !ok {
					t.Errorf("Values[%s] = %v; want absent", n, v)
				}
			}
			for n, want := range tt.hists {
				h, ok := s.Histograms[n]
				if !ok {
					t.Errorf("Histograms[%s] absent", n)
					continue
				}
				if !near(h.Count, want.count) || !near(h.Sum, want.sum) {
					t.Errorf("Histograms[%s] count, sum = %v, %v; want %v, %v", n, h.Count, h.Sum, want.count, want.sum)
				}
				if want.p50 != 0 {
					if got := h.Quantile(0.5); !near(got, want.p50) {
						t.Errorf("Histograms[%s].Quantile(0.5) = %v; want %v", n, got, want.p50)
					}
				}
			}
			for n := range s.Histograms {
				if _, ok := tt.hists[n]; !ok {
					t.Errorf("Histograms[%s] present; want absent", n)
				}
			}
			for _, f := range tt.raw {
				if _, ok := s.Raw[f]; !ok {
					t.Errorf("Raw[%q] absent; want kept", f)
				}
			}
			for _, f := range tt.mapped {
				if _, ok := s.Raw[f]; ok {
					t.Errorf("Raw[%q] present; want mapped", f)
				}
			}
			checkGolden(t, strings.TrimSuffix(tt.file, ".txt")+".golden", dump(s))
		})
	}
}

func TestParseDCGMPerGPU(t *testing.T) {
	s := parseFile(t, "dcgm.txt")
	if len(s.GPUs) != 2 {
		t.Fatalf("len(GPUs) = %d; want 2", len(s.GPUs))
	}
	g := s.GPUs[0]
	if g.ID != "0" || g.Model != "NVIDIA H100 80GB HBM3" || !strings.HasPrefix(g.UUID, "GPU-") {
		t.Errorf("GPUs[0] = %q %q %q; want 0, the H100, a GPU- UUID", g.ID, g.Model, g.UUID)
	}
	want := map[Name]float64{GPUUtil: 0.9, GPUMemUsedBytes: 73728 << 20, GPUPowerWatts: 512.5}
	for n, w := range want {
		if got := g.Values[n]; !near(got, w) {
			t.Errorf("GPUs[0].Values[%s] = %v; want %v", n, got, w)
		}
	}
}

func TestParsePrefersNewName(t *testing.T) {
	// vLLM 0.9 emits both names; if they ever disagree the new one counts,
	// and they are never added together.
	body := `# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0"} 0.9
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0"} 0.2
`
	s, err := Parse(strings.NewReader(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Values[KVUsage]; got != 0.2 {
		t.Errorf("Values[kv_usage] = %v; want 0.2", got)
	}
	// The old name alone still maps.
	s, err = Parse(strings.NewReader("# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.9\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Values[KVUsage]; got != 0.9 {
		t.Errorf("old name: Values[kv_usage] = %v; want 0.9", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantLine int // 0: any
		wantMsg  string
	}{
		{"not metrics", "<html><body>502 Bad Gateway</body></html>\n", 1, "invalid metric name"},
		{"bad value", "# TYPE a gauge\na 1\nb{x=\"1\"} notanumber\n", 3, "float"},
		{"unterminated label", "a{x=\"1} 1\n", 0, ""},
		{"type twice", "# TYPE a gauge\n# TYPE a counter\na 1\n", 2, "second TYPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.body), 0)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v; want a *SyntaxError", tt.body, err)
			}
			if tt.wantLine != 0 && se.Line != tt.wantLine {
				t.Errorf("Parse(%q) line = %d; want %d (%v)", tt.body, se.Line, tt.wantLine, err)
			}
			if !strings.Contains(se.Msg, tt.wantMsg) {
				t.Errorf("Parse(%q) msg = %q; want it to contain %q", tt.body, se.Msg, tt.wantMsg)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	body := strings.Repeat("# just a comment line to pad the body\n", MaxBodyBytes/38+2)
	_, err := Parse(strings.NewReader(body), 0)
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse(%d bytes) error = %v; want ErrTooLarge", len(body), err)
	}
}

func TestParseEmptyAndUnknown(t *testing.T) {
	s, err := Parse(strings.NewReader(""), 5)
	if err != nil || s.Kind != KindUnknown || len(s.Values) != 0 || s.TimeNS != 5 {
		t.Errorf("Parse(\"\") = %+v, %v; want an empty unknown snapshot at 5", s, err)
	}
	s, err = Parse(strings.NewReader("# TYPE my_app_requests_total counter\nmy_app_requests_total{code=\"200\"} 7\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := s.Raw["my_app_requests_total"]
	if s.Kind != KindUnknown || !ok || f.Type != "counter" || len(f.Samples) != 1 || f.Samples[0].Value != 7 || f.Samples[0].Labels["code"] != "200" {
		t.Errorf("unknown family: Kind %q, Raw %+v; want it kept raw", s.Kind, s.Raw)
	}
}

// dump renders a snapshot as sorted text lines, for golden files.
func dump(s Snapshot) string {
	var lines []string
	lines = append(lines, "kind "+string(s.Kind))
	for n, v := range s.Values {
		lines = append(lines, fmt.Sprintf("value %s %g", n, v))
	}
	for n, h := range s.Histograms {
		lines = append(lines, fmt.Sprintf("histogram %s count=%g sum=%g buckets=%d p50=%.6g p90=%.6g p99=%.6g",
			n, h.Count, h.Sum, len(h.Buckets), h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.99)))
	}
	for _, g := range s.GPUs {
		lines = append(lines, fmt.Sprintf("gpu %s util=%g mem=%g power=%g", g.ID, g.Values[GPUUtil], g.Values[GPUMemUsedBytes], g.Values[GPUPowerWatts]))
	}
	for name, f := range s.Raw {
		lines = append(lines, fmt.Sprintf("raw %s %s series=%d", name, f.Type, len(f.Samples)))
	}
	sort.Strings(lines[1:])
	return strings.Join(lines, "\n") + "\n"
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("mapping differs from %s (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
