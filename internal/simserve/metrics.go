package simserve

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/servermetrics"
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
	ttftBuckets = servermetrics.VLLMTTFTBuckets
	// itlBuckets are vllm:inter_token_latency_seconds' buckets (seconds).
	itlBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
	// requestLatencyBuckets are shared by the e2e, queue, prefill and decode
	// histograms (seconds).
	requestLatencyBuckets = servermetrics.VLLMRequestLatencyBuckets
	// iterationTokensBuckets are vllm:iteration_tokens_total's (tokens).
	iterationTokensBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// buckets125 is vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, …
// up to max, the buckets of its per-request token histograms.
func buckets125(max int) []float64 {
	var b []float64
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p > max {
				return b
			}
			b = append(b, float64(m*p))
		}
	}
}

// metrics are the server's Prometheus series, bound to one (model_name,
// engine) label pair. They are updated in place by the engine goroutine
// (gauges, counters, latency histograms) — never through a channel — and
// read by the registry on scrape.
type metrics struct {
	running, waiting, kvUsage                                       prometheus.Gauge
	prefixQueries, prefixHits, promptTokens, genTokens, preemptions prometheus.Counter
	ttft, itl, e2e, queue, prefill, decode                          prometheus.Observer
	success                                                         map[string]prometheus.Counter // by finished_reason
	iterTokens                                                      prometheus.Observer

	// The per-request token histograms, whose buckets follow the engine's
	// max_model_len, and the cache config info; set once by bindEngine.
	reg                           prometheus.Registerer
	labels                        prometheus.Labels
	bind                          sync.Once
	reqPromptTokens, reqGenTokens prometheus.Observer

	last sim.Snapshot // counters already exported, for deltas
}

// newMetrics registers the series of one engine, labelled engine (vLLM
// V1's data-parallel rank label: "0" for one engine, a replica's number
// (from 1) in a fleet, so that summing by model_name gives the fleet).
func newMetrics(reg prometheus.Registerer, model, engine string) (*metrics, error) {
	labels := prometheus.Labels{"model_name": model, "engine": engine}
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
		iterTokens:    hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterationTokensBuckets),
		success:       map[string]prometheus.Counter{},
		reg:           reg,
		labels:        labels,
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

// bindEngine registers, once, the families shaped by the engine:
// vllm:request_prompt_tokens and vllm:request_generation_tokens (buckets
// up to maxModelLen) and vllm:cache_config_info. A registration error (the
// names already taken on a shared registry) is logged, not fatal: serving
// goes on without them.
func (m *metrics) bindEngine(log *slog.Logger, maxModelLen, blockSize int, describe runlog.Engine) {
	m.bind.Do(func() {
		b := buckets125(maxModelLen)
		pt := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:request_prompt_tokens",
			Help: "Number of prefill tokens processed.", Buckets: b, ConstLabels: m.labels})
		gt := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:request_generation_tokens",
			Help: "Number of generation tokens processed.", Buckets: b, ConstLabels: m.labels})
		info := cacheConfigInfo(blockSize, describe, m.labels["engine"])
		for _, c := range []prometheus.Collector{pt, gt, info} {
			if err := m.reg.Register(c); err != nil {
				log.Warn("simserve: some vLLM metrics are not exported", "err", err)
				return
			}
		}
		m.reqPromptTokens, m.reqGenTokens = pt, gt
	})
}

// cacheConfigInfo is vllm:cache_config_info: a gauge set to 1 whose labels
// are the cache config, as vLLM's log_metrics_info emulates an info metric.
// vLLM labels it with every CacheConfig field (str() of each: True, None,
// 0.9) plus engine, and no model_name; the simulator gives the fields it
// models, in vLLM's spelling: cache_dtype is "fp8" for an fp8 KV cache and
// vLLM's default "auto" (the model's dtype) otherwise.
func cacheConfigInfo(blockSize int, d runlog.Engine, engine string) prometheus.Collector {
	pyBool := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	pyFloat := func(f float64) string {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if f == float64(int64(f)) {
			s += ".0" // Python's str(1.0)
		}
		return s
	}
	dtype := "auto"
	if d.KVCacheDType == "fp8" {
		dtype = "fp8"
	}
	prefix, util, blocks := d.EnablePrefixCaching, d.GPUMemoryUtilization, d.NumGPUBlocks
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: prometheus.Labels{
			"block_size":             strconv.Itoa(blockSize),
			"cache_dtype":            dtype,
			"enable_prefix_caching":  pyBool(prefix),
			"gpu_memory_utilization": pyFloat(util),
			"num_gpu_blocks":         strconv.Itoa(blocks),
			"engine":                 engine,
		},
	})
	g.Set(1)
	return g
}

// observeFinished counts one finished request's prompt and generated
// tokens.
func (m *metrics) observeFinished(prompt, generated int) {
	if m.reqPromptTokens == nil {
		return // not bound (registration failed)
	}
	m.reqPromptTokens.Observe(float64(prompt))
	m.reqGenTokens.Observe(float64(generated))
}

// observeSnapshot sets the gauges and advances the counters to s. It is
// called once per engine iteration, so the iteration's tokens are the
// counters' growth: as vLLM counts an iteration's prompt tokens (those of
// the requests whose prefill it completed) plus its generated tokens. An
// iteration that completed neither (a chunk of a prefill, an idle poll) is
// not observed.
func (m *metrics) observeSnapshot(s sim.Snapshot) {
	if n := (s.PromptTokens - m.last.PromptTokens) + (s.GenerationTokens - m.last.GenerationTokens); n > 0 {
		m.iterTokens.Observe(float64(n))
	}
	m.observeGauges(s)
	addDelta(m.prefixQueries, s.PrefixQueryTokens, m.last.PrefixQueryTokens)
	addDelta(m.prefixHits, s.PrefixHitTokens, m.last.PrefixHitTokens)
	addDelta(m.preemptions, s.Preemptions, m.last.Preemptions)
	addDelta(m.promptTokens, s.PromptTokens, m.last.PromptTokens)
	addDelta(m.genTokens, s.GenerationTokens, m.last.GenerationTokens)
	m.last = s
}

// observeGauges sets the gauges alone to s: a fleet's replica after an
// abort, whose counters may include an iteration not yet over.
func (m *metrics) observeGauges(s sim.Snapshot) {
	m.running.Set(float64(s.Running))
	m.waiting.Set(float64(s.Waiting))
	m.kvUsage.Set(s.KVUsage)
}

// registerSlowdown exports the slowdown factor in force (read at scrape
// time, so a scheduled slowdown shows from its start), so that a scrape
// says when latencies were degraded on purpose.
func (m *metrics) registerSlowdown(reg prometheus.Registerer, model string, factor func() float64) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "goodput_sim_slowdown_factor",
		Help:        "Factor by which the simulated engine's iterations are stretched on the wall clock (1: none; POST /goodput/slowdown).",
		ConstLabels: prometheus.Labels{"model_name": model},
	}, factor)
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	return nil
}

func addDelta(c prometheus.Counter, cur, last int64) {
	if cur > last {
		c.Add(float64(cur - last))
	}
}
