package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The coverage tests draw many runs from distributions whose true mean and
// percentiles are known, independent and autocorrelated, and count how
// often the 95 % intervals contain the truth: it must be 93–97 %. A method
// that ignored the correlation would cover far less on the correlated
// runs; one that was needlessly wide would cover more. The seeds are fixed,
// so each count is deterministic; the bounds hold with room for a different
// seed (the standard error of a 95 % coverage over 800 trials is 0.8 %).

// coverageCase is a generator of one run's samples, in order, and the
// truth they estimate.
type coverageCase struct {
	name     string
	n        int // samples per run
	gen      func(r *rand.Rand, xs []float64)
	p50, p99 float64
	mean     float64
}

const coverageTrials = 800

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// lognormalAR fills xs with exp(mu + sigma·x_t) for x_t a stationary AR(1)
// with unit variance and lag-one correlation rho: lognormal marginals,
// neighbours correlated (rho = 0: independent).
func lognormalAR(mu, sigma, rho float64) func(r *rand.Rand, xs []float64) {
	return func(r *rand.Rand, xs []float64) {
		x := r.NormFloat64()
		s := math.Sqrt(1 - rho*rho)
		for i := range xs {
			xs[i] = math.Exp(mu + sigma*x)
			x = rho*x + s*r.NormFloat64()
		}
	}
}

// mm1 fills xs with the successive sojourn times (wait + service) of an
// M/M/1 FIFO queue with arrival rate lambda and service rate 1, started in
// its stationary state: every sojourn time is exponential with rate
// 1 − lambda, and a long one makes the next ones long (Lindley's
// recursion), the correlation a loaded server gives its requests.
func mm1(lambda float64) func(r *rand.Rand, xs []float64) {
	return func(r *rand.Rand, xs []float64) {
		var w float64 // stationary wait: 0 w.p. 1−ρ, else Exp(1−ρ)
		if r.Float64() < lambda {
			w = r.ExpFloat64() / (1 - lambda)
		}
		for i := range xs {
			s := r.ExpFloat64()
			xs[i] = w + s
			w = max(0, w+s-r.ExpFloat64()/lambda)
		}
	}
}

func coverageCases() []coverageCase {
	ln := func(mu, sigma float64) (p50, p99, mean float64) {
		return math.Exp(mu), math.Exp(mu + sigma*z99), math.Exp(mu + sigma*sigma/2)
	}
	l50, l99, lm := ln(math.Log(200), 0.5)
	// Exponential with mean 300 ms, via the generator's ExpFloat64.
	exp := func(r *rand.Rand, xs []float64) {
		for i := range xs {
			xs[i] = 300 * r.ExpFloat64()
		}
	}
	const lambda = 0.5
	mu := 1 - lambda
	return []coverageCase{
		{"exponential", 2000, exp, 300 * math.Ln2, 300 * math.Log(100), 300},
		{"lognormal", 2000, lognormalAR(math.Log(200), 0.5, 0), l50, l99, lm},
		{"lognormal_ar1", 8192, lognormalAR(math.Log(200), 0.5, 0.6), l50, l99, lm},
		{"mm1_sojourn", 16384, mm1(lambda), math.Ln2 / mu, math.Log(100) / mu, 1 / mu},
	}
}

func TestIntervalCoverage(t *testing.T) {
	for ci, c := range coverageCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(31, uint64(ci)))
			xs := make([]float64, c.n)
			var hits [3]int
			var none int
			for range coverageTrials {
				c.gen(r, xs)
				bm := new(batchMeans)
				var mom moments
				for _, x := range xs {
					bm.add(x)
					mom.add(x)
				}
				slices.Sort(xs)
				at := func(k int) float64 { return xs[k] }
				m := intervals(fillSummary(MetricSummary{N: c.n}, []float64{50, 99}, at, mom), at, bm, 0.95)
				for i, iv := range []Interval{m.Percentiles[0].CI, m.Percentiles[1].CI, m.MeanCI} {
					if !iv.OK() {
						none++
					}
					if iv.Contains([]float64{c.p50, c.p99, c.mean}[i]) {
						hits[i]++
					}
				}
			}
			if none > 0 {
				t.Errorf("%d of %d intervals were none; want all", none, 3*coverageTrials)
			}
			for i, name := range []string{"p50", "p99", "mean"} {
				cov := float64(hits[i]) / coverageTrials
				t.Logf("%s %s: coverage %.3f", c.name, name, cov)
				if cov < 0.93 || cov > 0.97 {
					t.Errorf("%s %s: 95%% interval covered the truth in %.1f%% of %d runs; want 93–97%%", c.name, name, 100*cov, coverageTrials)
				}
			}
		})
	}
}

// TestIndependenceUndercovers is the coverage test's control: on the M/M/1
// queue's correlated sojourn times, the intervals that assume independence
// (every batch one sample) cover P50, P99 and the mean far less often than
// 95 %, so TestIntervalCoverage's mm1 case tests the batch means.
func TestIndependenceUndercovers(t *testing.T) {
	c := coverageCases()[3]
	r := rand.New(rand.NewPCG(31, 3))
	xs := make([]float64, c.n)
	const trials = 200
	var hits [3]int
	for range trials {
		c.gen(r, xs)
		var mom moments
		for _, x := range xs {
			mom.add(x)
		}
		slices.Sort(xs)
		for i, p := range []float64{50, 99} {
			if iv, ok := PercentileInterval(xs, p, 0.95); ok && iv.Contains([]float64{c.p50, c.p99}[i]) {
				hits[i]++
			}
		}
		sd := math.Sqrt(mom.m2 / float64(mom.n-1))
		if iv, _ := MeanInterval(mom.mean, sd, mom.n, 0.95); iv.Contains(c.mean) {
			hits[2]++
		}
	}
	for i, name := range []string{"p50", "p99", "mean"} {
		cov := float64(hits[i]) / trials
		t.Logf("%s: independent-sample coverage %.3f", name, cov)
		if cov > 0.85 {
			t.Errorf("%s: intervals assuming independence covered %.1f%% of correlated runs; want well under 95%% (else the mm1 case tests nothing)", name, 100*cov)
		}
	}
}

// TestRateAndAttainmentCoverage runs an M/M/1 queue (Poisson arrivals at
// 50/s, exponential service at 100/s) through the batches an Accumulator
// keeps for rates and attainment, as Add feeds them, and checks the 95 %
// intervals of request throughput (truth: the arrival rate), goodput and
// SLO attainment (truth: an E2E limit whose stationary attainment is 90 %)
// cover the truth 93–97 % of the time. Attainment is correlated as the
// latencies are: a burst of slow requests fails together.
// (TestSummaryIntervalsOffByDefault checks Summary's wiring.)
func TestRateAndAttainmentCoverage(t *testing.T) {
	const (
		n       = 8192
		trials  = 800
		lambda  = 50.0  // arrivals/s
		mu      = 100.0 // services/s
		attain  = 0.9
		nsPerS  = 1e9
		goodput = lambda * attain
	)
	limit := math.Log(1/(1-attain)) / (mu - lambda) // s
	r := rand.New(rand.NewPCG(31, 99))
	var hits [3]int
	for range trials {
		var arrive, free float64 // s
		if r.Float64() < lambda/mu {
			free = r.ExpFloat64() / (mu - lambda) // stationary backlog
		}
		rw, cb := new(rateWindows), new(countBatches)
		var first, last int64
		good := 0
		for i := range n {
			arrive += r.ExpFloat64() / lambda
			free = max(free, arrive) + r.ExpFloat64()/mu
			sent, end := int64(arrive*nsPerS), int64(free*nsPerS)
			if i == 0 {
				first = sent
				rw.reach(sent)
			}
			last = end
			ok := free-arrive <= limit
			cb.add(ok, [len(sloNames)]bool{})
			w := &rw.c[rw.reach(end)]
			w[rateCompleted]++
			if ok {
				w[rateGood]++
				good++
			}
		}
		d := float64(last-first) / nsPerS
		for i, c := range []struct {
			iv    Interval
			truth float64
		}{
			{rw.interval(rateCompleted, n/d, last, 0.95), lambda},
			{rw.interval(rateGood, float64(good)/d, last, 0.95), goodput},
			{cb.attainment(0, good, n, 0.95), attain},
		} {
			if c.iv.Contains(c.truth) {
				hits[i]++
			}
		}
	}
	for i, name := range []string{"request throughput", "goodput", "attainment"} {
		cov := float64(hits[i]) / trials
		t.Logf("%s: coverage %.3f", name, cov)
		if cov < 0.93 || cov > 0.97 {
			t.Errorf("%s: 95%% interval covered the truth in %.1f%% of %d runs; want 93–97%%", name, 100*cov, trials)
		}
	}
}
