package sim

import "math"

// DefaultNaturalMedian is the median natural output length, tokens, of a
// request that leaves the length to the model (no max_tokens, no
// ignore_eos).
const DefaultNaturalMedian = 200

// NaturalLength is the output length a request would have if nothing capped
// it: a deterministic draw, keyed by key (a prompt hash, or a seed and
// index), from a log-normal distribution with the given median (tokens) and
// σ = 0.8 — P90 ≈ 2.8× and P99 ≈ 6.4× the median, a ShareGPT-like spread.
// The same key always gets the same length, as a greedy model gives the same
// prompt the same answer. The wall-clock server and the virtual-time driver
// both use it, so they agree.
func NaturalLength(key uint64, median int) int {
	if median < 1 {
		median = 1
	}
	a := Mix64(key ^ 0x9e3779b97f4a7c15)
	b := Mix64(a)
	// Two uniforms in (0,1) for Box–Muller; the +0.5 keeps them off 0.
	u1 := (float64(a>>11) + 0.5) / (1 << 53)
	u2 := (float64(b>>11) + 0.5) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	n := math.Round(float64(median) * math.Exp(0.8*z))
	return int(min(max(n, 1), 1<<30))
}

// Mix64 is splitmix64's finalizer: a fast bijective scrambler of keys.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
