package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
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

// RampStrategy is how a [Ramp] moves its rate from start to end.
type RampStrategy string

// The ramp-up strategies of vllm bench serve's --ramp-up-strategy.
const (
	// RampLinear steps the rate by equal amounts per request.
	RampLinear RampStrategy = "linear"
	// RampExponential multiplies the rate by an equal factor per request.
	RampExponential RampStrategy = "exponential"
)

// Ramp is an open-loop schedule whose rate rises over the run, as vllm
// bench serve's --ramp-up-strategy: the gap before request i (0-based, the
// first one's gap counted from the start) is gamma-distributed with shape
// burstiness and mean 1/Rate(i), where Rate goes from start to end over the
// run's n requests. Requests past the n-th keep the end rate. Offsets are
// accumulated in float64 seconds, as in [Arrivals].
//
// Ramp is not safe for concurrent use.
type Ramp struct {
	rng        *rand.Rand
	strategy   RampStrategy
	start, end float64 // requests/s
	n          int
	shape      float64
	i          int
	t          float64 // seconds
}

// NewRamp returns the ramp from start to end requests/s over n requests.
// It needs 0 < start ≤ end (finite) and n ≥ 1; a burstiness <= 0, NaN or
// +Inf is taken as 1 (Poisson), as in [NewArrivals].
func NewRamp(strategy RampStrategy, start, end, burstiness float64, n int, seed int64) (*Ramp, error) {
	switch {
	case strategy != RampLinear && strategy != RampExponential:
		return nil, fmt.Errorf("ramp-up strategy %q: want linear or exponential", strategy)
	case !(start > 0) || math.IsInf(start, 0):
		return nil, fmt.Errorf("ramp-up start rate %g: want a positive number of requests/s", start)
	case !(end >= start) || math.IsInf(end, 0):
		return nil, fmt.Errorf("ramp-up end rate %g: want a number of requests/s not below the start rate %g", end, start)
	case n < 1:
		return nil, fmt.Errorf("ramp-up over %d requests: want at least 1", n)
	}
	if !(burstiness > 0) || math.IsInf(burstiness, 1) {
		burstiness = 1
	}
	return &Ramp{rng: rngFor(seed, 0xa77, 0), strategy: strategy, start: start, end: end, n: n, shape: burstiness}, nil
}

// Rate is the rate in requests/s that sets request i's gap: vLLM's
// start + (end−start)·p (linear) or start·(end/start)^p (exponential), with
// progress p = i/(n−1), capped at 1.
func (r *Ramp) Rate(i int) float64 {
	p := min(float64(i)/float64(max(r.n-1, 1)), 1)
	if r.strategy == RampExponential {
		return r.start * math.Pow(r.end/r.start, p)
	}
	return r.start + (r.end-r.start)*p
}

// Next returns the offset of the next arrival from the run start.
func (r *Ramp) Next() time.Duration {
	rate := r.Rate(r.i)
	r.i++
	r.t += distuv.Gamma{Alpha: r.shape, Beta: 1, Src: r.rng}.Rand() / (rate * r.shape)
	if r.t >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(r.t * 1e9)
}
