package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a two-sided confidence interval [Lo, Hi] at confidence Level
// (0.95 for 95 %), in the unit of the figure it brackets. The zero Interval
// means none: intervals were not asked for (Options.Confidence is 0) or the
// sample cannot support one at that level (see MinSamplesForInterval). It
// is never made up: a figure without an interval has the zero one.
type Interval struct {
	// Lo and Hi bound the interval, Lo ≤ Hi.
	Lo, Hi float64
	// Level is the confidence level, in (0, 1); 0 means no interval.
	Level float64
}

// OK reports whether iv is an interval rather than "none".
func (iv Interval) OK() bool { return iv.Level > 0 }

// Contains reports whether x lies in iv (false for no interval).
func (iv Interval) Contains(x float64) bool { return iv.OK() && iv.Lo <= x && x <= iv.Hi }

// HalfWidth is (Hi − Lo)/2, 0 for no interval.
func (iv Interval) HalfWidth() float64 {
	if !iv.OK() {
		return 0
	}
	return (iv.Hi - iv.Lo) / 2
}

// DefaultConfidence is the confidence level intervals are usually asked
// for at (Options.Confidence): 95 %.
const DefaultConfidence = 0.95

// exactBinomialMax is the largest sample for which percentile ranks come
// from the exact binomial distribution; above it the continuity-corrected
// normal approximation is used, which at that size is within one rank of
// the exact answer (TestNormalRanksMatchExact) and costs nothing.
const exactBinomialMax = 1 << 20

// PercentileRanks returns the 0-based ranks lo ≤ hi of the order
// statistics that bracket the p-th percentile (0 < p < 100) of the
// distribution n independent samples came from, with confidence at least
// level: sorted[lo] ≤ ξ_p ≤ sorted[hi] with probability ≥ level, whatever
// the distribution (continuous or not).
//
// With B ~ Binomial(n, p/100) the number of samples below ξ_p, the
// 1-based ranks are l, the largest with P(B ≤ l−1) ≤ α/2, and u, the
// smallest with P(B ≤ u−1) ≥ 1−α/2 (α = 1 − level), so the coverage
// P(l ≤ B ≤ u−1) is at least 1 − α. ok is false when no such ranks
// exist within the sample (n < MinSamplesForInterval(p, level)): the
// sample cannot support an interval at that level.
func PercentileRanks(n int, p, level float64) (lo, hi int, ok bool) {
	q, a2, ok := rankArgs(n, p, level)
	if !ok {
		return 0, 0, false
	}
	if n > exactBinomialMax {
		return normalRanks(n, q, a2)
	}
	return exactRanks(n, q, a2)
}

// rankArgs validates PercentileRanks's arguments, returning p as a
// fraction and α/2.
func rankArgs(n int, p, level float64) (q, a2 float64, ok bool) {
	if n <= 0 || !(p > 0 && p < 100) || !(level > 0 && level < 1) {
		return 0, 0, false
	}
	return p / 100, (1 - level) / 2, true
}

// exactRanks is PercentileRanks from the binomial CDF itself (a binary
// search for each bound; the CDF is the regularised incomplete beta).
func exactRanks(n int, q, a2 float64) (lo, hi int, ok bool) {
	b := distuv.Binomial{N: float64(n), P: q}
	cdf := func(k int) float64 { return b.CDF(float64(k)) }
	// Existence: P(B = 0) ≤ α/2 and P(B = n) ≤ α/2.
	if cdf(0) > a2 || cdf(n-1) < 1-a2 {
		return 0, 0, false
	}
	// lo = largest k in [0, n−1] with cdf(k) ≤ α/2 (cdf(0) ≤ α/2 holds).
	i, j := 0, n-1
	for i < j {
		m := int(uint(i+j+1) >> 1)
		if cdf(m) <= a2 {
			i = m
		} else {
			j = m - 1
		}
	}
	lo = i
	// hi = smallest k in [0, n−1] with cdf(k) ≥ 1−α/2.
	i, j = 0, n-1
	for i < j {
		m := int(uint(i+j) >> 1)
		if cdf(m) >= 1-a2 {
			j = m
		} else {
			i = m + 1
		}
	}
	// 1-based l = lo+1 and u = i+1 are the ranks; 0-based they are lo and i.
	return lo, i, true
}

// normalRanks is PercentileRanks with the binomial CDF approximated by
// Φ((k + ½ − nq)/σ): the largest k with F(k) ≤ α/2 is ⌊nq − zσ − ½⌋ and
// the smallest with F(k) ≥ 1 − α/2 is ⌈nq + zσ − ½⌉.
func normalRanks(n int, q, a2 float64) (lo, hi int, ok bool) {
	z := distuv.UnitNormal.Quantile(1 - a2)
	nq := float64(n) * q
	sd := math.Sqrt(nq * (1 - q))
	lo = int(math.Floor(nq - z*sd - 0.5))
	hi = int(math.Ceil(nq + z*sd - 0.5))
	if lo < 0 || hi > n-1 {
		return 0, 0, false
	}
	return lo, hi, true
}

// MinSamplesForInterval is the smallest number of independent samples
// whose order statistics can bracket the p-th percentile (0 < p < 100) with
// confidence level: the smallest n with both p^n ≤ α/2 and (1−p)^n ≤ α/2,
// p as a fraction. At 95 % that is 6 for p50, 36 for p90, 73 for p95, 368
// for p99 and 3,688 for p99.9; with autocorrelated samples it applies to
// the effective sample size. It returns 0 for arguments out of range.
func MinSamplesForInterval(p, level float64) int {
	q, a2, ok := rankArgs(1, p, level)
	if !ok {
		return 0
	}
	need := func(r float64) int {
		// r^n ≤ α/2 ⇔ n ≥ ln(α/2)/ln r; the loop settles float rounding.
		n := max(1, int(math.Ceil(math.Log(a2)/math.Log(r))-1))
		for math.Pow(r, float64(n)) > a2 {
			n++
		}
		return n
	}
	return max(need(q), need(1-q))
}

// PercentileInterval is the distribution-free confidence interval at level
// for the p-th percentile of the distribution that sorted (ascending,
// independent samples) came from: [sorted[lo], sorted[hi]] with
// PercentileRanks's ranks. ok is false when the sample is too small for
// one (see MinSamplesForInterval).
func PercentileInterval(sorted []float64, p, level float64) (iv Interval, ok bool) {
	lo, hi, ok := PercentileRanks(len(sorted), p, level)
	if !ok {
		return Interval{}, false
	}
	return Interval{Lo: sorted[lo], Hi: sorted[hi], Level: level}, true
}

// effectiveRanks is PercentileRanks for n samples whose correlation makes
// them worth neff independent ones (neff ≤ n): the ranks are computed for
// ⌊neff⌋ samples and scaled to n by the order statistics' expected
// positions, rank·(n+1)/(⌊neff⌋+1), widened outwards. With neff = n they
// are PercentileRanks's.
func effectiveRanks(n int, neff, p, level float64) (lo, hi int, ok bool) {
	m := int(math.Floor(neff + 1e-9))
	if m >= n {
		return PercentileRanks(n, p, level)
	}
	l, u, ok := PercentileRanks(m, p, level)
	if !ok {
		return 0, 0, false
	}
	s := float64(n+1) / float64(m+1)
	lo = max(0, int(math.Floor(float64(l+1)*s))-1)
	hi = min(n-1, int(math.Ceil(float64(u+1)*s))-1)
	return lo, hi, true
}

// tQuantile is Student's t quantile at probability pr with df degrees of
// freedom.
func tQuantile(pr float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(pr)
}

// MeanInterval is the t interval at level for the mean of k independent
// batch means (or samples, when each batch is one sample) with sample
// standard deviation sd (ddof = 1), centred on mean: mean ± t·sd/√k with
// k − 1 degrees of freedom. ok is false for k < 2 or a level out of (0, 1).
func MeanInterval(mean, sd float64, k int, level float64) (Interval, bool) {
	if k < 2 || !(level > 0 && level < 1) || math.IsNaN(sd) {
		return Interval{}, false
	}
	h := tQuantile(1-(1-level)/2, k-1) * sd / math.Sqrt(float64(k))
	return Interval{Lo: mean - h, Hi: mean + h, Level: level}, true
}

// WilsonInterval is the Wilson score interval at level for a proportion
// phat observed over n trials, n being an effective count (the number of
// independent trials the correlated ones are worth; it need not be whole).
// It stays within [0, 1] and is sensible at phat = 0 or 1, where the
// normal (Wald) interval collapses to a point. ok is false for n ≤ 0.
func WilsonInterval(phat, n, level float64) (Interval, bool) {
	if !(n > 0) || !(level > 0 && level < 1) || phat < 0 || phat > 1 {
		return Interval{}, false
	}
	z := distuv.UnitNormal.Quantile(1 - (1-level)/2)
	z2n := z * z / n
	c := (phat + z2n/2) / (1 + z2n)
	h := z / (1 + z2n) * math.Sqrt(phat*(1-phat)/n+z2n/(4*n))
	return Interval{Lo: max(0, c-h), Hi: min(1, c+h), Level: level}, true
}

// intervals fills m's MeanCI, MedianCI and each percentile's CI and
// EffectiveN at level from bt, the m.N samples in the order they were
// added; at is the k-th smallest of them (0-based). It leaves m as it is
// when bt is nil or level is 0: intervals were not asked for.
func intervals(m MetricSummary, at func(int) float64, bt *batchMeans, level float64) MetricSummary {
	if bt == nil || !(level > 0 && level < 1) || m.N == 0 {
		return m
	}
	m.MeanCI = bt.meanInterval(m.Mean, level)
	for i := range m.Percentiles {
		pv := &m.Percentiles[i]
		pv.CI, pv.EffectiveN = percentileCI(m.N, pv.P, pv.Value, at, bt, level)
	}
	m.MedianCI, _ = percentileCI(m.N, 50, m.Median, at, bt, level)
	return m
}

// percentileCI is the interval for the p-th percentile of n samples whose
// point estimate is v: the order statistics at effectiveRanks, the
// effective sample size being n over the batches' variance inflation of
// the indicator 1{x ≤ v}. It returns no interval (with the effective size,
// so a report can say how short it fell) when that size is below
// MinSamplesForInterval, and for p0 and p100, which no order statistic
// brackets with confidence.
func percentileCI(n int, p, v float64, at func(int) float64, bt *batchMeans, level float64) (Interval, float64) {
	neff := float64(n) / bt.indicatorVIF(v, p/100)
	lo, hi, ok := effectiveRanks(n, neff, p, level)
	if !ok {
		return Interval{}, neff
	}
	return Interval{Lo: at(lo), Hi: at(hi), Level: level}, neff
}
