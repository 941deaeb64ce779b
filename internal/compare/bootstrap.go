package compare

import (
	"gonum.org/v1/gonum/stat/distuv"

	"math"
	"math/rand/v2"
	"slices"
)

// The bootstrap here resamples each run's per-request values with
// replacement, B times, and takes the 2.5th and 97.5th percentiles of the
// B differences of the statistic (B − A) as the 95 % interval (the
// percentile bootstrap). Runs A and B are resampled independently.
//
// Percentiles are drawn without materialising resamples. In a resample of n
// values from sorted x, the k-th smallest is x[⌊n·U₍ₖ₎⌋], where U₍ₖ₎ is the
// k-th smallest of n standard uniforms (⌊n·U⌋ is a uniform index, and ⌊n··⌋
// keeps order), and U₍ₖ₎ ~ Beta(k, n+1−k). Given U₍ₖ₎ = u, the next order
// statistic is u + (1−u)·(1 − V^(1/(n−k))) with V uniform (the smallest of
// the n−k uniforms above u). So one resample's interpolated percentile costs
// two draws instead of n, and the bootstrap distribution is exactly that of
// resampling: 2,000 resamples of 100,000 values take microseconds.
//
// The mean is resampled directly (B × n draws) up to meanExactMax values;
// above that the bootstrap distribution of the mean is taken as normal with
// the plug-in variance σ²/n, which is the resampled mean's exact variance
// and, at such n, its shape to well under the Monte Carlo error of B draws.

// meanExactMax is the sample size up to which means are resampled draw by
// draw.
const meanExactMax = 2000

// beta draws from Beta(a, b).
func beta(rng *rand.Rand, a, b float64) float64 {
	return distuv.Beta{Alpha: a, Beta: b, Src: rng}.Rand()
}

// orderIndex maps a uniform order statistic u to an index of n values.
func orderIndex(u float64, n int) int {
	return min(max(int(u*float64(n)), 0), n-1)
}

// resamplePercentile returns the p-th percentile (numpy's linear method) of
// one bootstrap resample of sorted, drawn as described above.
func resamplePercentile(rng *rand.Rand, sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 1 {
		return sorted[0]
	}
	v := p / 100 * float64(n-1)
	lo := int(math.Floor(v))
	t := v - float64(lo)
	if lo >= n-1 {
		// The maximum: U₍ₙ₎ ~ Beta(n, 1), i.e. V^(1/n).
		return sorted[orderIndex(math.Pow(rng.Float64(), 1/float64(n)), n)]
	}
	k := lo + 1 // 1-based rank of the lower order statistic
	u := beta(rng, float64(k), float64(n+1-k))
	a := sorted[orderIndex(u, n)]
	if t == 0 {
		return a
	}
	next := u + (1-u)*(1-math.Pow(rng.Float64(), 1/float64(n-k)))
	b := sorted[orderIndex(next, n)]
	return a + (b-a)*t
}

// resampleMean returns the mean of one bootstrap resample of x.
func resampleMean(rng *rand.Rand, x []float64, mean, sd float64) float64 {
	n := len(x)
	if n > meanExactMax {
		return mean + rng.NormFloat64()*sd/math.Sqrt(float64(n))
	}
	s := 0.0
	for range n {
		s += x[rng.IntN(n)]
	}
	return s / float64(n)
}

// binomial draws from Binomial(n, p) exactly by splitting on the median
// order statistic (Devroye, Non-Uniform Random Variate Generation, X.4):
// O(log n) beta draws, then direct trials below 64.
func binomial(rng *rand.Rand, n int, p float64) int {
	k := 0
	for n >= 64 {
		if p <= 0 {
			return k
		}
		if p >= 1 {
			return k + n
		}
		a := (n + 1) / 2
		u := beta(rng, float64(a), float64(n+1-a))
		if u < p {
			// a uniforms are ≤ u < p: successes; the rest lie above u.
			k += a
			n -= a
			p = (p - u) / (1 - u)
		} else {
			// The a-th is ≥ p: successes are among the a−1 below it.
			n = a - 1
			p /= u
		}
	}
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return k
}

// interval is the percentile bootstrap interval of the differences.
func interval(diffs []float64, confidence float64) (lo, hi float64) {
	slices.Sort(diffs)
	alpha := (1 - confidence) / 2
	return percentile(diffs, 100*alpha), percentile(diffs, 100*(1-alpha))
}

// percentile is numpy's linear percentile of sorted values (0 for none).
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	v := p / 100 * float64(n-1)
	lo := int(math.Floor(v))
	if lo >= n-1 {
		return sorted[n-1]
	}
	t := v - float64(lo)
	return sorted[lo] + (sorted[lo+1]-sorted[lo])*t
}

func meanSD(x []float64) (mean, sd float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)))
}

// The inflation is estimated from batch means at two batch counts, 20
// and 10 (batches of n/20 and n/10 consecutive requests), and the larger
// significant estimate kept: an estimate grows with the batch size until
// batches outlast the correlation, so short batches alone understate a
// long correlation (a server's load drifting over tens of requests). Below
// vifMinSamples values (8 a batch) there is too little to see any and the
// inflation is taken as 1.
const vifMinSamples = 8 * 20

// vifCrit are the significance thresholds by batch count k: for
// independent values (k−1)·estimate follows χ²(k−1), and an estimate
// below its 95th percentile over k−1 (30.144/19, 16.919/9) is as likely
// noise as correlation; applying it would widen independent runs'
// intervals by noise alone. Above it the correlation is real and used
// whole.
var vifCrit = map[int]float64{20: 30.144 / 19, 10: 16.919 / 9}

// batchVar cuts x (in send order) into k consecutive batches of equal
// size (the remainder left out) and returns the batch size and the
// sample variance of the batches' means of f(x).
func batchVar(x []float64, k int, f func(float64) float64) (size int, v float64) {
	size = len(x) / k
	means := make([]float64, k)
	var all float64
	for j := range means {
		var s float64
		for _, y := range x[j*size : (j+1)*size] {
			s += f(y)
		}
		means[j] = s / float64(size)
		all += means[j]
	}
	all /= float64(k)
	for _, m := range means {
		v += (m - all) * (m - all)
	}
	return size, v / float64(k-1)
}

// inflation is the larger significant variance inflation of f(x)'s mean
// over the batch counts (vifCrit), varF being f's variance for
// independent values; 1 when neither is significant.
func inflation(x []float64, varF float64, f func(float64) float64) float64 {
	out := 1.0
	for _, k := range []int{20, 10} {
		size, v := batchVar(x, k, f)
		if est := float64(size) * v / varF; est > vifCrit[k] {
			out = max(out, est)
		}
	}
	return out
}

// unsettled says whether x's correlation may outlast the longest batches:
// the estimate over 10 batches is significant and more than half again the
// one over 20. The inflation then still grows with the batch size, so the
// run is too short to measure it and its intervals may be too narrow.
func unsettled(x []float64) bool {
	if len(x) < vifMinSamples {
		return false
	}
	_, sd := meanSD(x)
	if sd == 0 {
		return false
	}
	id := func(y float64) float64 { return y }
	s20, v20 := batchVar(x, 20, id)
	s10, v10 := batchVar(x, 10, id)
	e20, e10 := float64(s20)*v20/(sd*sd), float64(s10)*v10/(sd*sd)
	return e10 > vifCrit[10] && e10 > 1.5*max(e20, 1)
}

// vifMean is the variance inflation of x's mean (x in send order): what
// correlation between neighbouring requests (one queued behind another)
// does to the variance of a mean; 1 unless significant.
func vifMean(x []float64) float64 {
	if len(x) < vifMinSamples {
		return 1
	}
	_, sd := meanSD(x)
	if sd == 0 {
		return 1
	}
	return inflation(x, sd*sd, func(y float64) float64 { return y })
}

// vifIndicator is the variance inflation of the share of x at or below v
// (the estimate of the q-quantile, q a fraction): what correlation does
// to a percentile's uncertainty; 1 unless significant.
func vifIndicator(x []float64, v, q float64) float64 {
	if len(x) < vifMinSamples || !(q > 0 && q < 1) {
		return 1
	}
	return inflation(x, q*(1-q), func(y float64) float64 {
		if y <= v {
			return 1
		}
		return 0
	})
}

// vifPercentile is the variance inflation of the p-th percentile of x
// (ordered in send order, sorted the same values sorted). Past the 90th
// it is at least the 90th's: a run's slow requests come in bursts (one
// long prefill delays its neighbours), so tail events cluster at least as
// much as the body's, while the few of them in a batch are too few to
// show it themselves.
func vifPercentile(ordered, sorted []float64, p float64) float64 {
	v := vifIndicator(ordered, percentile(sorted, p), p/100)
	if p > 90 {
		v = max(v, vifIndicator(ordered, percentile(sorted, 90), 0.9))
	}
	return v
}

// resampleMeanVIF is resampleMean with the spread of a mean of n/vif
// independent values: the plug-in normal when vif > 1.
func resampleMeanVIF(rng *rand.Rand, x []float64, mean, sd, vif float64) float64 {
	if vif <= 1 {
		return resampleMean(rng, x, mean, sd)
	}
	return mean + rng.NormFloat64()*sd*math.Sqrt(vif/float64(len(x)))
}

// resamplePercentileN is resamplePercentile for a sample worth neff
// independent values (neff < len(sorted) when its requests are
// correlated): the percentile's order statistic among neff uniforms,
// U ~ Beta(k, neff+1−k) with k = p/100·(neff−1)+1, read off the sorted
// values' quantile function.
func resamplePercentileN(rng *rand.Rand, sorted []float64, p, neff float64) float64 {
	n := len(sorted)
	if neff >= float64(n) || n < 2 {
		return resamplePercentile(rng, sorted, p)
	}
	neff = max(neff, 2)
	k := p/100*(neff-1) + 1
	return sorted[orderIndex(beta(rng, k, neff+1-k), n)]
}

// pValue is the bootstrap's two-sided p-value for a zero difference:
// twice the smaller share of diffs at or beyond zero on either side.
func pValue(diffs []float64) float64 {
	var le, ge int
	for _, d := range diffs {
		if d <= 0 {
			le++
		}
		if d >= 0 {
			ge++
		}
	}
	return min(1, 2*float64(min(le, ge))/float64(len(diffs)))
}
