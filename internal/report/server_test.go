package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/breakdown"
	sm "github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// vllmWindow is a hand-built vLLM level: 12 scrapes over 11 s, counters
// whose rates are round, and one restart seen by the prompt-token counter.
func vllmWindow() *sm.Window {
	inc := map[sm.Name]float64{
		sm.PromptTokens: 55000, sm.GenerationTokens: 8800, sm.RequestsFinished: 44,
		sm.Preemptions: 11, sm.PrefixQueries: 55000, sm.PrefixHits: 22000,
	}
	rate := map[sm.Name]float64{}
	for n, v := range inc {
		rate[n] = v / 11
	}
	return &sm.Window{
		StartNS: 1e9, EndNS: 12e9, Scrapes: 12, Kind: sm.KindVLLM,
		Increase: inc, Rate: rate,
		Resets: map[sm.Name]int{sm.PromptTokens: 1},
		Gauges: map[sm.Name]sm.GaugeStats{
			sm.Running: {N: 12, Mean: 12.5, Min: 4, Max: 16, Last: 10},
			sm.Waiting: {N: 12, Mean: 3.25, Min: 0, Max: 8, Last: 1},
			sm.KVUsage: {N: 12, Mean: 0.7134, Min: 0.1, Max: 0.96, Last: 0.5},
		},
		Histograms: map[sm.Name]sm.HistogramStats{
			// The queue's quantiles all fall in the first bucket, the P50's
			// and P90's upper bounds lowered by the mean (Markov).
			sm.QueueTime: {Count: 44, Mean: 0.021, P50: 0.0125, P90: 0.04, P99: 0.0875,
				P50Range: sm.Range{Lo: 0, Hi: 0.042}, P90Range: sm.Range{Lo: 0, Hi: 0.21}, P99Range: sm.Range{Lo: 0, Hi: 0.3}},
			sm.PrefillTime: {Count: 44, Mean: 0.09, P50: 0.075, P90: 0.2, P99: 0.35,
				P50Range: sm.Range{Lo: 0.05, Hi: 0.1}, P90Range: sm.Range{Lo: 0.1, Hi: 0.25}, P99Range: sm.Range{Lo: 0.3, Hi: 0.5}},
			// The P99 above the last finite bucket, with nothing to bound it.
			sm.DecodeTime: {Count: 44, Mean: 2.5, P50: 2.25, P90: 4, P99: 6.5,
				P50Range: sm.Range{Lo: 2, Hi: 2.5}, P90Range: sm.Range{Lo: 2.5, Hi: 5}, P99Range: sm.Range{Lo: 5, Hi: math.Inf(1)}},
			sm.TTFT: {Count: 44, Mean: 0.125, P50: 0.1, P90: 0.25, P99: 0.5,
				P50Range: sm.Range{Lo: 0.1, Hi: 0.1}, P90Range: sm.Range{Lo: 0.1, Hi: 0.25}, P99Range: sm.Range{Lo: 0.25, Hi: 0.5}},
			// Reported but not shown: the block picks its histograms.
			sm.E2E: {Count: 44, Mean: 3, P50: 2.5, P90: 5, P99: 8},
		},
		GPUs:                   map[string]map[sm.Name]sm.GaugeStats{},
		PrefixHitRate:          0.4,
		PromptTokensPerSec:     5000,
		GenerationTokensPerSec: 800,
	}
}

// dcgmWindow is a DCGM exporter's view of two GPUs over 5 s.
func dcgmWindow() *sm.Window {
	gib := float64(1 << 30)
	return &sm.Window{
		StartNS: 0, EndNS: 5e9, Scrapes: 6, Kind: sm.KindDCGM,
		Gauges: map[sm.Name]sm.GaugeStats{
			sm.GPUUtil:         {N: 6, Mean: 0.8, Max: 0.95},
			sm.GPUPowerWatts:   {N: 6, Mean: 900, Max: 1100},
			sm.GPUMemUsedBytes: {N: 6, Mean: 140 * gib, Max: 150 * gib},
		},
		GPUs: map[string]map[sm.Name]sm.GaugeStats{
			"1": {
				sm.GPUUtil:         {N: 6, Mean: 0.7, Max: 0.9},
				sm.GPUPowerWatts:   {N: 6, Mean: 425.5, Max: 520},
				sm.GPUMemUsedBytes: {N: 6, Mean: 69.5 * gib, Max: 75 * gib},
			},
			"0": {
				sm.GPUUtil:         {N: 6, Mean: 0.9, Max: 0.95},
				sm.GPUPowerWatts:   {N: 6, Mean: 474.5, Max: 580},
				sm.GPUMemUsedBytes: {N: 6, Mean: 70.5 * gib, Max: 75 * gib},
			},
		},
	}
}

// gaugesWindow has gauges only, as a llama.cpp build without token
// counters might give, and a histogram with no observation in the window.
func gaugesWindow() *sm.Window {
	return &sm.Window{
		StartNS: 0, EndNS: 4e9, Scrapes: 5, Kind: sm.KindLlamaCpp,
		Gauges: map[sm.Name]sm.GaugeStats{
			sm.Running: {N: 5, Mean: 1.6, Max: 2},
			sm.Waiting: {N: 5, Mean: 0, Max: 0},
			sm.KVUsage: {N: 5, Mean: 0.25, Max: 0.5},
		},
		Histograms: map[sm.Name]sm.HistogramStats{sm.QueueTime: {}},
	}
}

func TestServerTerminalGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		win  *sm.Window
	}{
		{"server_vllm.golden", vllmWindow()},
		{"server_dcgm.golden", dcgmWindow()},
		{"server_gauges.golden", gaugesWindow()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := ServerTerminal(&b, tt.win); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
			checkServerLayout(t, b.String())
		})
	}
}

// checkServerLayout checks the house layout: headers are the block width,
// and every label fits its column, so values line up.
func checkServerLayout(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "==") || strings.HasPrefix(line, "--") {
			if len(line) != width {
				t.Errorf("header %q is %d wide; want %d", line, len(line), width)
			}
			continue
		}
		colon := strings.Index(line, ":")
		if colon < 0 || colon >= labelWidth || len(line) <= labelWidth+1 || line[labelWidth] != ' ' || line[labelWidth+1] == ' ' {
			t.Errorf("line %q: label does not fit its %d columns", line, labelWidth)
		}
	}
}

// TestServerTerminalLines checks by name which lines each window gets:
// only those for figures it has.
func TestServerTerminalLines(t *testing.T) {
	for _, tt := range []struct {
		name      string
		win       *sm.Window
		want, not []string
	}{
		{"vllm", vllmWindow(),
			[]string{"Scrapes (vllm):", "Server restarts", "Requests running", "Requests waiting", "KV cache usage (%)", "Preemptions:",
				"Prefix cache hit rate", "Prompt (prefill)", "Generation (decode)", "Requests finished", "From the server's histograms",
				"Queue time (ms)", "Prefill time (ms)", "Decode time (ms)", "Server TTFT (ms)"},
			[]string{"GPU", "E2E"}},
		{"dcgm", dcgmWindow(),
			[]string{"Scrapes (dcgm):", "GPUs (DCGM)", "GPU 0 utilisation (%)", "GPU 1 power (W)", "GPU 1 memory used (GiB)"},
			[]string{"Requests", "KV cache", "histograms", "throughput", "restarts"}},
		{"gauges only", gaugesWindow(),
			[]string{"Requests running", "Requests waiting", "KV cache usage"},
			[]string{"Preemptions", "Prefix", "throughput", "finished", "histograms", "Queue time", "GPU", "restarts"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := ServerTerminal(&b, tt.win); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("ServerTerminal(%s) lacks %q:\n%s", tt.name, s, out)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out, s) {
					t.Errorf("ServerTerminal(%s) has %q:\n%s", tt.name, s, out)
				}
			}
		})
	}
}

func TestServerNil(t *testing.T) {
	for _, tt := range []struct {
		name string
		win  *sm.Window
	}{{"nil", nil}, {"no scrapes", &sm.Window{}}} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := ServerTerminal(&b, tt.win); err != nil || b.Len() != 0 {
				t.Errorf("ServerTerminal(%s) = %q, %v; want \"\", nil", tt.name, b.String(), err)
			}
			if got := ServerJSON(tt.win); got != nil {
				t.Errorf("ServerJSON(%s) = %v; want nil", tt.name, got)
			}
		})
	}
}

// TestServerJSONByHand checks the vLLM window's JSON against figures
// worked out by hand from vllmWindow: ratios stay 0–1, histogram figures
// turn into ms.
func TestServerJSONByHand(t *testing.T) {
	want := map[string]any{
		"scrapes": 12, "seconds": 11.0, "kind": "vllm", "restarts": 1,
		"running_mean": 12.5, "running_max": 16.0,
		"waiting_mean": 3.25, "waiting_max": 8.0,
		"kv_usage_mean": 0.7134, "kv_usage_max": 0.96,
		"preemptions": 11.0, "preemptions_per_s": 1.0,
		"prefix_hit_rate":         0.4,
		"prompt_tokens_per_s":     5000.0,
		"generation_tokens_per_s": 800.0,
		"requests_per_s":          4.0,
		"queue_time_ms": map[string]any{"p50": 12.5, "p90": 40.0, "p99": 87.5, "mean": 21.0, "count": 44.0, "source": "histogram",
			"p50_min": 0.0, "p50_max": 42.0, "p90_min": 0.0, "p90_max": 210.0, "p99_min": 0.0, "p99_max": 300.0},
		"prefill_time_ms": map[string]any{"p50": 75.0, "p90": 200.0, "p99": 350.0, "mean": 90.0, "count": 44.0, "source": "histogram",
			"p50_min": 50.0, "p50_max": 100.0, "p90_min": 100.0, "p90_max": 250.0, "p99_min": 300.0, "p99_max": 500.0},
		// No p99_max: nothing bounds it.
		"decode_time_ms": map[string]any{"p50": 2250.0, "p90": 4000.0, "p99": 6500.0, "mean": 2500.0, "count": 44.0, "source": "histogram",
			"p50_min": 2000.0, "p50_max": 2500.0, "p90_min": 2500.0, "p90_max": 5000.0, "p99_min": 5000.0},
		"ttft_ms": map[string]any{"p50": 100.0, "p90": 250.0, "p99": 500.0, "mean": 125.0, "count": 44.0, "source": "histogram",
			"p50_min": 100.0, "p50_max": 100.0, "p90_min": 100.0, "p90_max": 250.0, "p99_min": 250.0, "p99_max": 500.0},
	}
	got := ServerJSON(vllmWindow())
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("ServerJSON(vllm) mismatch (-want +got):\n%s", diff)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("json.Marshal(ServerJSON(vllm)) = %v", err)
	}
}

// TestServerJSONKeys checks which keys the other windows get: absent
// figures are left out, not written as zero.
func TestServerJSONKeys(t *testing.T) {
	for _, tt := range []struct {
		name string
		win  *sm.Window
		want []string
	}{
		{"dcgm", dcgmWindow(), []string{"gpus", "kind", "scrapes", "seconds"}},
		{"gauges only", gaugesWindow(), []string{"kind", "kv_usage_max", "kv_usage_mean", "running_max", "running_mean", "scrapes", "seconds", "waiting_max", "waiting_mean"}},
		{"unknown kind", &sm.Window{EndNS: 1e9, Scrapes: 2}, []string{"scrapes", "seconds"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ServerJSON(tt.win)
			keys := make([]string, 0, len(got))
			for k := range got {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if diff := cmp.Diff(tt.want, keys); diff != "" {
				t.Errorf("ServerJSON(%s) keys mismatch (-want +got):\n%s", tt.name, diff)
			}
		})
	}
	gpus := ServerJSON(dcgmWindow())["gpus"]
	gib := float64(1 << 30)
	want := []map[string]any{
		{"id": "0", "util_mean": 0.9, "util_max": 0.95, "power_watts_mean": 474.5, "power_watts_max": 580.0, "mem_used_bytes_mean": 70.5 * gib, "mem_used_bytes_max": 75 * gib},
		{"id": "1", "util_mean": 0.7, "util_max": 0.9, "power_watts_mean": 425.5, "power_watts_max": 520.0, "mem_used_bytes_mean": 69.5 * gib, "mem_used_bytes_max": 75 * gib},
	}
	if diff := cmp.Diff(want, gpus); diff != "" {
		t.Errorf("ServerJSON(dcgm)[gpus] mismatch (-want +got):\n%s", diff)
	}
}

func TestGPUIDsOrder(t *testing.T) {
	win := &sm.Window{GPUs: map[string]map[sm.Name]sm.GaugeStats{}}
	in := []string{"10", "1x", "9", "2", "0/1", "0/0", "1", "x"}
	for _, id := range in {
		win.GPUs[id] = nil
	}
	want := []string{"0/0", "0/1", "1", "2", "9", "10", "1x", "x"}
	if got := gpuIDs(win); !slices.Equal(got, want) {
		t.Errorf("gpuIDs(%v) = %v; want %v", in, got, want)
	}
}

// TestServerPerRequestPreferred: with the requests' own timing, the queue,
// prefill and decode lines and keys come from it, exact, and say so;
// the server TTFT, which the split lacks, stays a histogram range.
func TestServerPerRequestPreferred(t *testing.T) {
	one := func(p50, p99 float64) stats.MetricSummary {
		return stats.MetricSummary{N: 40, Mean: p50, Median: p50, Percentiles: []stats.PercentileValue{{P: 50, Value: p50}, {P: 99, Value: p99}}}
	}
	split := &breakdown.TTFTSplit{N: 40, QueueKnown: true, Queue: one(0, 44.86), Prefill: one(60, 120), Decode: one(2100, 4200), E2E: one(2200, 4300)}
	var b bytes.Buffer
	if err := ServerTerminalTimed(&b, vllmWindow(), split); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Queue time (ms) mean, P50/P99:           0.00, 0.00 / 44.86 (per request)\n",
		"Prefill time (ms) mean, P50/P99:         60.00, 60.00 / 120.00 (per request)\n",
		"Decode time (ms) mean, P50/P99:          2100.00, 2100.00 / 4200.00 (per request)\n",
		"Server TTFT (ms) mean, P50/P99:          125.00, 100.00 / 250.00–500.00\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("ServerTerminalTimed lacks %q:\n%s", want, out)
		}
	}
	m := ServerJSONTimed(vllmWindow(), split)
	want := map[string]any{"mean": 0.0, "count": 40, "p50": 0.0, "p99": 44.86, "source": "per_request"}
	if diff := cmp.Diff(want, m["queue_time_ms"]); diff != "" {
		t.Errorf("ServerJSONTimed queue_time_ms mismatch (-want +got):\n%s", diff)
	}
	if src := m["ttft_ms"].(map[string]any)["source"]; src != "histogram" {
		t.Errorf("ServerJSONTimed ttft_ms source = %v; want histogram", src)
	}
	// A server with no queue of its own keeps the queue histogram.
	split.QueueKnown = false
	if src := ServerJSONTimed(vllmWindow(), split)["queue_time_ms"].(map[string]any)["source"]; src != "histogram" {
		t.Errorf("queue unknown: queue_time_ms source = %v; want histogram", src)
	}
}
