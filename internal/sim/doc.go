// Package sim is a simulated LLM serving engine: a synchronous,
// deterministic state machine that behaves like vLLM — continuous batching
// under a token budget, chunked prefill, a paged KV cache that fills up,
// preemption by recompute, prefix caching — with each iteration's duration
// taken from package costmodel. It has no clock, no goroutines and no I/O:
// the caller supplies times (int64 ns) and owns the Engine from one
// goroutine, so the same engine runs in virtual time (simrun) and behind a
// wall-clock HTTP server (simserve).
//
// A driver loops: Add the requests that have arrived, Step at the current
// time, deliver the returned events at the step's end, and move time to
// that end (or, when Step reports nothing to do, to the next arrival).
//
// The same inputs always give the same events: nothing depends on map
// iteration order or randomness.
package sim
