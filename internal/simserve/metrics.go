package simserve

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/sim"
)

// The metric names, help texts, labels and histogram buckets are vLLM V1's
// (vllm/v1/metrics/loggers.py), so dashboards and scrapers built for vLLM
// read the simulator unchanged. vLLM's colon names are deliberate (they mark
// the vllm "namespace") even though promlint prefers recording-rule style
// without colons. Counters carry _total in their names because Go's client
// exposes counter names as given (the Python client appends _total).

var (
	// ttftBuckets are vllm:time_to_first_token_seconds' buckets (seconds).
	ttftBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
	// itlBuckets are vllm:inter_token_latency_seconds' buckets (seconds).
	itlBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
	// requestLatencyBuckets are shared by the e2e, queue, prefill and decode
	// histograms (seconds).
	requestLatencyBuckets = []float64{
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
)

// metrics are the server's Prometheus series, bound to one (model_name,
// engine) label pair. They are updated in place by the engine goroutine
// (gauges, counters, latency histograms) — never through a channel — and
// read by the registry on scrape.
type metrics struct {
	running, waiting, kvUsage                                       prometheus.Gauge
	prefixQueries, prefixHits, promptTokens, genTokens, preemptions prometheus.Counter
	ttft, itl, e2e, queue, prefill, decode                          prometheus.Observer
	success                                                         map[string]prometheus.Counter // by finished_reason

	last sim.Snapshot // counters already exported, for deltas
}

func newMetrics(reg prometheus.Registerer, model string) (*metrics, error) {
	labels := prometheus.Labels{"model_name": model, "engine": "0"}
	var cs []prometheus.Collector
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		cs = append(cs, g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		cs = append(cs, c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		cs = append(cs, h)
		return h
	}
	m := &metrics{
		running:       gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:       gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage:       gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		prefixQueries: counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
		prefixHits:    counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
		preemptions:   counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		promptTokens:  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:     counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		ttft:          hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:           hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		e2e:           hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestLatencyBuckets),
		queue:         hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestLatencyBuckets),
		prefill:       hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestLatencyBuckets),
		decode:        hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestLatencyBuckets),
		success:       map[string]prometheus.Counter{},
	}
	sv := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: labels,
	}, []string{"finished_reason"})
	cs = append(cs, sv)
	// vLLM pre-creates every finish reason's series so rates start at 0.
	for _, r := range []string{"stop", "length", "abort"} {
		m.success[r] = sv.WithLabelValues(r)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// observeSnapshot sets the gauges and advances the counters to s.
func (m *metrics) observeSnapshot(s sim.Snapshot) {
	m.running.Set(float64(s.Running))
	m.waiting.Set(float64(s.Waiting))
	m.kvUsage.Set(s.KVUsage)
	addDelta(m.prefixQueries, s.PrefixQueryTokens, m.last.PrefixQueryTokens)
	addDelta(m.prefixHits, s.PrefixHitTokens, m.last.PrefixHitTokens)
	addDelta(m.preemptions, s.Preemptions, m.last.Preemptions)
	addDelta(m.promptTokens, s.PromptTokens, m.last.PromptTokens)
	addDelta(m.genTokens, s.GenerationTokens, m.last.GenerationTokens)
	m.last = s
}

func addDelta(c prometheus.Counter, cur, last int64) {
	if cur > last {
		c.Add(float64(cur - last))
	}
}
