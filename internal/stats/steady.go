package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// SteadyState says whether a level's latency settled: the warm-up
// transient at its start (found by MSER-5) and any drift after it (a
// trend over the rest). A level whose latency keeps growing is no steady
// state — an overloaded queue, a leak, a cache filling — and its
// percentiles describe a moving target that a longer run would move.
type SteadyState struct {
	// Metric is the latency judged: ttft, or e2el for whole answers.
	Metric string
	// N is the requests judged (measured, successful, in send order).
	N int
	// TransientN is how many leading requests the transient holds (0:
	// none); TransientS how long after the first send the last of them
	// was sent, seconds.
	TransientN int
	TransientS float64
	// Drift is the fitted relative change of the metric across the rest
	// of the level ((last − first fitted value) / mean); DriftPerMin the
	// same per minute of sends; DriftP the trend's two-sided p-value.
	Drift, DriftPerMin, DriftP float64
	// Drifting is true when the trend is both significant (DriftP below
	// 0.1 %: ten batch groups of a loaded server are not quite independent,
	// and a false "not steady" would discredit a good run) and large
	// (|Drift| at least 20 %).
	Drifting bool
}

// steadyBatch is MSER-5's batch: the rule judges means of 5 requests.
const steadyBatch = 5

// minSteady is the fewest requests a level is judged on.
const minSteady = 50

// SteadyBatch is consecutive requests' latencies summed: N of them, sent
// from FirstSent to LastSent (ns).
type SteadyBatch struct {
	N                   int
	Sum                 float64
	FirstSent, LastSent int64
}

// DetectSteadyState judges values v of metric, given in send order with
// their send times sent (ns), in batches of 5; false with fewer than 50.
func DetectSteadyState(metric string, sent []int64, v []float64) (SteadyState, bool) {
	n := min(len(sent), len(v))
	bs := make([]SteadyBatch, n/steadyBatch)
	for j := range bs {
		b := &bs[j]
		b.N, b.FirstSent, b.LastSent = steadyBatch, sent[j*steadyBatch], sent[(j+1)*steadyBatch-1]
		for _, x := range v[j*steadyBatch : (j+1)*steadyBatch] {
			b.Sum += x
		}
	}
	st, ok := DetectSteadyBatches(metric, bs)
	st.N = n
	return st, ok
}

// DetectSteadyBatches judges a level from its requests' latencies in
// consecutive batches (of 5 for MSER-5; of more when a long level's
// batches were merged to keep memory flat, which coarsens the transient
// to a batch); false with fewer than 50 requests or 10 batches.
//
// The transient is MSER's (White, 1997): over the batch means Z, the
// truncation d that minimises Σ_{i>d}(Z_i − Z̄_d)² / (m−d)², the squared
// standard error of what is left, searched over the first half. The drift
// is a least-squares line through 10 groups of the remaining batches
// against their mean send time, with a t test on its slope (8 degrees of
// freedom, the groups long enough to be nearly independent).
func DetectSteadyBatches(metric string, bs []SteadyBatch) (SteadyState, bool) {
	st := SteadyState{Metric: metric}
	for _, b := range bs {
		st.N += b.N
	}
	m := len(bs)
	if st.N < minSteady || m < 10 {
		return st, false
	}
	z := make([]float64, m)
	for j, b := range bs {
		z[j] = b.Sum / float64(b.N)
	}
	best, bestD := math.Inf(1), 0
	for d := 0; d <= m/2; d++ {
		rest := z[d:]
		var mean float64
		for _, x := range rest {
			mean += x
		}
		mean /= float64(len(rest))
		var ss float64
		for _, x := range rest {
			ss += (x - mean) * (x - mean)
		}
		if k := float64(len(rest)); ss/(k*k) < best {
			best, bestD = ss/(k*k), d
		}
	}
	for _, b := range bs[:bestD] {
		st.TransientN += b.N
	}
	if bestD > 0 {
		st.TransientS = float64(bs[bestD-1].LastSent-bs[0].FirstSent) / 1e9
	}
	st.Drift, st.DriftPerMin, st.DriftP = drift(bs[bestD:])
	st.Drifting = st.DriftP < 0.001 && math.Abs(st.Drift) >= 0.20
	return st, true
}

// drift fits a line through 10 groups of the batches' means against
// their mean send time: the relative change it implies across them, per
// minute, and the slope's p-value (1 when there is too little to fit).
func drift(bs []SteadyBatch) (rel, perMin, p float64) {
	const k = 10
	size := len(bs) / k
	if size < 1 {
		return 0, 0, 1
	}
	xs, ys := make([]float64, k), make([]float64, k)
	var mean float64
	for j := range k {
		var n int
		for _, b := range bs[j*size : (j+1)*size] {
			xs[j] += float64(b.FirstSent+b.LastSent) / 2e9 * float64(b.N)
			ys[j] += b.Sum
			n += b.N
		}
		xs[j] /= float64(n)
		ys[j] /= float64(n)
		mean += ys[j]
	}
	mean /= k
	var mx float64
	for _, x := range xs {
		mx += x
	}
	mx /= k
	var sxx, sxy float64
	for j := range k {
		sxx += (xs[j] - mx) * (xs[j] - mx)
		sxy += (xs[j] - mx) * (ys[j] - mean)
	}
	if sxx == 0 || mean == 0 {
		return 0, 0, 1
	}
	slope := sxy / sxx
	var sse float64
	for j := range k {
		r := ys[j] - (mean + slope*(xs[j]-mx))
		sse += r * r
	}
	span := slices.Max(xs) - slices.Min(xs)
	rel, perMin = slope*span/mean, slope*60/mean
	se := math.Sqrt(sse / (k - 2) / sxx)
	if se == 0 {
		return rel, perMin, 0
	}
	t := math.Abs(slope / se)
	p = 2 * (1 - distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k - 2}.CDF(t))
	return rel, perMin, p
}
