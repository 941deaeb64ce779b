package stats

import (
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
)

// moments tracks count, mean, variance (Welford), min and max in float64,
// from the exact values, so mean and std do not suffer from the float32
// rounding of stored ITL samples.
type moments struct {
	n        int
	mean, m2 float64
	min, max float64
}

func (m *moments) add(x float64) {
	m.n++
	if m.n == 1 {
		m.min, m.max = x, x
	} else {
		m.min = min(m.min, x)
		m.max = max(m.max, x)
	}
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
}

// merge combines two moment sets (Chan et al.'s parallel update).
func (m moments) merge(o moments) moments {
	switch {
	case o.n == 0:
		return m
	case m.n == 0:
		return o
	}
	n := m.n + o.n
	d := o.mean - m.mean
	return moments{
		n:    n,
		mean: m.mean + d*float64(o.n)/float64(n),
		m2:   m.m2 + o.m2 + d*d*float64(m.n)*float64(o.n)/float64(n),
		min:  min(m.min, o.min),
		max:  max(m.max, o.max),
	}
}

// std is the population standard deviation (numpy's default ddof=0).
func (m moments) std() float64 {
	if m.n == 0 {
		return 0
	}
	return math.Sqrt(max(m.m2, 0) / float64(m.n))
}

// series keeps one metric's samples for percentiles plus its exact moments.
// Stored values times scale give the reported unit.
//
// It keeps the samples themselves up to limit of them (0: no limit); the
// sample after that moves them all into a sketch, which takes every later
// one, and the slice is released, so a series never holds more than limit
// values or one sketch (≤ 512 KiB, typically ~50 KiB).
type series[T sample] struct {
	vals  []T
	mom   moments
	scale float64
	limit int
	sk    *ddsketch.DDSketch // non-nil once past limit; vals is then nil
	// bt batches the samples in order for confidence intervals; nil (the
	// per-sample cost one test) unless Options.Confidence asks for them.
	bt *batchMeans
}

func newSeries[T sample](scale float64, limit int) *series[T] {
	return &series[T]{scale: scale, limit: limit}
}

// add stores v (in stored units) whose exact reported value is x.
func (s *series[T]) add(v T, x float64) {
	s.mom.add(x)
	if s.bt != nil {
		s.bt.add(x)
	}
	if s.sk == nil {
		if s.limit <= 0 || len(s.vals) < s.limit {
			s.vals = append(s.vals, v)
			return
		}
		s.spill()
	}
	// Values from int64 ns or tokens are finite and within the sketch's
	// range, the only cases Add rejects.
	_ = s.sk.Add(x)
}

// addInt stores an integer sample (ns or tokens).
func (s *series[T]) addInt(v int64) {
	s.add(T(v), float64(v)*s.scale)
}

// spill moves the stored samples into a new sketch, in reported units.
func (s *series[T]) spill() {
	if s.sk != nil {
		return
	}
	s.sk = newSketch()
	for _, v := range s.vals {
		_ = s.sk.Add(float64(v) * s.scale)
	}
	s.vals = nil
}

// summarize builds the MetricSummary of the union of a and b (b may be nil),
// sorting their samples in place. While both keep their samples the
// percentiles are exact; once either has a sketch, both go to sketches for
// good (the union could not be exact anyway) and the percentiles are the
// merged sketch's, marked Approx.
func summarize[T sample](name string, ps []float64, a, b *series[T]) MetricSummary {
	return summarizeCI(name, ps, a, b, nil, 0)
}

// summarizeCI is summarize that also gives the mean and percentiles
// confidence intervals at level from bt, the union's samples in the order
// they were added (see intervals); with bt nil or level 0 it is summarize.
func summarizeCI[T sample](name string, ps []float64, a, b *series[T], bt *batchMeans, level float64) MetricSummary {
	mom := a.mom
	if b != nil {
		mom = mom.merge(b.mom)
	}
	if a.sk != nil || (b != nil && b.sk != nil) {
		m, at := summarizeSketchAt(name, ps, a, b, mom)
		return intervals(m, at, bt, level)
	}
	var bv []T
	if b != nil {
		bv = b.vals
		slices.Sort(b.vals)
	}
	slices.Sort(a.vals)
	n := len(a.vals) + len(bv)
	m := MetricSummary{Name: name, N: n}
	at := func(k int) float64 { return float64(kth(a.vals, bv, k)) * a.scale }
	return intervals(fillSummary(m, ps, at, mom), at, bt, level)
}

// summarizeSketch is summarize's sketch path. The k-th value is the
// sketch's estimate clamped to the exact [Min, Max] (which makes p0 and p100
// exact and only brings others closer); numpy's interpolation between ranks
// k and k+1 is then applied to the two estimates, so the result stays within
// SketchRelErr of the exact percentile: a convex combination of two values
// each within SketchRelErr of its exact counterpart.
func summarizeSketch[T sample](name string, ps []float64, a, b *series[T], mom moments) MetricSummary {
	m, _ := summarizeSketchAt(name, ps, a, b, mom)
	return m
}

// summarizeSketchAt is summarizeSketch that also returns its k-th value
// function, for intervals.
func summarizeSketchAt[T sample](name string, ps []float64, a, b *series[T], mom moments) (MetricSummary, func(int) float64) {
	a.spill()
	sk := a.sk
	if b != nil {
		b.spill()
		sk = sk.Copy()
		_ = sk.MergeWith(b.sk) // same mapping: cannot fail
	}
	n := mom.n
	m := MetricSummary{Name: name, N: n, Approx: true, RelErr: SketchRelErr}
	at := func(k int) float64 { return min(max(sketchAt(sk, k), mom.min), mom.max) }
	return fillSummary(m, ps, at, mom), at
}

// fillSummary completes m (Name and N set) from at, the k-th smallest of
// its m.N values (0-based), and the exact moments.
func fillSummary(m MetricSummary, ps []float64, at func(int) float64, mom moments) MetricSummary {
	m.Percentiles = make([]PercentileValue, len(ps))
	for i, p := range ps {
		m.Percentiles[i] = PercentileValue{P: p, Value: percentileAt(m.N, p, at)}
	}
	if m.N == 0 {
		return m
	}
	m.Median = percentileAt(m.N, 50, at)
	m.Mean, m.Std, m.Min, m.Max = mom.mean, mom.std(), mom.min, mom.max
	return m
}
