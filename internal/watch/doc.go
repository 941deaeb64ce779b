// Package watch is synthetic SLA monitoring of LLM API vendors: it sends
// one small streamed probe to each configured target every interval,
// through the same wire client that goodput bench uses, and turns the
// answers into Prometheus metrics (TTFT, TTP, TPOT and E2E histograms,
// probe outcomes, rate limiting, SLO good/total counters and error-budget
// burn rates over 5 m and 1 h) and, optionally, one records file per
// target that goodput report reads.
//
// A buyer of a commercial API cannot tune the vendor's server; what they
// can do is watch the latencies the vendor promises and act on their drift
// (degrade, fail over, switch vendors). The probes are deliberately
// sparse — one in flight per target, never bunched with another target's —
// so the monitor neither loads the vendor nor measures its own contention.
//
// The package reads no flags, environment or standard streams: the caller
// gives it a parsed Config, a function that opens a target's backend, a
// Prometheus Registerer and a clock. A Watcher is safe for concurrent use
// (Run, Once and Summary may be called from different goroutines, though
// Run and Once should not overlap); Metrics is safe for concurrent use.
package watch
