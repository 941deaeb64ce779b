package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHolm works Holm's step-down by hand at α = 0.05 over four rows:
// sorted p-values are compared with 0.05/4, 0.05/3, 0.05/2, 0.05/1 =
// 0.0125, 0.0167, 0.025, 0.05 and the first one above its threshold stops
// the rejections. p = 0.001, 0.01, 0.02, 0.04 are all kept; with 0.03 in
// place of 0.01 the sorted second (0.02) is above 0.0167, so only 0.001
// keeps its verdict.
func TestHolm(t *testing.T) {
	mk := func(ps ...float64) []Delta {
		ds := make([]Delta, len(ps))
		for i, p := range ps {
			ds[i] = Delta{HasCI: true, P: p, Verdict: Worse}
		}
		return ds
	}
	ds := mk(0.001, 0.01, 0.02, 0.04)
	if n := holm(ds, 0.05); n != 4 {
		t.Errorf("family %d, want 4", n)
	}
	for i, d := range ds {
		if d.Verdict != Worse {
			t.Errorf("row %d (p %g): %s, want worse", i, d.P, d.Verdict)
		}
	}
	ds = mk(0.001, 0.03, 0.02, 0.04)
	holm(ds, 0.05)
	for i, want := range []Verdict{Worse, NoSignificant, NoSignificant, NoSignificant} {
		if ds[i].Verdict != want {
			t.Errorf("row %d (p %g): %s, want %s", i, ds[i].P, ds[i].Verdict, want)
		}
	}
}

// TestVIFOfAR1: for an AR(1) series with coefficient ρ the variance of a
// long mean is (1+ρ)/(1−ρ) times the independent one's: 3 at ρ = 0.5.
// Independent values give 1 (the estimate's noise is not taken for
// correlation), and a run too short to see a correlation longer than its
// batches is flagged unsettled.
func TestVIFOfAR1(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ar := func(n int, rho float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
			if i > 0 {
				x[i] += rho * x[i-1]
			}
		}
		return x
	}
	if v := vifMean(ar(40_000, 0.5)); math.Abs(v-3) > 0.35*3 {
		t.Errorf("VIF of AR(1) ρ=0.5 = %.2f, want 3 ± 35 %%", v)
	}
	if v := vifMean(ar(40_000, 0)); v != 1 {
		t.Errorf("VIF of independent values = %.2f, want 1", v)
	}
	long := 0
	for range 20 {
		if unsettled(ar(400, 0.995)) {
			long++
		}
	}
	if long < 10 {
		t.Errorf("a correlation of ~200 values in 400 was flagged unsettled %d of 20 times; want most", long)
	}
}
