package workload

import (
	"math"
	"math/rand/v2"
	"time"
)

// Arrivals is an open-loop arrival schedule: absolute send offsets from the
// run start. Gaps are gamma-distributed with shape = burstiness and mean
// 1/rate (burstiness 1 is a Poisson process; below 1 is burstier, above 1
// more regular), as in vllm bench serve. Offsets are accumulated in float64
// seconds and converted once each, so rounding never drifts the schedule.
//
// Arrivals is not safe for concurrent use.
type Arrivals struct {
	rng   *rand.Rand
	shape float64
	scale float64 // seconds
	t     float64 // seconds since the start of the last arrival
	zero  bool
}

// NewArrivals returns the schedule for rate requests/s. A rate <= 0, NaN or
// +Inf sends everything at offset 0 (a "send all now" run). A burstiness
// <= 0 or NaN is taken as 1 (Poisson).
func NewArrivals(rate, burstiness float64, seed int64) *Arrivals {
	a := &Arrivals{rng: rngFor(seed, 0xa77, 0)}
	if !(rate > 0) || math.IsInf(rate, 1) {
		a.zero = true
		return a
	}
	if !(burstiness > 0) || math.IsInf(burstiness, 1) {
		burstiness = 1
	}
	a.shape = burstiness
	a.scale = 1 / (rate * burstiness) // mean gap = shape*scale = 1/rate
	return a
}

// Next returns the offset of the next arrival from the run start.
func (a *Arrivals) Next() time.Duration {
	if a.zero {
		return 0
	}
	a.t += gamma(a.rng, a.shape) * a.scale
	if a.t >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(a.t * 1e9)
}

// gamma draws from Gamma(shape, 1) by Marsaglia and Tsang's method (2000),
// boosting shapes below 1 with a uniform power.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
