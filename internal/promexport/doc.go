// Package promexport exports finished requests (runlog.Records) as
// Prometheus metrics: the goodput_* families of latency and length
// histograms (classic and native buckets), request, token and failure
// counters, and SLO attainment and goodput gauges over sliding 1 m and 5 m
// windows. It owns the metric names, their help texts and buckets, and the
// label sets: model (allow-listed or capped), route (RouteOf), input-length
// bucket, status class (StatusClass) and error class.
//
// goodput proxy feeds it the Records of live traffic and goodput bench
// (--metrics-listen) its own, so both views of one run share names and
// labels. Metrics registers on a caller's prometheus.Registerer, never the
// global registry; MetricsHandler serves a Gatherer's exposition.
//
// Metrics is safe for concurrent use.
package promexport
