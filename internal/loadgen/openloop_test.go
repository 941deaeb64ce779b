package loadgen

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goodput/goodput/internal/workload"
)

// TestOpenLoop1000 holds BenchmarkOpenLoop1000's goals (achieved rate
// within 1 % of the schedule's, P99 send lag under 1 ms, at 1,000 req/s
// Poisson over 10,000 requests) as a test, in virtual time: the machine's
// noise is the benchmark's to measure; what is left is the loop's own
// arithmetic (absolute send times, the cap, the concurrency of 2 ms
// requests), which must keep to the schedule exactly.
func TestOpenLoop1000(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, n = 1000.0, 10000
		now := clock()
		var c collector
		res, err := Run(t.Context(), Config{
			Schedule: workload.NewArrivals(rate, 1, 1), NumPrompts: n,
			Now: now, OnRecord: c.add, IDPrefix: "r-",
		}, sleepTarget(now, 2*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if res.Sent != n || len(c.recs) != n {
			t.Fatalf("sent %d, recorded %d; want %d", res.Sent, len(c.recs), n)
		}
		first, last := c.recs[0].Sent, c.recs[0].Sent
		ifirst, ilast := c.recs[0].Intended, c.recs[0].Intended
		lags := make([]float64, 0, n)
		for _, r := range c.recs {
			first, last = min(first, r.Sent), max(last, r.Sent)
			ifirst, ilast = min(ifirst, r.Intended), max(ilast, r.Intended)
			lags = append(lags, float64(r.Sent-r.Intended))
		}
		achieved := float64(n-1) / (float64(last-first) / 1e9)
		scheduled := float64(n-1) / (float64(ilast-ifirst) / 1e9)
		if e := math.Abs(achieved-scheduled) / scheduled; e > 0.01 {
			t.Errorf("achieved %.1f req/s against the schedule's %.1f: %.2f %% off; want within 1 %%", achieved, scheduled, 100*e)
		}
		// The schedule itself is a Poisson sample of the nominal rate:
		// 10,000 gaps put it within a few per cent.
		if e := math.Abs(scheduled-rate) / rate; e > 0.05 {
			t.Errorf("schedule's rate %.1f req/s; want the nominal %.0f within 5 %%", scheduled, rate)
		}
		slices.Sort(lags)
		if p99 := time.Duration(lags[n*99/100]); p99 >= time.Millisecond {
			t.Errorf("P99 send lag %v; want under 1 ms", p99)
		}
	})
}
