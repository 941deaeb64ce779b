package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// PrecisionTarget is one figure a level must know to a relative precision
// before it may stop (--target-precision): the half-width of the figure's
// confidence interval, over the figure, at most Rel.
type PrecisionTarget struct {
	// Stat is "mean", "median", "pNN" (a percentile, P) or, for the
	// rates, "throughput" or "goodput" (Metric then empty).
	Stat string
	// P is the percentile of a "pNN" Stat (50 for "median").
	P float64
	// Metric is the latency metric (AllMetrics) the statistic is of.
	Metric string
	// Rel is the largest relative half-width accepted, e.g. 0.05.
	Rel float64
}

// Name is the target's figure as the user wrote it: "p99_ttft", "mean_tpot",
// "goodput".
func (t PrecisionTarget) Name() string {
	if t.Metric == "" {
		return t.Stat
	}
	return t.Stat + "_" + t.Metric
}

// String is the target as ParsePrecision reads it: "p99_ttft:5%".
func (t PrecisionTarget) String() string {
	return t.Name() + ":" + strconv.FormatFloat(100*t.Rel, 'g', -1, 64) + "%"
}

// ParsePrecision reads --target-precision: terms NAME:PCT, separated by
// commas or spaces, where NAME is mean_M, median_M or pNN_M for a latency
// metric M (ttft, tpot, itl, e2el, ttp, response), or throughput or
// goodput, and PCT a relative half-width in per cent ("5%" or "5"), in
// (0, 100). The empty string is no target (nil).
func ParsePrecision(s string) ([]PrecisionTarget, error) {
	var ts []PrecisionTarget
	for _, term := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		name, pct, ok := strings.Cut(term, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want NAME:PCT, e.g. p99_ttft:5%%", term)
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(pct, "%"), 64)
		if err != nil || !(v > 0 && v < 100) {
			return nil, fmt.Errorf("%q: the precision must be a per cent in (0, 100), e.g. 5%%", term)
		}
		t := PrecisionTarget{Rel: v / 100}
		switch name {
		case "throughput", "goodput":
			t.Stat = name
		default:
			stat, metric, ok := strings.Cut(name, "_")
			if metric == "e2e" {
				metric = MetricE2E
			}
			if !ok || !slices.Contains(AllMetrics, metric) {
				return nil, fmt.Errorf("%q: want mean_M, median_M or pNN_M for a metric M in %s, or throughput or goodput", term, strings.Join(AllMetrics, ", "))
			}
			t.Metric = metric
			switch {
			case stat == "mean":
				t.Stat = stat
			case stat == "median":
				t.Stat, t.P = stat, 50
			case strings.HasPrefix(stat, "p"):
				p, err := strconv.ParseFloat(stat[1:], 64)
				if err != nil || !(p > 0 && p < 100) {
					return nil, fmt.Errorf("%q: %s is not a percentile in (0, 100)", term, stat)
				}
				t.Stat, t.P = "p"+PercentileName(p), p
			default:
				return nil, fmt.Errorf("%q: want mean, median or pNN before _%s", term, metric)
			}
		}
		if i := slices.IndexFunc(ts, func(o PrecisionTarget) bool { return o.Name() == t.Name() }); i >= 0 {
			return nil, fmt.Errorf("%q: %s is given twice", term, t.Name())
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// PrecisionOptions are the summary options that compute the targets'
// figures and nothing else, at confidence level with the run's SLO (which
// goodput needs): a level's precision watch summarises with these, so a
// check costs no more than the figures it judges.
func PrecisionOptions(ts []PrecisionTarget, level float64, slo SLO) Options {
	o := Options{Buckets: []int{}, Percentiles: []float64{}, Metrics: []string{}, Confidence: level, SLO: slo}
	for _, t := range ts {
		if t.Metric != "" && !slices.Contains(o.Metrics, t.Metric) {
			o.Metrics = append(o.Metrics, t.Metric)
		}
		if t.P > 0 && !slices.Contains(o.Percentiles, t.P) {
			o.Percentiles = append(o.Percentiles, t.P)
		}
	}
	slices.Sort(o.Percentiles)
	return o
}

// PrecisionState is where one target stands in a summary.
type PrecisionState struct {
	Target PrecisionTarget
	// Value is the figure; Rel its interval's half-width over it; OK is
	// false when the sample supports no interval yet (Rel is then +Inf).
	Value, Rel float64
	OK         bool
}

// Met says whether the state is within its target.
func (p PrecisionState) Met() bool { return p.OK && p.Rel <= p.Target.Rel }

// String is "p99_ttft ±4.8% (target 5%)", or "p99_ttft: no interval yet".
func (p PrecisionState) String() string {
	if !p.OK {
		return p.Target.Name() + ": no interval yet (too few samples)"
	}
	return fmt.Sprintf("%s ±%s%% (target %s%%)", p.Target.Name(), strconv.FormatFloat(100*p.Rel, 'f', 1, 64),
		strconv.FormatFloat(100*p.Target.Rel, 'g', -1, 64))
}

// Precision is where each target stands in s (summarised with intervals):
// its relative half-width, (Hi − Lo)/2 over |value|.
func Precision(s *Summary, ts []PrecisionTarget) []PrecisionState {
	out := make([]PrecisionState, len(ts))
	for i, t := range ts {
		var v float64
		var iv Interval
		switch t.Stat {
		case "throughput":
			v, iv = s.RequestThroughput, s.RequestThroughputCI
		case "goodput":
			v, iv = s.SLO.Goodput, s.SLO.GoodputCI
		default:
			m, ok := s.Metric(t.Metric)
			if !ok || m.N == 0 {
				break
			}
			if t.Stat == "mean" {
				v, iv = m.Mean, m.MeanCI
			} else {
				v, _ = m.P(t.P)
				iv = m.PCI(t.P)
			}
		}
		st := PrecisionState{Target: t, Value: v, Rel: math.Inf(1)}
		if iv.OK() && v != 0 {
			st.Rel, st.OK = iv.HalfWidth()/math.Abs(v), true
		}
		out[i] = st
	}
	return out
}

// PrecisionNeeded estimates how many samples in all the targets need:
// an interval's half-width shrinks as 1/√n, so a target at relative
// half-width r after n samples needs about n·(r/target)². 0 when every
// target is met; −1 when some target has no interval yet.
func PrecisionNeeded(n int, st []PrecisionState) int {
	need := 0
	for _, p := range st {
		if !p.OK {
			return -1
		}
		if p.Met() {
			continue
		}
		r := p.Rel / p.Target.Rel
		need = max(need, int(math.Ceil(float64(n)*r*r)))
	}
	return need
}
