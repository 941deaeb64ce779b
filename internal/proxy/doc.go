// Package proxy is goodput's transparent streaming proxy: put it between
// clients and an OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, a
// commercial API) and it passes every request and response through
// unchanged, flushing streamed responses event by event, while it measures
// each streamed /v1/completions, /v1/chat/completions, /v1/responses and
// /v1/messages (Anthropic) request, and each /v1/embeddings request,
// exactly as goodput bench measures its own: TTFT, time to publish, inter-token
// latency, TPOT, end-to-end latency, tokens from usage or counted, cached
// tokens, error class.
//
// Each measured request becomes a runlog.Record, which feeds Prometheus
// metrics (promexport.Metrics: histograms with classic and native buckets,
// counters, SLO attainment and goodput over sliding 1 m and 5 m windows)
// and, optionally, a size-rotated records file (RotatingWriter) that goodput
// report and compare read like any bench run. goodput bench serves the same
// promexport.Metrics with --metrics-listen, so client and server views of
// one run share names and labels.
//
// Credentials (Authorization and API-key headers, key-like query
// parameters) are never logged, recorded or used as labels; labels come
// only from small fixed sets (model, allow-listed or capped; route;
// input-length bucket; status class; error class).
//
// Proxy and RotatingWriter are safe for concurrent use.
package proxy
