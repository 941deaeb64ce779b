package workload

import (
	"gonum.org/v1/gonum/stat/distuv"

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
	a.t += distuv.Gamma{Alpha: a.shape, Beta: 1, Src: a.rng}.Rand() * a.scale
	if a.t >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(a.t * 1e9)
}
