package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// RepeatFigure is one figure across the repeats of one load (--repeats):
// how much a rerun moves it, beside what one run's own interval claimed.
// Within-run intervals miss what changes between runs (another process on
// the host, a warmed cache, the arrival pattern), so the between-run
// spread is the honest error of a single run's figure when it is larger.
type RepeatFigure struct {
	// Key is the figure's result key, as the level's JSON names it
	// ("p99_ttft_ms", "mean_tpot_ms", "request_throughput").
	Key string
	// Values are the figure in each repeat, in order.
	Values []float64
	// Mean and SD are the values' mean and sample standard deviation.
	Mean, SD float64
	// Between is the half-width one run's figure has from the spread
	// between runs: t(N−1, level)·SD. Within is the mean half-width of the
	// repeats' own intervals (0 when they had none).
	Between, Within float64
	// Ratio is Between/Within (NaN without a within-run interval): above
	// 1 a single run's interval understates how much a rerun differs.
	Ratio float64
	// MeanCI is the interval of the mean over the repeats: t over N values.
	MeanCI Interval
}

// Larger is the larger of the two half-widths: what a verdict on one run's
// figure should allow for.
func (f RepeatFigure) Larger() float64 { return max(f.Between, f.Within) }

// Verdict is the interval a verdict on the repeats' mean allows for: the
// larger of the between-run interval of the mean (MeanCI, t over the N
// values) and the within-run one scaled to a mean of N runs (Within/√N),
// around Mean. Between runs it catches what one run cannot see (a
// different placement, a cold cache); within, what N runs too few to
// spread cannot (two identical runs of a deterministic simulator).
func (f RepeatFigure) Verdict() Interval {
	h := f.MeanCI.HalfWidth()
	if n := len(f.Values); n > 0 && f.Within > 0 {
		h = max(h, f.Within/math.Sqrt(float64(n)))
	}
	return Interval{Lo: f.Mean - h, Hi: f.Mean + h, Level: f.MeanCI.Level}
}

// RepeatSpread is the run-to-run spread of the figures every summary has
// (means, medians and percentiles of each latency metric, throughputs,
// goodput under an SLO), at confidence level; nil with fewer than two
// summaries or a level outside (0, 1).
func RepeatSpread(sums []Summary, level float64) []RepeatFigure {
	n := len(sums)
	if n < 2 || !(level > 0 && level < 1) {
		return nil
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-level)/2)
	var out []RepeatFigure
	add := func(key string, val func(*Summary) (float64, Interval, bool)) {
		f := RepeatFigure{Key: key, Values: make([]float64, n)}
		withinN := 0
		for i := range sums {
			v, iv, ok := val(&sums[i])
			if !ok {
				return
			}
			f.Values[i] = v
			if iv.OK() {
				f.Within += iv.HalfWidth()
				withinN++
			}
		}
		for _, v := range f.Values {
			f.Mean += v
		}
		f.Mean /= float64(n)
		for _, v := range f.Values {
			f.SD += (v - f.Mean) * (v - f.Mean)
		}
		f.SD = math.Sqrt(f.SD / float64(n-1))
		f.Between = t * f.SD
		f.Ratio = math.NaN()
		if withinN == n {
			f.Within /= float64(n)
			if f.Within > 0 {
				f.Ratio = f.Between / f.Within
			}
		} else {
			f.Within = 0
		}
		h := t * f.SD / math.Sqrt(float64(n))
		f.MeanCI = Interval{Lo: f.Mean - h, Hi: f.Mean + h, Level: level}
		out = append(out, f)
	}
	for _, m := range sums[0].Metrics {
		if m.Name == MetricITLToken {
			continue
		}
		name := m.Name
		add("mean_"+name+"_ms", func(s *Summary) (float64, Interval, bool) {
			x, ok := s.Metric(name)
			return x.Mean, x.MeanCI, ok && x.N > 0
		})
		ps := []float64{50}
		for _, p := range m.Percentiles {
			if p.P != 50 && !slices.Contains(ps, p.P) {
				ps = append(ps, p.P)
			}
		}
		for _, p := range ps {
			key := "p" + PercentileName(p) + "_" + name + "_ms"
			if p == 50 {
				key = "median_" + name + "_ms"
			}
			add(key, func(s *Summary) (float64, Interval, bool) {
				x, ok := s.Metric(name)
				if !ok || x.N == 0 {
					return 0, Interval{}, false
				}
				v, ok := x.P(p)
				return v, x.PCI(p), ok
			})
		}
	}
	add("request_throughput", func(s *Summary) (float64, Interval, bool) {
		return s.RequestThroughput, s.RequestThroughputCI, true
	})
	add("output_throughput", func(s *Summary) (float64, Interval, bool) {
		return s.OutputThroughput, s.OutputThroughputCI, true
	})
	if sums[0].SLO.Set {
		add("request_goodput", func(s *Summary) (float64, Interval, bool) {
			return s.SLO.Goodput, s.SLO.GoodputCI, s.SLO.Set
		})
		add("slo_attainment", func(s *Summary) (float64, Interval, bool) {
			return s.SLO.Attainment, s.SLO.AttainmentCI, s.SLO.Set
		})
	}
	return out
}
