package findings_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/findings"
	sm "github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// hist is a server histogram of 600 observations with the given mean,
// seconds.
func hist(meanS float64) sm.HistogramStats { return sm.HistogramStats{Count: 600, Mean: meanS} }

// gauge is a gauge over 13 scrapes with the given mean and max.
func gauge(mean, hi float64) sm.GaugeStats {
	return sm.GaugeStats{N: 13, Mean: mean, Min: 0, Max: hi, Last: mean}
}

// gpus sets one GPU per utilisation (0–1).
func gpus(w *sm.Window, utils ...float64) {
	w.GPUs = map[string]map[sm.Name]sm.GaugeStats{}
	for i, u := range utils {
		w.GPUs[fmt.Sprint(i)] = map[sm.Name]sm.GaugeStats{sm.GPUUtil: gauge(u, u)}
	}
}

// clientTTFT sets the client's mean TTFT, ms.
func clientTTFT(s *stats.Summary, ms float64) {
	s.Metrics = []stats.MetricSummary{{Name: stats.MetricTTFT, N: 600, Mean: ms, Median: ms}}
}

// healthy is a calm vLLM level, 60 s over 13 scrapes, that no rule fires
// on: 0.25 requests waiting on average (max 1); queue 10 ms against prefill
// 80 ms; server TTFT 95 ms against the client's 120 ms (25 ms apart, under
// 50); KV cache at most 60 %, no preemption; 40 % prefix hits over 100,000
// prompt tokens; two GPUs 85 % and 75 % busy (80 %).
func healthy() (*stats.Summary, *sm.Window) {
	s := &stats.Summary{Requests: 600, Completed: 600}
	clientTTFT(s, 120)
	w := &sm.Window{
		StartNS: 0, EndNS: 60e9, Scrapes: 13, Kind: sm.KindVLLM,
		Gauges: map[sm.Name]sm.GaugeStats{
			sm.Running: gauge(20, 32), sm.Waiting: gauge(0.25, 1), sm.KVUsage: gauge(0.4, 0.6),
		},
		Increase:      map[sm.Name]float64{sm.Preemptions: 0, sm.PrefixQueries: 100000, sm.PrefixHits: 40000},
		Rate:          map[sm.Name]float64{sm.Preemptions: 0, sm.PrefixQueries: 100000.0 / 60, sm.PrefixHits: 40000.0 / 60},
		Histograms:    map[sm.Name]sm.HistogramStats{sm.QueueTime: hist(0.01), sm.PrefillTime: hist(0.08), sm.TTFT: hist(0.095)},
		PrefixHitRate: 0.4,
	}
	gpus(w, 0.85, 0.75)
	return s, w
}

// queued edits the healthy level into one with waitMean (max waitMax)
// requests waiting, a mean queue time of queueS and prefill time of
// prefillS (seconds; below 0: no prefill histogram, as SGLang and TGI), and
// a client TTFT of 600 ms that the server's TTFT histogram (600 ms) agrees
// with, so only the queueing rule can speak.
func queued(waitMean, waitMax, queueS, prefillS float64) func(*stats.Summary, *sm.Window) {
	return func(s *stats.Summary, w *sm.Window) {
		w.Gauges[sm.Waiting] = gauge(waitMean, waitMax)
		w.Histograms[sm.QueueTime] = hist(queueS)
		w.Histograms[sm.TTFT] = hist(0.6)
		if prefillS >= 0 {
			w.Histograms[sm.PrefillTime] = hist(prefillS)
		} else {
			delete(w.Histograms, sm.PrefillTime)
		}
		clientTTFT(s, 600)
	}
}

// TestServerEvidenceRules puts each rule on either side of its thresholds;
// every case starts from the healthy level.
func TestServerEvidenceRules(t *testing.T) {
	const (
		queueing  = "server-queueing"
		kv        = "server-kv-pressure"
		gpuIdle   = "gpu-idle-while-queueing"
		clientGap = "client-side-latency"
		prefix    = "server-prefix-cache-low"
	)
	tests := []struct {
		name string
		edit func(*stats.Summary, *sm.Window)
		want []string
	}{
		{name: "healthy", edit: func(*stats.Summary, *sm.Window) {}},

		// server-queueing. The client's 600 ms TTFT puts the 30 % share at
		// 180 ms, so cases with a shorter queue test the prefill ratio alone.
		{name: "queue 160 ms is 2x prefill 80 ms", edit: queued(0.6, 3, 0.16, 0.08), want: []string{queueing}},
		{name: "queue 159 ms is under 2x prefill 80 ms", edit: queued(0.6, 3, 0.159, 0.08)},
		{name: "queue 50 ms is 2x prefill 25 ms", edit: queued(0.6, 3, 0.05, 0.025), want: []string{queueing}},
		{name: "queue 49 ms is 2x prefill but under 50 ms", edit: queued(0.6, 3, 0.049, 0.0245)},
		{name: "queue 180 ms is 30 % of TTFT 600 ms, no prefill histogram", edit: queued(0.6, 3, 0.18, -1), want: []string{queueing}},
		{name: "queue 179.9 ms is under 30 % of TTFT, no prefill histogram", edit: queued(0.6, 3, 0.1799, -1)},
		{name: "queue 180 ms is 30 % of TTFT though prefill is longer", edit: queued(0.6, 3, 0.18, 0.4), want: []string{queueing}},
		{name: "waiting mean 0.51 is a queue", edit: queued(0.51, 1, 0.16, 0.08), want: []string{queueing}},
		{name: "waiting mean 0.5 max 1 is no queue", edit: queued(0.5, 1, 0.16, 0.08)},
		{name: "waiting max 2 is a queue", edit: queued(0.2, 2, 0.16, 0.08), want: []string{queueing}},
		{name: "waiting mean 0.2 max 1 is no queue", edit: queued(0.2, 1, 0.16, 0.08)},
		{name: "no waiting gauge", edit: func(s *stats.Summary, w *sm.Window) {
			queued(0.6, 3, 0.16, 0.08)(s, w)
			delete(w.Gauges, sm.Waiting)
		}},
		{name: "queue share without a client TTFT", edit: func(s *stats.Summary, w *sm.Window) {
			queued(0.6, 3, 0.18, -1)(s, w)
			s.Metrics = nil
		}},

		// server-kv-pressure.
		{name: "kv max 95 %", edit: func(_ *stats.Summary, w *sm.Window) { w.Gauges[sm.KVUsage] = gauge(0.7, 0.95) }, want: []string{kv}},
		{name: "kv max 94.9 %", edit: func(_ *stats.Summary, w *sm.Window) { w.Gauges[sm.KVUsage] = gauge(0.7, 0.949) }},
		{name: "one preemption", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Increase[sm.Preemptions], w.Rate[sm.Preemptions] = 1, 1.0/60
		}, want: []string{kv}},
		{name: "one preemption without a kv gauge", edit: func(_ *stats.Summary, w *sm.Window) {
			delete(w.Gauges, sm.KVUsage)
			w.Increase[sm.Preemptions], w.Rate[sm.Preemptions] = 1, 1.0/60
		}, want: []string{kv}},

		// gpu-idle-while-queueing. The queue time stays 10 ms, so the
		// queueing rule stays quiet.
		{name: "gpus 49 % busy while 0.6 wait", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.Waiting] = gauge(0.6, 1)
			gpus(w, 0.48, 0.5)
		}, want: []string{gpuIdle}},
		{name: "gpus 50 % busy while 0.6 wait", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.Waiting] = gauge(0.6, 1)
			gpus(w, 0.5, 0.5)
		}},
		{name: "gpus 20 % busy while 0.5 wait", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.Waiting] = gauge(0.5, 1)
			gpus(w, 0.2)
		}},
		{name: "gpu_util gauge without per-GPU figures", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.Waiting] = gauge(0.6, 1)
			w.GPUs = nil
			w.Gauges[sm.GPUUtil] = gauge(0.4, 0.6)
		}, want: []string{gpuIdle}},
		{name: "no gpu figures while 0.6 wait", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.Waiting] = gauge(0.6, 1)
			w.GPUs = nil
		}},

		// client-side-latency: gap ≥ 50 ms and ≥ 30 % of the client's TTFT.
		{name: "client 120 ms, server 70 ms: gap 50 ms", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Histograms[sm.TTFT] = hist(0.07)
		}, want: []string{clientGap}},
		{name: "client 120 ms, server 71 ms: gap 49 ms", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Histograms[sm.TTFT] = hist(0.071)
		}},
		{name: "client 500 ms, server 350 ms: gap 30 %", edit: func(s *stats.Summary, w *sm.Window) {
			clientTTFT(s, 500)
			w.Histograms[sm.TTFT] = hist(0.35)
		}, want: []string{clientGap}},
		{name: "client 500 ms, server 350.1 ms: gap under 30 %", edit: func(s *stats.Summary, w *sm.Window) {
			clientTTFT(s, 500)
			w.Histograms[sm.TTFT] = hist(0.3501)
		}},
		{name: "no ttft histogram: queue 10 + prefill 60 ms against 120 ms", edit: func(_ *stats.Summary, w *sm.Window) {
			delete(w.Histograms, sm.TTFT)
			w.Histograms[sm.PrefillTime] = hist(0.06)
		}, want: []string{clientGap}},
		{name: "no ttft histogram: queue 10 + prefill 61 ms against 120 ms", edit: func(_ *stats.Summary, w *sm.Window) {
			delete(w.Histograms, sm.TTFT)
			w.Histograms[sm.PrefillTime] = hist(0.061)
		}},
		{name: "no ttft and no prefill histogram", edit: func(_ *stats.Summary, w *sm.Window) {
			delete(w.Histograms, sm.TTFT)
			delete(w.Histograms, sm.PrefillTime)
		}},
		{name: "no client ttft", edit: func(s *stats.Summary, w *sm.Window) {
			s.Metrics = nil
			w.Histograms[sm.TTFT] = hist(0.01)
		}},

		// server-prefix-cache-low: hit rate < 10 % over ≥ 1,000 tokens.
		{name: "9.9 % hits over 100,000 tokens", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Increase[sm.PrefixHits], w.PrefixHitRate = 9900, 0.099
		}, want: []string{prefix}},
		{name: "10 % hits over 100,000 tokens", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Increase[sm.PrefixHits], w.PrefixHitRate = 10000, 0.1
		}},
		{name: "no hits over 1,000 tokens", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Increase[sm.PrefixQueries], w.Increase[sm.PrefixHits], w.PrefixHitRate = 1000, 0, 0
		}, want: []string{prefix}},
		{name: "no hits over 999 tokens", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Increase[sm.PrefixQueries], w.Increase[sm.PrefixHits], w.PrefixHitRate = 999, 0, 0
		}},
		{name: "no prefix counters", edit: func(_ *stats.Summary, w *sm.Window) {
			delete(w.Increase, sm.PrefixQueries)
			delete(w.Increase, sm.PrefixHits)
			w.PrefixHitRate = 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, w := healthy()
			tt.edit(s, w)
			got := serverIDs(findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixes: true}))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ServerEvidence IDs = %v; want %v", got, tt.want)
			}
		})
	}
}

func serverIDs(fs []findings.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// TestServerEvidenceNil: no window, nothing to say; a healthy window says
// nothing either (nil, not an empty slice).
func TestServerEvidenceNil(t *testing.T) {
	s, w := healthy()
	if got := findings.ServerEvidence(s, nil, findings.ServerOptions{SharedPrefixes: true}); got != nil {
		t.Errorf("ServerEvidence(s, nil) = %v; want nil", got)
	}
	if got := findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixes: true}); got != nil {
		t.Errorf("ServerEvidence(healthy) = %v; want nil", got)
	}
	if got := findings.ServerEvidence(nil, &sm.Window{}, findings.ServerOptions{SharedPrefixes: true}); got != nil {
		t.Errorf("ServerEvidence(nil, empty window) = %v; want nil", got)
	}
}

// TestServerEvidenceNilSummary: without the client's summary the rules
// that need its TTFT stay quiet and the others still speak.
func TestServerEvidenceNilSummary(t *testing.T) {
	s, w := healthy()
	queued(0.6, 3, 0.18, -1)(s, w) // queueing only by its share of TTFT
	w.Histograms[sm.TTFT] = hist(0.01)
	w.Gauges[sm.KVUsage] = gauge(0.9, 0.99)
	got := serverIDs(findings.ServerEvidence(nil, w, findings.ServerOptions{SharedPrefixes: true}))
	if want := []string{"server-kv-pressure"}; !slices.Equal(got, want) {
		t.Errorf("ServerEvidence(nil, w) IDs = %v; want %v", got, want)
	}
}

// TestServerEvidenceOrder: with every rule firing, the order is queueing,
// KV, idle GPUs, the client's share, the prefix cache.
func TestServerEvidenceOrder(t *testing.T) {
	s, w := healthy()
	clientTTFT(s, 1000)
	w.Gauges[sm.Waiting] = gauge(3, 6)
	w.Gauges[sm.KVUsage] = gauge(0.9, 0.99)
	w.Increase[sm.Preemptions], w.Rate[sm.Preemptions] = 12, 0.2
	w.Histograms[sm.QueueTime], w.Histograms[sm.PrefillTime], w.Histograms[sm.TTFT] = hist(0.4), hist(0.1), hist(0.52)
	w.Increase[sm.PrefixHits], w.PrefixHitRate = 2000, 0.02
	gpus(w, 0.3, 0.3)
	got := serverIDs(findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixes: true}))
	want := []string{"server-queueing", "server-kv-pressure", "gpu-idle-while-queueing", "client-side-latency", "server-prefix-cache-low"}
	if !slices.Equal(got, want) {
		t.Errorf("ServerEvidence IDs = %v; want %v", got, want)
	}
	// Prompts that share nothing (random ones) make a low hit rate no
	// fault: the rule is not asked.
	got = serverIDs(findings.ServerEvidence(s, w, findings.ServerOptions{}))
	if slices.Contains(got, "server-prefix-cache-low") || len(got) != 4 {
		t.Errorf("without shared prefixes: IDs = %v; want the other four", got)
	}
}

// TestServerEvidenceFindings checks each rule's severity, evidence and the
// metrics its message names, figures worked out by hand.
func TestServerEvidenceFindings(t *testing.T) {
	tests := []struct {
		name string
		edit func(*stats.Summary, *sm.Window)
		want findings.Finding // Message: a substring it must contain
		ids  []string         // every ID expected; nil: want.ID alone
	}{
		{name: "queueing", edit: queued(0.6, 3, 0.16, 0.08),
			want: findings.Finding{ID: "server-queueing", Severity: findings.Warning,
				// 160 / 600 = 26.67 % of the client's TTFT: under 30 %, so
				// only the prefill ratio (2×) is named.
				Message: "The server confirms queueing: vllm:num_requests_waiting (waiting) averaged 0.6 requests (max 3) and the mean vllm:request_queue_time_seconds (queue_time) was 160 ms, 2× the mean vllm:request_prefill_time_seconds (prefill_time) of 80 ms. Requests wait for a slot before prefill starts: add replicas, lower the load, or raise --max-num-seqs if the KV cache has room (vllm:kv_cache_usage_perc (kv_usage) peaked at 60 %).",
				Evidence: map[string]any{
					"server_kind": "vllm",
					"server_metrics": map[string]string{"waiting": "vllm:num_requests_waiting", "queue_time": "vllm:request_queue_time_seconds",
						"prefill_time": "vllm:request_prefill_time_seconds", "kv_usage": "vllm:kv_cache_usage_perc"},
					"waiting_mean": 0.6, "waiting_max": 3.0, "queue_time_mean_ms": 160.0, "prefill_time_mean_ms": 80.0,
					"client_ttft_mean_ms": 600.0, "queue_share_of_ttft_pct": 26.67, "kv_usage_max_pct": 60.0,
				}}},
		{name: "queueing by share of TTFT", edit: queued(0.6, 3, 0.3, 0.2),
			want: findings.Finding{ID: "server-queueing", Severity: findings.Warning,
				// 300 ms is 1.5× prefill (not 2×) but 50 % of 600 ms.
				Message: "was 300 ms, 50 % of the client's mean TTFT of 600 ms.",
				Evidence: map[string]any{
					"server_kind": "vllm",
					"server_metrics": map[string]string{"waiting": "vllm:num_requests_waiting", "queue_time": "vllm:request_queue_time_seconds",
						"prefill_time": "vllm:request_prefill_time_seconds", "kv_usage": "vllm:kv_cache_usage_perc"},
					"waiting_mean": 0.6, "waiting_max": 3.0, "queue_time_mean_ms": 300.0, "prefill_time_mean_ms": 200.0,
					"client_ttft_mean_ms": 600.0, "queue_share_of_ttft_pct": 50.0, "kv_usage_max_pct": 60.0,
				}}},
		{name: "kv pressure with preemptions", edit: func(_ *stats.Summary, w *sm.Window) {
			// 12 preemptions over the 60 s window: 0.2/s.
			w.Gauges[sm.KVUsage] = gauge(0.7, 0.97)
			w.Increase[sm.Preemptions], w.Rate[sm.Preemptions] = 12, 0.2
		}, want: findings.Finding{ID: "server-kv-pressure", Severity: findings.Warning,
			Message: "The KV cache is the limit: vllm:kv_cache_usage_perc (kv_usage) peaked at 97 % (mean 70 %) and vllm:num_preemptions_total (preemptions) rose by 12 (0.2/s); preempted requests",
			Evidence: map[string]any{
				"server_kind":      "vllm",
				"server_metrics":   map[string]string{"kv_usage": "vllm:kv_cache_usage_perc", "preemptions": "vllm:num_preemptions_total"},
				"kv_usage_max_pct": 97.0, "kv_usage_mean_pct": 70.0, "preemptions": 12.0, "preemptions_per_s": 0.2,
			}}},
		{name: "kv full without preemptions", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.KVUsage] = gauge(0.8, 0.96)
		}, want: findings.Finding{ID: "server-kv-pressure", Severity: findings.Warning,
			Message: "rose by 0 (0/s); the scheduler is about to preempt",
			Evidence: map[string]any{
				"server_kind":      "vllm",
				"server_metrics":   map[string]string{"kv_usage": "vllm:kv_cache_usage_perc", "preemptions": "vllm:num_preemptions_total"},
				"kv_usage_max_pct": 96.0, "kv_usage_mean_pct": 80.0, "preemptions": 0.0, "preemptions_per_s": 0.0,
			}}},
		{name: "idle gpus", edit: func(_ *stats.Summary, w *sm.Window) {
			// (48 % + 50 %) / 2 = 49 %.
			w.Gauges[sm.Waiting] = gauge(0.6, 1)
			gpus(w, 0.48, 0.5)
		}, want: findings.Finding{ID: "gpu-idle-while-queueing", Severity: findings.Warning,
			Message: "GPUs were busy only 49 % of the time (DCGM_FI_DEV_GPU_UTIL (gpu_util), mean over 2 GPUs) while vllm:num_requests_waiting (waiting) averaged 0.6 requests",
			Evidence: map[string]any{
				"server_kind": "vllm",
				"server_metrics": map[string]string{"waiting": "vllm:num_requests_waiting", "gpu_util": "DCGM_FI_DEV_GPU_UTIL",
					"kv_usage": "vllm:kv_cache_usage_perc"},
				"waiting_mean": 0.6, "gpu_util_mean_pct": 49.0, "gpus": 2, "kv_usage_max_pct": 60.0,
			}}},
		{name: "idle gpus with a full kv cache", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Gauges[sm.Waiting] = gauge(0.6, 1)
			w.Gauges[sm.KVUsage] = gauge(0.9, 0.98)
			w.GPUs = nil
			w.Gauges[sm.GPUUtil] = gauge(0.3, 0.5)
		}, want: findings.Finding{ID: "gpu-idle-while-queueing", Severity: findings.Warning,
			Message: "not compute. With vllm:kv_cache_usage_perc (kv_usage) at 98 %, the full KV cache may be what admits no more (see server-kv-pressure).",
			Evidence: map[string]any{
				"server_kind": "vllm",
				"server_metrics": map[string]string{"waiting": "vllm:num_requests_waiting", "gpu_util": "DCGM_FI_DEV_GPU_UTIL",
					"kv_usage": "vllm:kv_cache_usage_perc"},
				"waiting_mean": 0.6, "gpu_util_mean_pct": 30.0, "kv_usage_max_pct": 98.0,
			}},
			ids: []string{"server-kv-pressure", "gpu-idle-while-queueing"}},
		{name: "client-side latency", edit: func(_ *stats.Summary, w *sm.Window) {
			// 120 − 70 = 50 ms, 41.67 % of 120.
			w.Histograms[sm.TTFT] = hist(0.07)
		}, want: findings.Finding{ID: "client-side-latency", Severity: findings.Warning,
			Message: "The client's mean TTFT of 120 ms is 50 ms (41.67 %) above the server's own, 70 ms by mean vllm:time_to_first_token_seconds (ttft)",
			Evidence: map[string]any{
				"server_kind":         "vllm",
				"server_metrics":      map[string]string{"ttft": "vllm:time_to_first_token_seconds"},
				"client_ttft_mean_ms": 120.0, "server_ttft_mean_ms": 70.0, "gap_ms": 50.0, "gap_pct": 41.67,
			}}},
		{name: "client-side latency from queue and prefill", edit: func(s *stats.Summary, w *sm.Window) {
			// 10 + 40 = 50 ms against 200 ms: 150 ms, 75 %.
			clientTTFT(s, 200)
			delete(w.Histograms, sm.TTFT)
			w.Histograms[sm.PrefillTime] = hist(0.04)
		}, want: findings.Finding{ID: "client-side-latency", Severity: findings.Warning,
			Message: "50 ms by mean vllm:request_queue_time_seconds (queue_time) + vllm:request_prefill_time_seconds (prefill_time)",
			Evidence: map[string]any{
				"server_kind":         "vllm",
				"server_metrics":      map[string]string{"queue_time": "vllm:request_queue_time_seconds", "prefill_time": "vllm:request_prefill_time_seconds"},
				"client_ttft_mean_ms": 200.0, "server_ttft_mean_ms": 50.0, "gap_ms": 150.0, "gap_pct": 75.0,
			}}},
		{name: "low prefix hits", edit: func(_ *stats.Summary, w *sm.Window) {
			w.Increase[sm.PrefixHits], w.PrefixHitRate = 9900, 0.099
		}, want: findings.Finding{ID: "server-prefix-cache-low", Severity: findings.Info,
			Message: "hit 9.9 % of the prompt tokens it looked up (9900 of 100000, from vllm:prefix_cache_hits_total (prefix_hits) / vllm:prefix_cache_queries_total (prefix_queries))",
			Evidence: map[string]any{
				"server_kind":    "vllm",
				"server_metrics": map[string]string{"prefix_hits": "vllm:prefix_cache_hits_total", "prefix_queries": "vllm:prefix_cache_queries_total"},
				"prefix_hit_pct": 9.9, "prefix_queries_tokens": 100000.0, "prefix_hits_tokens": 9900.0,
			}}},
		{name: "sglang names its own families", edit: func(s *stats.Summary, w *sm.Window) {
			queued(0.6, 3, 0.18, -1)(s, w)
			w.Kind = sm.KindSGLang
			delete(w.Gauges, sm.KVUsage)
		}, want: findings.Finding{ID: "server-queueing", Severity: findings.Warning,
			Message: "sglang:num_queue_reqs (waiting) averaged 0.6 requests (max 3) and the mean sglang:queue_time_seconds (queue_time) was 180 ms, 30 % of the client's mean TTFT of 600 ms. Requests wait for a slot before prefill starts: add replicas, lower the load, or raise --max-num-seqs if the KV cache has room.",
			Evidence: map[string]any{
				"server_kind":    "sglang",
				"server_metrics": map[string]string{"waiting": "sglang:num_queue_reqs", "queue_time": "sglang:queue_time_seconds"},
				"waiting_mean":   0.6, "waiting_max": 3.0, "queue_time_mean_ms": 180.0,
				"client_ttft_mean_ms": 600.0, "queue_share_of_ttft_pct": 30.0,
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, w := healthy()
			tt.edit(s, w)
			fs := findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixes: true})
			ids := tt.ids
			if ids == nil {
				ids = []string{tt.want.ID}
			}
			if got := serverIDs(fs); !slices.Equal(got, ids) {
				t.Fatalf("ServerEvidence IDs = %v; want %v", got, ids)
			}
			got := fs[slices.Index(ids, tt.want.ID)]
			if got.ID != tt.want.ID || got.Severity != tt.want.Severity {
				t.Errorf("ServerEvidence = %s (%s); want %s (%s)", got.ID, got.Severity, tt.want.ID, tt.want.Severity)
			}
			if !strings.Contains(got.Message, tt.want.Message) {
				t.Errorf("message = %q; want it to contain %q", got.Message, tt.want.Message)
			}
			if d := cmp.Diff(tt.want.Evidence, got.Evidence); d != "" {
				t.Errorf("evidence mismatch (-want +got):\n%s", d)
			}
		})
	}
}

// ServerEvidence sets the server's own account of a level beside the
// client's: here the client saw a 900 ms mean TTFT, and the server says
// 600 ms of it was spent waiting for a slot.
func ExampleServerEvidence() {
	s := &stats.Summary{Requests: 300, Completed: 300,
		Metrics: []stats.MetricSummary{{Name: stats.MetricTTFT, N: 300, Mean: 900, Median: 850}}}
	w := &sm.Window{StartNS: 0, EndNS: 60e9, Scrapes: 13, Kind: sm.KindVLLM,
		Gauges: map[sm.Name]sm.GaugeStats{sm.Waiting: {N: 13, Mean: 7, Max: 12}, sm.KVUsage: {N: 13, Mean: 0.5, Max: 0.7}},
		Histograms: map[sm.Name]sm.HistogramStats{
			sm.QueueTime: {Count: 300, Mean: 0.6}, sm.PrefillTime: {Count: 300, Mean: 0.2}, sm.TTFT: {Count: 300, Mean: 0.85},
		},
	}
	for _, f := range findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixes: true}) {
		fmt.Println(f.ID, f.Evidence["queue_time_mean_ms"], f.Evidence["prefill_time_mean_ms"])
	}
	// Output:
	// server-queueing 600 200
}

// The hit rate against the share the workload's shared prefix implies, by
// hand: 600 requests of 1,536 prompt tokens on average share 1,024, so a
// working cache hits about 1024/1536 = 66.67 %. 40 % is not under half of
// it; 20 % is; a server that looked nothing up while it processed prompts
// has the cache off; a prefix of 100 tokens (6.5 %) is too little to judge.
func TestPrefixCacheBelowImplied(t *testing.T) {
	ids := func(s *stats.Summary, w *sm.Window, shared int) []string {
		return serverIDs(findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixTokens: shared}))
	}
	s, w := healthy()
	s.InputTokens = 600 * 1536
	if got := ids(s, w, 1024); slices.Contains(got, "server-prefix-cache-low") {
		t.Errorf("40 %% of 66.67 %% implied: %v; want no finding", got)
	}
	w.PrefixHitRate, w.Increase[sm.PrefixHits] = 0.2, 20000
	fs := findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixTokens: 1024})
	var f findings.Finding
	for _, x := range fs {
		if x.ID == "server-prefix-cache-low" {
			f = x
		}
	}
	if f.Severity != findings.Warning || f.Evidence["implied_hit_pct"] != 66.67 || f.Evidence["prefix_hit_pct"] != 20.0 {
		t.Errorf("20 %% of 66.67 %% implied: %+v; want a warning with both shares", f)
	}
	if got := ids(s, w, 100); slices.Contains(got, "server-prefix-cache-low") {
		t.Errorf("a 100-token prefix: %v; want no finding", got)
	}
	w.Increase[sm.PrefixQueries], w.Increase[sm.PrefixHits], w.PrefixHitRate = 0, 0, 0
	w.Increase[sm.PromptTokens] = 600 * 1536
	fs = findings.ServerEvidence(s, w, findings.ServerOptions{SharedPrefixTokens: 1024})
	found := false
	for _, x := range fs {
		found = found || (x.ID == "server-prefix-cache-low" && strings.Contains(x.Message, "prefix caching is off"))
	}
	if !found {
		t.Errorf("no lookups while prompts were processed: %v; want the cache called off", serverIDs(fs))
	}
}

// TestReconcile: a client-side TTFT diagnosis that the server's own
// queueing figures settle does not fire beside them.
func TestReconcile(t *testing.T) {
	queueing := func(queue, prefill float64) findings.Finding {
		return findings.Finding{ID: "server-queueing", Evidence: map[string]any{"queue_time_mean_ms": queue, "prefill_time_mean_ms": prefill}}
	}
	ttftHigh, ttftPrefill, sla := findings.Finding{ID: "ttft-high"}, findings.Finding{ID: "ttft-prefill"}, findings.Finding{ID: "sla"}
	tests := []struct {
		name string
		in   []findings.Finding
		want []string
	}{
		{"undecided split beside the server's queueing", []findings.Finding{ttftHigh, queueing(1061, 204), sla}, []string{"server-queueing", "sla"}},
		{"prefill blamed while the queue dominates", []findings.Finding{ttftPrefill, queueing(1061, 204)}, []string{"server-queueing"}},
		{"prefill beside a queue that does not dominate", []findings.Finding{ttftPrefill, queueing(300, 400)}, []string{"ttft-prefill", "server-queueing"}},
		{"no server evidence", []findings.Finding{ttftHigh, sla}, []string{"ttft-high", "sla"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range findings.Reconcile(tt.in) {
				got = append(got, f.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Reconcile ids (-want +got):\n%s", diff)
			}
		})
	}
}
