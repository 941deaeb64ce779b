// Package validate measures how far the simulator is from real runs: the
// statistics of its accuracy matrix (signed relative error, MAPE over a
// set, a two-sample Kolmogorov–Smirnov test and TOST equivalence at ±10 %
// of the truth), the matrix itself and its renderings (text, Markdown,
// JSON, HTML).
//
// It measures error; it fits nothing. The replay that produces the
// simulated samples lives with the drivers (package simvalidate), so this
// package stays pure: it reads no file and runs no engine. Its functions are
// safe for concurrent use; a Matrix is not safe for concurrent mutation.
package validate

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Verdict is what a test concludes about the simulator against the truth.
type Verdict string

// The three verdicts every test returns.
const (
	// Equivalent: for TOST, the whole 90 % interval of the difference lies
	// within the margin; for KS, the two samples are not distinguishable at
	// Alpha (which is not proof of equality, only no evidence against it).
	Equivalent Verdict = "equivalent"
	// NotEquivalent: the data had the resolution to show equivalence and
	// did not (TOST), or the distributions differ at Alpha (KS).
	NotEquivalent Verdict = "not equivalent"
	// TooFew: no sample of this size could have shown it: the interval is
	// unbounded or wider than the whole margin band (TOST), or even
	// completely separated samples would not reach Alpha (KS).
	TooFew Verdict = "too few samples to tell"
)

// Alpha is the significance level of every test: KS rejects at p < 0.05,
// and TOST's two one-sided tests at 0.05 each make its interval a 90 % one.
const Alpha = 0.05

// Margin is the equivalence margin, relative to the truth: ±10 %, as
// LLMServingSim reports its TOST.
const Margin = 0.10

// SignedError is (sim − truth) / truth: +0.05 means the simulator reads
// 5 % high. NaN when truth is 0 or either is NaN.
func SignedError(sim, truth float64) float64 {
	if truth == 0 {
		return math.NaN()
	}
	return (sim - truth) / truth
}

// MAPE is the mean absolute relative error of errs (signed relative
// errors, as SignedError gives), in per cent; NaN entries are left out.
// NaN when none is left.
func MAPE(errs []float64) float64 {
	sum, n := 0.0, 0
	for _, e := range errs {
		if !math.IsNaN(e) {
			sum += math.Abs(e)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return 100 * sum / float64(n)
}

// Percentile is numpy's default percentile of sorted xs: linear
// interpolation between closest ranks, p in per cent (0–100), so figures
// match vLLM's benchmark and goodput's own reports. NaN for no xs.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := (float64(len(sorted)) - 1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// Mean is the arithmetic mean of xs (NaN for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// variance is the sample variance (n − 1 in the denominator).
func variance(xs []float64, mean float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += (x - mean) * (x - mean)
	}
	return s / float64(len(xs)-1)
}

// KSResult is a two-sample Kolmogorov–Smirnov test.
type KSResult struct {
	// D is the statistic: the largest gap between the two empirical CDFs,
	// in [0, 1].
	D float64 `json:"d"`
	// P is the asymptotic p-value with the small-sample correction.
	P float64 `json:"p"`
	// N and M are the two sample sizes (truth, simulated).
	N int `json:"n"`
	M int `json:"m"`
	// Verdict is Equivalent when P ≥ Alpha, NotEquivalent below, TooFew
	// when even D = 1 would give P ≥ Alpha at these sizes.
	Verdict Verdict `json:"verdict"`
}

// KS runs the two-sample Kolmogorov–Smirnov test of truth against sim.
// The p-value is the Kolmogorov distribution's tail Q(λ) = 2 Σ (−1)^(j−1)
// exp(−2 j² λ²) at λ = (√nₑ + 0.12 + 0.11/√nₑ)·D, nₑ = n·m/(n + m) (the
// Stephens correction, as Numerical Recipes' probks): accurate to a few
// per cent already at nₑ ≥ 4.
func KS(truth, sim []float64) KSResult {
	r := KSResult{N: len(truth), M: len(sim), D: math.NaN(), P: math.NaN(), Verdict: TooFew}
	if r.N == 0 || r.M == 0 {
		return r
	}
	a, b := sorted(truth), sorted(sim)
	n, m := float64(r.N), float64(r.M)
	i, j := 0, 0
	d := 0.0
	for i < len(a) && j < len(b) {
		// Step both CDFs past the next value, ties in either sample
		// together, then compare them there.
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = max(d, math.Abs(float64(i)/n-float64(j)/m))
	}
	r.D = d
	en := math.Sqrt(n * m / (n + m))
	r.P = ksQ((en + 0.12 + 0.11/en) * d)
	switch {
	case ksQ((en+0.12+0.11/en)*1) >= Alpha:
		r.Verdict = TooFew
	case r.P < Alpha:
		r.Verdict = NotEquivalent
	default:
		r.Verdict = Equivalent
	}
	return r
}

// ksQ is the Kolmogorov distribution's tail Q(λ) = P(K > λ); 1 where the
// alternating series does not settle (λ near 0, where Q is 1 anyway).
func ksQ(lambda float64) float64 {
	const eps1, eps2 = 1e-3, 1e-8
	a2 := -2 * lambda * lambda
	fac, sum, prev := 2.0, 0.0, 0.0
	for j := 1; j <= 100; j++ {
		term := fac * math.Exp(a2*float64(j*j))
		sum += term
		if math.Abs(term) <= eps1*prev || math.Abs(term) <= eps2*sum {
			return min(max(sum, 0), 1)
		}
		fac = -fac
		prev = math.Abs(term)
	}
	return 1
}

// TOSTResult is an equivalence test of one figure (a mean or a
// percentile) of the simulated sample against the truth's.
type TOSTResult struct {
	// Truth and Sim are the figure in each sample.
	Truth float64 `json:"truth"`
	Sim   float64 `json:"sim"`
	// Lo and Hi bound the 90 % interval of Sim/Truth − 1 (for a mean,
	// the Welch interval of the difference over the truth's mean; for a
	// percentile, the ratio of the two order-statistic intervals). ±Inf
	// when the interval is unbounded.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// P is the larger of the two one-sided p-values (means only; NaN for
	// percentiles, whose interval is distribution-free).
	P float64 `json:"p"`
	// Verdict: Equivalent when [Lo, Hi] lies within ±Margin; TooFew when
	// the interval is unbounded or at least 2·Margin wide, so no position
	// of it could have shown equivalence; NotEquivalent otherwise.
	Verdict Verdict `json:"verdict"`
}

// verdictOf is the verdict of a relative interval [lo, hi] against ±margin.
func verdictOf(lo, hi, margin float64) Verdict {
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi-lo >= 2*margin:
		return TooFew
	case lo > -margin && hi < margin:
		return Equivalent
	default:
		return NotEquivalent
	}
}

// TOSTMean is Welch's two one-sided tests of the mean: is the simulated
// mean within ±margin (relative, e.g. Margin) of the truth's mean? The
// margin δ = margin·|mean(truth)| is taken as fixed. The interval is
// diff ± t(1−Alpha, ν)·se with se = √(s²ₜ/n + s²ₛ/m) and the
// Welch–Satterthwaite ν; equivalence at Alpha is that interval inside
// (−δ, δ). Fewer than two values in either sample: TooFew.
func TOSTMean(truth, sim []float64, margin float64) TOSTResult {
	r := TOSTResult{Truth: Mean(truth), Sim: Mean(sim), Lo: math.NaN(), Hi: math.NaN(), P: math.NaN(), Verdict: TooFew}
	n, m := float64(len(truth)), float64(len(sim))
	if n < 2 || m < 2 || r.Truth == 0 || math.IsNaN(r.Truth) {
		return r
	}
	scale := math.Abs(r.Truth)
	delta := margin * scale
	diff := r.Sim - r.Truth
	vt, vs := variance(truth, r.Truth)/n, variance(sim, r.Sim)/m
	se := math.Sqrt(vt + vs)
	if se == 0 {
		// Both samples constant: the difference is known exactly.
		r.Lo, r.Hi = diff/scale, diff/scale
		r.P = 1
		if math.Abs(diff) < delta {
			r.P = 0
		}
		r.Verdict = verdictOf(r.Lo, r.Hi, margin)
		return r
	}
	nu := (vt + vs) * (vt + vs) / (vt*vt/(n-1) + vs*vs/(m-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
	half := t.Quantile(1-Alpha) * se
	r.Lo, r.Hi = (diff-half)/scale, (diff+half)/scale
	r.P = max(t.Survival((diff+delta)/se), t.CDF((diff-delta)/se))
	r.Verdict = verdictOf(r.Lo, r.Hi, margin)
	return r
}

// TOSTPercentile asks whether the simulated p-th percentile (per cent) is
// within ±margin of the truth's, from distribution-free order-statistic
// intervals: each sample's 95 % interval of its percentile is
// [x₍ⱼ₎, x₍ₖ₎] with ranks j = ⌊np − 1.96·√(np(1−p))⌋ and k = ⌈np +
// 1.96·√(np(1−p))⌉ (1-based; the normal approximation to the binomial),
// and the ratio's interval [sim₍ⱼ₎/truth₍ₖ₎, sim₍ₖ₎/truth₍ⱼ₎] then
// covers at least 90 % (Bonferroni over the two). A rank outside 1…n
// leaves the interval unbounded: TooFew (P99 needs a few hundred values).
func TOSTPercentile(truth, sim []float64, p, margin float64) TOSTResult {
	a, b := sorted(truth), sorted(sim)
	r := TOSTResult{Truth: Percentile(a, p), Sim: Percentile(b, p), Lo: math.Inf(-1), Hi: math.Inf(1), P: math.NaN(), Verdict: TooFew}
	tl, th, ok1 := orderInterval(a, p/100)
	sl, sh, ok2 := orderInterval(b, p/100)
	if !ok1 || !ok2 || tl <= 0 {
		return r
	}
	r.Lo, r.Hi = sl/th-1, sh/tl-1
	r.Verdict = verdictOf(r.Lo, r.Hi, margin)
	return r
}

// orderInterval is the 95 % distribution-free interval of quantile q
// (0–1) of sorted xs; false when a rank falls outside the sample.
func orderInterval(xs []float64, q float64) (lo, hi float64, ok bool) {
	const z = 1.959963984540054 // the normal's 97.5th percentile
	n := float64(len(xs))
	w := z * math.Sqrt(n*q*(1-q))
	j, k := int(math.Floor(n*q-w)), int(math.Ceil(n*q+w))
	if len(xs) == 0 || j < 1 || k > len(xs) {
		return math.NaN(), math.NaN(), false
	}
	return xs[j-1], xs[k-1], true
}

func sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}
