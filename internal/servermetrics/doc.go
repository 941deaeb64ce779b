// Package servermetrics reads what an LLM server says about itself: it
// parses a Prometheus text exposition (a /metrics body) into a Snapshot
// whose values carry one vocabulary whatever the server — vLLM (V1),
// SGLang, TGI, llama.cpp, and GPUs through NVIDIA's DCGM exporter — and
// turns a run's snapshots into per-window figures: counter rates, gauge
// levels, histogram quantiles, the prefix-cache hit rate and prefill and
// decode token throughput.
//
// The point is to set the server's truth beside the client's measurement
// of the same stretch of time (a load level): when the client sees TTFT
// climb, the window says whether requests were queueing, the KV cache was
// full or preemptions began.
//
// The package is pure computation: it scrapes nothing and keeps no state.
// Parsing is by github.com/prometheus/common/expfmt; the mapping is the
// table Vocabulary returns, whose family names were checked against the
// servers' own metric definitions (vLLM vllm/v1/metrics/loggers.py,
// SGLang python/sglang/srt/metrics/collector.py, TGI router/src/server.rs
// and backends/v3, llama.cpp tools/server/server.cpp, dcgm-exporter
// etc/default-counters.csv); docs/server-metrics.md lists it.
//
// Unit conversions happen in the mapping: DCGM's utilisation percent
// becomes a fraction and its MiB become bytes. A family the vocabulary
// does not name is kept in Snapshot.Raw, up to MaxRawSeries series a
// scrape; past that (a label explosion) its series are counted in
// Snapshot.DroppedSeries, not parsed, so a body's series, not only its
// bytes, bound what a scrape costs.
//
// All functions are safe for concurrent use; a Snapshot or Window is a
// value that nothing else retains.
package servermetrics
