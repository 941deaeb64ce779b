package workload

import (
	"math"
	"slices"
)

// LengthStats describes the lengths a dataset sends, for a report's
// conditions.
type LengthStats struct {
	// N is the number of requests described.
	N int
	// Input is the prompt lengths in tokens, Output the requested output
	// lengths (max_tokens) in tokens.
	Input, Output Summary
}

// Summary holds the distribution of one length, in tokens. Percentiles
// interpolate linearly between closest ranks (numpy's default); Std is the
// population standard deviation (numpy's np.std), as vLLM reports.
type Summary struct {
	Mean, Std, Min, P50, P90, P99, Max float64
}

// Describe summarises the first n requests of ds (cycling when n > Len;
// n <= 0 means Len) from their shapes, so it builds no text.
func Describe(ds Dataset, n int) LengthStats {
	if n <= 0 {
		n = ds.Len()
	}
	if ds.Len() == 0 {
		return LengthStats{}
	}
	in, out := make([]float64, n), make([]float64, n)
	for i := range n {
		r := ds.Shape(i % ds.Len())
		in[i], out[i] = float64(r.PromptTokens), float64(r.OutputTokens)
	}
	return LengthStats{N: n, Input: summarize(in), Output: summarize(out)}
}

func summarize(x []float64) Summary {
	if len(x) == 0 {
		return Summary{}
	}
	slices.Sort(x)
	var sum float64
	for _, v := range x {
		sum += v
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return Summary{
		Mean: mean, Std: math.Sqrt(ss / float64(len(x))),
		Min: x[0], Max: x[len(x)-1],
		P50: percentile(x, 50), P90: percentile(x, 90), P99: percentile(x, 99),
	}
}

// percentile of sorted x by linear interpolation between closest ranks:
// rank p/100·(n−1), as numpy.percentile does by default.
func percentile(x []float64, p float64) float64 {
	r := p / 100 * float64(len(x)-1)
	lo := int(math.Floor(r))
	if lo+1 >= len(x) {
		return x[len(x)-1]
	}
	return x[lo] + (r-float64(lo))*(x[lo+1]-x[lo])
}

// PrefixReuse returns the fraction of prompt tokens of the first n requests
// of ds (n <= 0: all) that an unbounded prefix cache could serve: for each
// request, in order, the longest leading run of its BlockHashes already seen
// in earlier requests, times HashBlockTokens, capped at its PromptTokens.
// Requests without BlockHashes reuse nothing.
func PrefixReuse(ds Dataset, n int) float64 {
	if n <= 0 || n > ds.Len() {
		n = ds.Len()
	}
	seen := map[uint64]struct{}{}
	var total, reused int64
	for i := range n {
		r := ds.Shape(i)
		total += int64(r.PromptTokens)
		run := 0
		for _, h := range r.BlockHashes {
			if _, ok := seen[h]; !ok {
				break
			}
			run++
		}
		reused += int64(min(run*r.HashBlockTokens, r.PromptTokens))
		for _, h := range r.BlockHashes {
			seen[h] = struct{}{}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(reused) / float64(total)
}
