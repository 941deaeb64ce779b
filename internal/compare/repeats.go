package compare

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Repeats compares two runs of --repeats by what moves between runs: each
// figure once per repeat on either side, B's mean over its repeats against
// A's, with Welch's t interval (unequal variances, Welch–Satterthwaite
// degrees of freedom) and Holm's adjustment over the rows together.
type Repeats struct {
	// NA and NB are the repeats of A and B.
	NA, NB int
	// Deltas are the figures, metric by metric as Comparison.Deltas; A
	// and B are the means over the repeats, NA and NB the repeats.
	Deltas []Delta
	// Family is how many rows the verdicts were adjusted over (Holm).
	Family int
}

// repeatsOf splits a run's records by repeat: one slice per level when
// every level of its meta is a repeat (runlog.Level.Repeat), nil with
// fewer than two.
func repeatsOf(r Run) [][]runlog.Record {
	if r.Meta == nil || len(r.Meta.Levels) < 2 || r.Records == nil {
		return nil
	}
	for _, l := range r.Meta.Levels {
		if l.Repeat == 0 {
			return nil
		}
	}
	out := make([][]runlog.Record, len(r.Meta.Levels))
	for _, rec := range r.Records {
		if rec.Level >= 0 && rec.Level < len(out) {
			out[rec.Level] = append(out[rec.Level], rec)
		}
	}
	return out
}

// compareRepeats is the Repeats of a and b, nil unless both ran repeats.
func compareRepeats(a, b Run, o Options) *Repeats {
	ra, rb := repeatsOf(a), repeatsOf(b)
	if ra == nil || rb == nil {
		return nil
	}
	so := stats.Options{Percentiles: o.Percentiles, Metrics: o.Metrics}
	summ := func(rs [][]runlog.Record) []stats.Summary {
		out := make([]stats.Summary, len(rs))
		for i := range rs {
			out[i] = stats.Summarize(rs[i], so)
		}
		return out
	}
	sa, sb := summ(ra), summ(rb)
	rep := &Repeats{NA: len(sa), NB: len(sb)}
	stat := func(sums []stats.Summary, metric, st string) ([]float64, bool) {
		vs := make([]float64, len(sums))
		for i := range sums {
			m, ok := sums[i].Metric(metric)
			if !ok || m.N == 0 {
				return nil, false
			}
			if st == "mean" {
				vs[i] = m.Mean
				continue
			}
			var p float64
			if _, err := fmt.Sscanf(st, "p%g", &p); err != nil {
				return nil, false
			}
			if vs[i], ok = m.P(p); !ok && p == 50 {
				vs[i] = m.Median
			} else if !ok {
				return nil, false
			}
		}
		return vs, true
	}
	// A row whose values repeat an earlier metric's (TTP of a run with
	// nothing hidden is its TTFT) counts once in the family and takes
	// that row's verdict.
	type vals struct{ a, b []float64 }
	var seen []vals
	var dupOf []int
	var family []Delta
	for _, m := range o.Metrics {
		for _, st := range append([]string{"mean"}, statNames(o.Percentiles)...) {
			va, oka := stat(sa, m, st)
			vb, okb := stat(sb, m, st)
			if !oka || !okb {
				continue
			}
			d := welch(m, st, va, vb, o.Confidence)
			dup := -1
			for j, v := range seen {
				if rep.Deltas[j].Stat == st && slices.Equal(v.a, va) && slices.Equal(v.b, vb) {
					dup = j
					break
				}
			}
			seen, dupOf = append(seen, vals{va, vb}), append(dupOf, dup)
			rep.Deltas = append(rep.Deltas, d)
			if dup < 0 {
				family = append(family, d)
			}
		}
	}
	rep.Family = holm(family, 1-o.Confidence)
	k := 0
	for i := range rep.Deltas {
		if dupOf[i] < 0 {
			rep.Deltas[i].Verdict = family[k].Verdict
			k++
		} else {
			rep.Deltas[i].Verdict = rep.Deltas[dupOf[i]].Verdict
		}
	}
	return rep
}

// statNames are the percentiles' Stat names ("p50", "p99.9").
func statNames(ps []float64) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = statName(p)
	}
	return out
}

// welch is the Delta of B's mean of vb against A's mean of va: Welch's t
// interval at level and its two-sided p-value, judged.
func welch(metric, st string, va, vb []float64, level float64) Delta {
	ma, sa2 := meanVar(va)
	mb, sb2 := meanVar(vb)
	na, nb := float64(len(va)), float64(len(vb))
	d := Delta{Metric: metric, Stat: st, Unit: "ms", A: ma, B: mb, Diff: mb - ma, Rel: math.NaN(), P: math.NaN(),
		NA: len(va), NB: len(vb), LowerIsBetter: true}
	if ma != 0 {
		d.Rel = d.Diff / ma
	}
	se2 := sa2/na + sb2/nb
	if se2 == 0 {
		// Every repeat gave the same figure on both sides: the difference
		// is exact (a deterministic simulator), significant if not zero.
		d.HasCI, d.Lo, d.Hi, d.P = true, d.Diff, d.Diff, 1
		if d.Diff != 0 {
			d.P = 0
		}
		judge(&d)
		return d
	}
	df := se2 * se2 / (sa2*sa2/(na*na*(na-1)) + sb2*sb2/(nb*nb*(nb-1)))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	h := t.Quantile(1-(1-level)/2) * math.Sqrt(se2)
	d.HasCI, d.Lo, d.Hi = true, d.Diff-h, d.Diff+h
	d.P = 2 * (1 - t.CDF(math.Abs(d.Diff)/math.Sqrt(se2)))
	judge(&d)
	return d
}

// meanVar is the mean and sample variance of xs (n ≥ 2).
func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// withRepeats makes each per-request delta's verdict agree with the
// between-run one of the same figure: a difference is called only when it
// exceeds both the within-run interval and the spread between runs (the
// larger noise), else it is no significant difference.
func withRepeats(ds []Delta, rep *Repeats) (changed int) {
	for i := range ds {
		d := &ds[i]
		for _, r := range rep.Deltas {
			if r.Metric != d.Metric || r.Stat != d.Stat || r.Verdict == NotJudged || d.Verdict == NotJudged {
				continue
			}
			if r.Verdict != d.Verdict {
				if d.Verdict != NoSignificant {
					changed++
				}
				d.Verdict = NoSignificant
			}
		}
	}
	return changed
}
