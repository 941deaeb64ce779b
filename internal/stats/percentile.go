package stats

import (
	"math"
	"strconv"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100, clamped) of sorted,
// which must be in ascending order, interpolating linearly between the
// closest ranks exactly as numpy.percentile's default ("linear") method does,
// so figures match vLLM's side by side. It returns 0 for an empty slice, as
// vLLM's np.percentile(x or 0) does.
func Percentile(sorted []float64, p float64) float64 {
	return percentileAt(len(sorted), p, func(i int) float64 { return sorted[i] })
}

// percentileAt is Percentile over n values reached through at (ascending).
//
// numpy's linear method: the virtual index is v = p/100·(n−1); with
// lo = ⌊v⌋ and t = v − lo the result is lerp(x[lo], x[lo+1], t), where lerp
// switches form at t = 0.5 for accuracy (numpy's _lerp).
func percentileAt(n int, p float64, at func(int) float64) float64 {
	if n == 0 {
		return 0
	}
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	if p > 100 {
		p = 100
	}
	v := p / 100 * float64(n-1)
	lo := int(math.Floor(v))
	if lo >= n-1 {
		return at(n - 1)
	}
	return lerp(at(lo), at(lo+1), v-float64(lo))
}

// lerp interpolates like numpy's _lerp: a + (b−a)·t below t = 0.5 and
// b − (b−a)·(1−t) from 0.5 up, which keeps the result exact at both ends.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// PercentileName formats p the way vLLM names its result keys and labels:
// an integral p without decimals ("99"), else its shortest decimal form
// ("99.9"). The key for p = 99.9 of TTFT is therefore "p99.9_ttft_ms".
func PercentileName(p float64) string {
	if p == math.Trunc(p) && math.Abs(p) < 1e15 {
		return strconv.FormatInt(int64(p), 10)
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// MinSamples is the smallest sample count for which the p-th percentile is
// more than the sample's extreme: ⌈1/(1−p/100)⌉, e.g. 2 for p50, 10 for p90,
// 100 for p99 and 1000 for p99.9. Below it the estimate sits between the two
// largest values seen, so it says little about the tail. It returns 0 (no
// minimum) for p ≥ 100 (the max is exact at any size) and for p ≤ 0.
func MinSamples(p float64) int {
	if !(p > 0 && p < 100) {
		return 0
	}
	// 100/(100−p) is computed in float64, where e.g. 100/(100−99) is exact but
	// 100/(100−99.9) is 1000.0000000000036: round away the representation
	// error before taking the ceiling.
	x := 100 / (100 - p)
	return int(math.Ceil(x - 1e-9))
}

// sample is what a series stores: int64 (ns or tokens) for per-request values,
// float32 milliseconds for the very numerous inter-token gaps.
type sample interface{ ~int64 | ~float32 | ~float64 }

// kth returns the k-th smallest (0-based) element of the union of two
// ascending slices a and b, in O(log(len a)) without merging them.
//
// It searches the count i of elements taken from a among the k+1 smallest;
// j = k+1−i come from b. The right i is the smallest with a[i] ≥ b[j−1]
// (a[len a] = +∞, b[−1] = −∞), a predicate monotone in i. The answer is then
// the larger of a[i−1] and b[j−1].
func kth[T sample](a, b []T, k int) T {
	lo, hi := max(0, k+1-len(b)), min(k+1, len(a))
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		j := k + 1 - i
		if a[i] >= b[j-1] {
			hi = i
		} else {
			lo = i + 1
		}
	}
	i, j := lo, k+1-lo
	switch {
	case i == 0:
		return b[j-1]
	case j == 0:
		return a[i-1]
	default:
		return max(a[i-1], b[j-1])
	}
}
