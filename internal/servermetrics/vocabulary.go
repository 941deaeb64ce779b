package servermetrics

import "math"

// Name is a canonical metric name: one word for one quantity, whichever
// server reported it, so a report can put vLLM and SGLang side by side.
type Name string

// The canonical names. Units are base units (seconds, tokens, bytes,
// watts, fractions 0–1); counters are cumulative since the server started.
const (
	// Running is the number of requests in the running batch (gauge).
	Running Name = "running"
	// Waiting is the number of requests queued, not yet scheduled (gauge).
	Waiting Name = "waiting"
	// KVUsage is the fraction of the KV cache in use, 0–1 (gauge).
	KVUsage Name = "kv_usage"
	// KVTokens is the number of tokens held in the KV cache (gauge).
	KVTokens Name = "kv_tokens"
	// PrefixHitRate is the server's own prefix-cache hit rate, 0–1, over a
	// window the server chose (gauge); prefer the windowed ratio of
	// PrefixHits to PrefixQueries where both are reported.
	PrefixHitRate Name = "prefix_hit_rate"
	// PrefixQueries is the number of prompt tokens looked up in the prefix
	// cache (counter, tokens).
	PrefixQueries Name = "prefix_queries"
	// PrefixHits is the number of prompt tokens found in the prefix cache
	// (counter, tokens).
	PrefixHits Name = "prefix_hits"
	// Preemptions is the number of requests preempted (SGLang: retracted)
	// to free KV cache (counter).
	Preemptions Name = "preemptions"
	// PromptTokens is the number of prompt (prefill) tokens processed
	// (counter, tokens).
	PromptTokens Name = "prompt_tokens"
	// GenerationTokens is the number of tokens generated (counter, tokens).
	GenerationTokens Name = "generation_tokens"
	// RequestsFinished is the number of requests that completed (counter).
	RequestsFinished Name = "requests_finished"
	// EngineSteps is the number of forward passes the engine ran (counter).
	EngineSteps Name = "engine_steps"
	// SpecDraftTokens is the number of tokens speculative decoding's
	// drafter proposed (counter, tokens).
	SpecDraftTokens Name = "spec_draft_tokens"
	// SpecAcceptedTokens is the number of drafted tokens the target model
	// accepted (counter, tokens); over SpecDraftTokens, the acceptance
	// rate.
	SpecAcceptedTokens Name = "spec_accepted_tokens"
	// PromptThroughput is the server's own prompt throughput over a window
	// it chose (gauge, tokens/s).
	PromptThroughput Name = "prompt_throughput"
	// GenerationThroughput is the server's own generation throughput over
	// a window it chose (gauge, tokens/s).
	GenerationThroughput Name = "generation_throughput"
	// BatchMaxTokens is the token budget of the current batch (gauge, tokens).
	BatchMaxTokens Name = "batch_max_tokens"

	// QueueTime is each request's time waiting to be scheduled (histogram, seconds).
	QueueTime Name = "queue_time"
	// PrefillTime is each request's time in prefill (histogram, seconds).
	PrefillTime Name = "prefill_time"
	// DecodeTime is each request's time in decode (histogram, seconds).
	DecodeTime Name = "decode_time"
	// InferenceTime is each request's time scheduled, prefill plus decode
	// (histogram, seconds).
	InferenceTime Name = "inference_time"
	// TTFT is the server-side time to first token (histogram, seconds).
	TTFT Name = "ttft"
	// ITL is the server-side gap between output tokens (histogram, seconds).
	ITL Name = "itl"
	// TPOT is each request's mean time per output token (histogram, seconds).
	TPOT Name = "tpot"
	// E2E is the server-side request latency (histogram, seconds).
	E2E Name = "e2e"
	// IterationTokens is the number of tokens per engine step (histogram, tokens).
	IterationTokens Name = "iteration_tokens"
	// RequestPromptTokens is each request's prompt length (histogram, tokens).
	RequestPromptTokens Name = "request_prompt_tokens"
	// RequestGenerationTokens is each request's output length (histogram, tokens).
	RequestGenerationTokens Name = "request_generation_tokens"

	// GPUUtil is the fraction of time a kernel ran, 0–1 (gauge; the mean
	// over GPUs in a snapshot).
	GPUUtil Name = "gpu_util"
	// GPUMemUsedBytes is the framebuffer memory in use (gauge, bytes; the
	// sum over GPUs in a snapshot).
	GPUMemUsedBytes Name = "gpu_mem_used_bytes"
	// GPUPowerWatts is the power draw (gauge, watts; the sum over GPUs in
	// a snapshot).
	GPUPowerWatts Name = "gpu_power_watts"
)

// Type is how a canonical metric behaves over time, which decides how a
// window treats it.
type Type int

// The types of canonical metrics.
const (
	// TypeGauge is a level: a window reports its mean, min, max and last.
	TypeGauge Type = iota + 1
	// TypeCounter only grows (a decrease is a restart): a window reports
	// its increase and rate.
	TypeCounter
	// TypeHistogram is cumulative bucket counts: a window reports
	// quantiles of the observations made inside it.
	TypeHistogram
)

// String returns "gauge", "counter" or "histogram".
func (t Type) String() string {
	switch t {
	case TypeGauge:
		return "gauge"
	case TypeCounter:
		return "counter"
	case TypeHistogram:
		return "histogram"
	}
	return "unknown"
}

// Kind is the server whose exposition a snapshot came from.
type Kind string

// The servers this package knows. KindUnknown ("") means no known family
// was found; the snapshot then holds raw families only.
const (
	KindUnknown  Kind = ""
	KindVLLM     Kind = "vllm"
	KindSGLang   Kind = "sglang"
	KindTGI      Kind = "tgi"
	KindLlamaCpp Kind = "llamacpp"
	KindDCGM     Kind = "dcgm"
)

// Def describes one canonical metric and where each server reports it.
type Def struct {
	// Name is the canonical name.
	Name Name
	// Type decides how windows treat the metric.
	Type Type
	// Unit is the base unit: "seconds", "tokens", "requests", "bytes",
	// "watts", "ratio" (0–1), "tokens/s" or "steps".
	Unit string
	// Mean is true where several series of one family (engines, GPUs) are
	// averaged rather than summed, because the quantity is a fraction:
	// two engines each 40 % full are 40 % full, not 80 %.
	Mean bool
	// Sources lists, per server, the families that report the metric in
	// order of preference: the first one present wins, so a server that
	// emits a renamed family beside its deprecated alias is not counted
	// twice.
	Sources map[Kind][]Source
}

// Source is one server family behind a canonical metric.
type Source struct {
	// Family is the metric family name as exposed (counters with their
	// _total suffix where the server writes one).
	Family string
	// Scale multiplies every value (bucket bounds for histograms) to reach
	// the canonical unit: 0.01 for percent, 1<<20 for MiB. Zero means 1.
	Scale float64
}

func src(families ...string) []Source {
	out := make([]Source, len(families))
	for i, f := range families {
		out[i] = Source{Family: f}
	}
	return out
}

// vocabulary is the table the mapping, the tests and docs/server-metrics.md
// are written from. Names were checked against each server's metric
// definitions (see the package doc).
var vocabulary = []Def{
	{Name: Running, Type: TypeGauge, Unit: "requests", Sources: map[Kind][]Source{
		KindVLLM:     src("vllm:num_requests_running"),
		KindSGLang:   src("sglang:num_running_reqs"),
		KindTGI:      src("tgi_batch_current_size"),
		KindLlamaCpp: src("llamacpp:requests_processing"),
	}},
	{Name: Waiting, Type: TypeGauge, Unit: "requests", Sources: map[Kind][]Source{
		KindVLLM:     src("vllm:num_requests_waiting"),
		KindSGLang:   src("sglang:num_queue_reqs"),
		KindTGI:      src("tgi_queue_size"),
		KindLlamaCpp: src("llamacpp:requests_deferred"),
	}},
	{Name: KVUsage, Type: TypeGauge, Unit: "ratio", Mean: true, Sources: map[Kind][]Source{
		KindVLLM:     src("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
		KindSGLang:   src("sglang:token_usage"),
		KindLlamaCpp: src("llamacpp:kv_cache_usage_ratio"),
	}},
	{Name: KVTokens, Type: TypeGauge, Unit: "tokens", Sources: map[Kind][]Source{
		KindSGLang:   src("sglang:num_used_tokens"),
		KindLlamaCpp: src("llamacpp:kv_cache_tokens"),
	}},
	{Name: PrefixHitRate, Type: TypeGauge, Unit: "ratio", Mean: true, Sources: map[Kind][]Source{
		KindSGLang: src("sglang:cache_hit_rate"),
	}},
	{Name: PrefixQueries, Type: TypeCounter, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
		// SGLang counts cached prompt tokens against all prompt tokens,
		// the same token-weighted ratio vLLM's pair gives.
		KindSGLang: src("sglang:prompt_tokens_total"),
	}},
	{Name: PrefixHits, Type: TypeCounter, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
		KindSGLang: src("sglang:cached_tokens_total"),
	}},
	{Name: SpecDraftTokens, Type: TypeCounter, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:spec_decode_num_draft_tokens_total"),
	}},
	{Name: SpecAcceptedTokens, Type: TypeCounter, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:spec_decode_num_accepted_tokens_total"),
	}},
	{Name: Preemptions, Type: TypeCounter, Unit: "requests", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:num_preemptions_total"),
		KindSGLang: src("sglang:num_retracted_requests_total"),
	}},
	{Name: PromptTokens, Type: TypeCounter, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM:     src("vllm:prompt_tokens_total"),
		KindSGLang:   src("sglang:prompt_tokens_total"),
		KindLlamaCpp: src("llamacpp:prompt_tokens_total"),
	}},
	{Name: GenerationTokens, Type: TypeCounter, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM:     src("vllm:generation_tokens_total"),
		KindSGLang:   src("sglang:generation_tokens_total"),
		KindLlamaCpp: src("llamacpp:tokens_predicted_total"),
	}},
	{Name: RequestsFinished, Type: TypeCounter, Unit: "requests", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:request_success_total"),
		KindSGLang: src("sglang:num_requests_total"),
		KindTGI:    src("tgi_request_success"),
	}},
	{Name: EngineSteps, Type: TypeCounter, Unit: "steps", Sources: map[Kind][]Source{
		KindTGI:      src("tgi_batch_inference_count"),
		KindLlamaCpp: src("llamacpp:n_decode_total"),
	}},
	{Name: PromptThroughput, Type: TypeGauge, Unit: "tokens/s", Sources: map[Kind][]Source{
		KindLlamaCpp: src("llamacpp:prompt_tokens_seconds"),
	}},
	{Name: GenerationThroughput, Type: TypeGauge, Unit: "tokens/s", Sources: map[Kind][]Source{
		KindSGLang:   src("sglang:gen_throughput"),
		KindLlamaCpp: src("llamacpp:predicted_tokens_seconds"),
	}},
	{Name: BatchMaxTokens, Type: TypeGauge, Unit: "tokens", Sources: map[Kind][]Source{
		KindTGI: src("tgi_batch_current_max_tokens"),
	}},

	{Name: QueueTime, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:request_queue_time_seconds"),
		KindSGLang: src("sglang:queue_time_seconds"),
		KindTGI:    src("tgi_request_queue_duration"),
	}},
	{Name: PrefillTime, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:request_prefill_time_seconds"),
	}},
	{Name: DecodeTime, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:request_decode_time_seconds"),
	}},
	{Name: InferenceTime, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:request_inference_time_seconds"),
		KindTGI:  src("tgi_request_inference_duration"),
	}},
	{Name: TTFT, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:time_to_first_token_seconds"),
		KindSGLang: src("sglang:time_to_first_token_seconds"),
	}},
	{Name: ITL, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		// vLLM's time_per_output_token_seconds observed per-iteration gaps,
		// so it was renamed inter_token_latency_seconds; both may appear.
		KindVLLM:   src("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
		KindSGLang: src("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
	}},
	{Name: TPOT, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:request_time_per_output_token_seconds"),
		KindTGI:  src("tgi_request_mean_time_per_token_duration"),
	}},
	{Name: E2E, Type: TypeHistogram, Unit: "seconds", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:e2e_request_latency_seconds"),
		KindSGLang: src("sglang:e2e_request_latency_seconds"),
		KindTGI:    src("tgi_request_duration"),
	}},
	{Name: IterationTokens, Type: TypeHistogram, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM: src("vllm:iteration_tokens_total"),
	}},
	{Name: RequestPromptTokens, Type: TypeHistogram, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:request_prompt_tokens"),
		KindSGLang: src("sglang:prompt_tokens_histogram"),
		KindTGI:    src("tgi_request_input_length"),
	}},
	{Name: RequestGenerationTokens, Type: TypeHistogram, Unit: "tokens", Sources: map[Kind][]Source{
		KindVLLM:   src("vllm:request_generation_tokens"),
		KindSGLang: src("sglang:generation_tokens_histogram"),
		KindTGI:    src("tgi_request_generated_tokens"),
	}},

	{Name: GPUUtil, Type: TypeGauge, Unit: "ratio", Mean: true, Sources: map[Kind][]Source{
		KindDCGM: {{Family: "DCGM_FI_DEV_GPU_UTIL", Scale: 0.01}},
	}},
	{Name: GPUMemUsedBytes, Type: TypeGauge, Unit: "bytes", Sources: map[Kind][]Source{
		KindDCGM: {{Family: "DCGM_FI_DEV_FB_USED", Scale: 1 << 20}},
	}},
	{Name: GPUPowerWatts, Type: TypeGauge, Unit: "watts", Sources: map[Kind][]Source{
		KindDCGM: src("DCGM_FI_DEV_POWER_USAGE"),
	}},
}

// Vocabulary returns the canonical metrics and their sources, in a fixed
// order. The slice is the caller's; the Sources maps are shared and must
// not be modified.
func Vocabulary() []Def {
	out := make([]Def, len(vocabulary))
	copy(out, vocabulary)
	return out
}

// defs indexes the vocabulary by canonical name.
var defs = func() map[Name]*Def {
	m := make(map[Name]*Def, len(vocabulary))
	for i := range vocabulary {
		m[vocabulary[i].Name] = &vocabulary[i]
	}
	return m
}()

// Lookup returns the definition of a canonical name.
func Lookup(n Name) (Def, bool) {
	d, ok := defs[n]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// prefixes tell the server kind from a family name.
var prefixes = []struct {
	prefix string
	kind   Kind
}{
	{"vllm:", KindVLLM},
	{"sglang:", KindSGLang},
	{"tgi_", KindTGI},
	{"llamacpp:", KindLlamaCpp},
	{"DCGM_FI_", KindDCGM},
}

// vLLM V1's histogram bucket layouts (upper bounds), for producers of
// vLLM-shaped metrics: goodput serve exports them, and the virtual-time
// engine's samples use them, so both read like a vLLM server's scrape.
var (
	// VLLMTTFTBuckets are vllm:time_to_first_token_seconds' (seconds).
	VLLMTTFTBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
	// VLLMRequestLatencyBuckets are shared by the e2e, queue, prefill and
	// decode time histograms (seconds).
	VLLMRequestLatencyBuckets = []float64{
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
)

// HistogramBuilder accumulates observations into a cumulative Histogram
// over fixed bounds, as a server's histogram does.
type HistogramBuilder struct {
	bounds []float64
	counts []float64 // per bound, not cumulative
	inf    float64
	sum    float64
}

// NewHistogramBuilder starts an empty histogram over bounds (ascending).
func NewHistogramBuilder(bounds []float64) *HistogramBuilder {
	return &HistogramBuilder{bounds: bounds, counts: make([]float64, len(bounds))}
}

// Observe adds one observation.
func (h *HistogramBuilder) Observe(v float64) {
	h.sum += v
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			return
		}
	}
	h.inf++
}

// Histogram is the state so far: cumulative buckets ending in +Inf.
func (h *HistogramBuilder) Histogram() Histogram {
	out := Histogram{Buckets: make([]Bucket, 0, len(h.bounds)+1), Sum: h.sum}
	var c float64
	for i, b := range h.bounds {
		c += h.counts[i]
		out.Buckets = append(out.Buckets, Bucket{UpperBound: b, Count: c})
	}
	c += h.inf
	out.Buckets = append(out.Buckets, Bucket{UpperBound: math.Inf(1), Count: c})
	out.Count = c
	return out
}
