package stats

import (
	"math"
	"slices"
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
type series[T sample] struct {
	vals  []T
	mom   moments
	scale float64
}

func newSeries[T sample](scale float64) *series[T] { return &series[T]{scale: scale} }

// add stores v (in stored units) whose exact reported value is x.
func (s *series[T]) add(v T, x float64) {
	s.vals = append(s.vals, v)
	s.mom.add(x)
}

// addInt stores an integer sample (ns or tokens).
func (s *series[T]) addInt(v int64) {
	s.add(T(v), float64(v)*s.scale)
}

// summarize builds the MetricSummary of the union of a and b (b may be nil),
// sorting their samples in place.
func summarize[T sample](name string, ps []float64, a, b *series[T]) MetricSummary {
	var bv []T
	mom := a.mom
	if b != nil {
		bv = b.vals
		mom = mom.merge(b.mom)
		slices.Sort(b.vals)
	}
	slices.Sort(a.vals)
	n := len(a.vals) + len(bv)
	m := MetricSummary{Name: name, N: n, Percentiles: make([]PercentileValue, len(ps))}
	at := func(k int) float64 { return float64(kth(a.vals, bv, k)) * a.scale }
	for i, p := range ps {
		m.Percentiles[i] = PercentileValue{P: p, Value: percentileAt(n, p, at)}
	}
	if n == 0 {
		return m
	}
	m.Median = percentileAt(n, 50, at)
	m.Mean, m.Std, m.Min, m.Max = mom.mean, mom.std(), mom.min, mom.max
	return m
}
