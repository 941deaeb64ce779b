package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkRequestPath measures what a request-path goroutine sees while a
// scraper runs beside it: each iteration reads the clock, as the SSE
// reader does per chunk, and the benchmark reports the longest gap between
// two reads (max-gap-µs). Compare "alone" with "scraping": a 128 KiB body
// (a vLLM /metrics) every 10 ms, ten times the default rate, beside a
// hung target and a dead one. The scraper shares only the CPUs and the
// garbage collector with the request path, never a lock, a queue or a
// connection; here the server under test shares the process too.
func BenchmarkRequestPath(b *testing.B) {
	big := strings.Repeat("vllm:gpu_cache_usage_perc 0.5\n", 128<<10/30)
	fat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(big)) }))
	defer fat.Close()
	hung := httptest.NewServer(http.HandlerFunc(hang))
	defer hung.Close()
	targets := []Target{
		{"fat", fat.URL + "/metrics"},
		{"hung", hung.URL + "/metrics"},
		{"dead", "http://" + closedPort(b) + "/metrics"},
	}
	for _, tc := range []struct {
		name   string
		scrape bool
	}{{"alone", false}, {"scraping", true}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			if tc.scrape {
				go func() {
					done <- Run(ctx, Config{Targets: targets, Interval: 10 * time.Millisecond, Timeout: 5 * time.Second}, func(Sample) {})
				}()
			} else {
				close(done)
			}
			var most time.Duration
			last := time.Now()
			for b.Loop() {
				now := time.Now()
				most = max(most, now.Sub(last))
				last = now
			}
			b.StopTimer()
			cancel()
			<-done
			b.ReportMetric(float64(most)/1e3, "max-gap-µs")
		})
	}
}
