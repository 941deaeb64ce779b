package stats

import (
	"math/rand/v2"
	"testing"
)

// sends are n send times 100 ms apart.
func sends(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i) * 100 * ms
	}
	return s
}

// A level whose first 100 requests waited 500 ms (a cold cache, a queue
// from the start) and the rest ~100 ms: MSER-5's truncation is exactly the
// 20 batches of 5 that hold the slow ones — the 100th request, sent 9.9 s
// after the first — and what follows has no drift.
func TestSteadyStateTransientByHand(t *testing.T) {
	v := make([]float64, 1000)
	for i := range v {
		v[i] = 100 + float64(i%3) - 1
		if i < 100 {
			v[i] = 500
		}
	}
	st, ok := DetectSteadyState(MetricTTFT, sends(len(v)), v)
	if !ok || st.TransientN != 100 || st.TransientS != 9.9 || st.Drifting {
		t.Errorf("got %+v; want a transient of 100 requests over 9.9 s and no drift", st)
	}
}

// Latency growing from 100 to 200 ms across 1,000 requests is a drift:
// significant and far above 10 %.
func TestSteadyStateDrift(t *testing.T) {
	v := make([]float64, 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range v {
		v[i] = 100 + 100*float64(i)/1000 + 5*rng.NormFloat64()
	}
	st, _ := DetectSteadyState(MetricTTFT, sends(len(v)), v)
	if !st.Drifting || st.Drift < 0.2 || st.DriftPerMin <= 0 || st.DriftP >= 0.01 {
		t.Errorf("got %+v; want a significant upward drift", st)
	}
}

// Independent noise around a constant has neither a long transient nor a
// drift, and too short a level is not judged.
func TestSteadyStateStationary(t *testing.T) {
	v := make([]float64, 2000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range v {
		v[i] = 100 + 20*rng.ExpFloat64()
	}
	st, ok := DetectSteadyState(MetricTTFT, sends(len(v)), v)
	if !ok || st.Drifting || st.TransientN > 200 {
		t.Errorf("got %+v; want no drift and little or no transient", st)
	}
	if _, ok := DetectSteadyState(MetricTTFT, sends(49), v[:49]); ok {
		t.Error("49 requests were judged; want at least 50")
	}
}
