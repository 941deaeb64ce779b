package scrape_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/scrape"
)

func Example() {
	// A server under test with a /metrics endpoint.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "vllm:num_requests_running 3")
	}))
	defer srv.Close()

	// The run clock: ns from the run's start, the one the records use.
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }

	ctx, stop := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		samples []scrape.Sample
	)
	emit := func(s scrape.Sample) { // called from each target's goroutine
		mu.Lock()
		defer mu.Unlock()
		samples = append(samples, s)
		stop() // one is enough here; a real run stops when the benchmark ends

	}
	err := scrape.Run(ctx, scrape.Config{
		Targets:  []scrape.Target{{Name: "server", URL: srv.URL + "/metrics"}},
		Interval: time.Second, // the first scrape starts at once, on tick 0
		Now:      now,
	}, emit)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range samples {
		fmt.Printf("%s tick %v: %q (err %v)\n", s.Target, time.Duration(s.Intended), s.Body, s.Err)
	}
	// Output:
	// server tick 0s: "vllm:num_requests_running 3\n" (err <nil>)
}
