package validate

import (
	"math"
	"testing"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestKS(t *testing.T) {
	cases := []struct {
		name       string
		truth, sim []float64
		d, p       float64
		verdict    Verdict
	}{
		// Disjoint samples of four: the truth's CDF reaches 1 at 4 while
		// the simulator's is still 0, so D = 1. nₑ = 4·4/8 = 2, √nₑ =
		// 1.41421, λ = (1.41421 + 0.12 + 0.11/1.41421)·1 = 1.61200, and
		// Q(λ) = 2(e^(−2λ²) − e^(−8λ²) + …) = 2(0.0055328 − 9.5e−10) =
		// 0.011066 < 0.05.
		{"disjoint", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 1, 0.011066, NotEquivalent},
		// {1,2,3} against {2,3,4}: the CDFs at 1, 2, 3, 4 are 1/3, 2/3, 1, 1
		// and 0, 1/3, 2/3, 1, so D = 1/3. √nₑ = √1.5 = 1.22474, λ =
		// (1.22474 + 0.12 + 0.08981)/3 = 0.47819, Q(λ) = 0.97621. Even D =
		// 1 would give λ = 1.43456, Q = 0.0326 < 0.05: enough to tell.
		{"shifted by one", []float64{1, 2, 3}, []float64{2, 3, 4}, 1.0 / 3, 0.97621, Equivalent},
		// Two against two: even D = 1 gives λ = 1 + 0.12 + 0.11 = 1.23,
		// Q = 2e^(−3.0258) = 0.0970 ≥ 0.05, so no outcome could reject.
		{"two each", []float64{1, 2}, []float64{3, 4}, 1, 0.097027, TooFew},
		// Ties across the samples step together: {1,1,2} vs {1,2,2}: CDFs
		// at 1 are 2/3 and 1/3, at 2 both 1: D = 1/3.
		{"ties", []float64{1, 1, 2}, []float64{1, 2, 2}, 1.0 / 3, 0.97621, Equivalent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := KS(c.truth, c.sim)
			if !near(r.D, c.d, 1e-12) || !near(r.P, c.p, 5e-6) || r.Verdict != c.verdict {
				t.Errorf("KS(%v, %v) = D %.6f p %.6f %q; want D %.6f p %.6f %q", c.truth, c.sim, r.D, r.P, r.Verdict, c.d, c.p, c.verdict)
			}
		})
	}
	if r := KS(nil, []float64{1}); r.Verdict != TooFew || !math.IsNaN(r.D) {
		t.Errorf("KS(nil, [1]) = %+v; want too few, D NaN", r)
	}
}

func TestTOSTMean(t *testing.T) {
	alt := []float64{9, 11, 9, 11, 9, 11, 9, 11}
	plus := func(xs []float64, d float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x + d
		}
		return out
	}
	cases := []struct {
		name       string
		truth, sim []float64
		lo, hi     float64
		verdict    Verdict
	}{
		// Eight values 9,11,… have mean 10 and variance 8/7 = 1.142857.
		// Shifted by 0: diff 0, se = √(2·1.142857/8) = 0.534522, ν =
		// se⁴/(2·(1.142857/8)²/7) = 14.0, t(0.95, 14) = 1.76131, half-width
		// 0.941471; δ = 10 % of 10 = 1, so the interval ±0.0941 (relative)
		// lies inside ±0.1: equivalent.
		{"same mean", alt, alt, -0.0941471, 0.0941471, Equivalent},
		// Shifted by 0.2: [0.2 − 0.941471, 0.2 + 0.941471]/10 =
		// [−0.0741, +0.1141]: it crosses +0.1 though it is narrower than
		// the band (0.188 < 0.2): not equivalent.
		{"two per cent high", alt, plus(alt, 0.2), -0.0741471, 0.1141471, NotEquivalent},
		// Three values each, {9,10,11} vs {10,11,12}: means 10 and 11,
		// variances 1, se = √(2/3) = 0.816497, ν = (2/3)²/(2·(1/3)²/2) = 4,
		// t(0.95, 4) = 2.13185, half-width 1.74066: the interval [−0.0741,
		// +0.2741] is 0.348 wide, wider than the 0.2 band: too few.
		{"three each", []float64{9, 10, 11}, []float64{10, 11, 12}, -0.0740664, 0.2740664, TooFew},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := TOSTMean(c.truth, c.sim, Margin)
			if !near(r.Lo, c.lo, 2e-6) || !near(r.Hi, c.hi, 2e-6) || r.Verdict != c.verdict {
				t.Errorf("TOSTMean = [%.7f, %.7f] %q; want [%.7f, %.7f] %q", r.Lo, r.Hi, r.Verdict, c.lo, c.hi, c.verdict)
			}
		})
	}
	// The same-mean case's p-value: t = (0 + 1)/0.534522 = 1.87083 on 14
	// degrees of freedom lies between t(0.95) = 1.761 and t(0.975) =
	// 2.145, so p is between 0.025 and 0.05.
	if r := TOSTMean(alt, alt, Margin); !(r.P > 0.025 && r.P < 0.05) {
		t.Errorf("TOSTMean(same).P = %v; want in (0.025, 0.05)", r.P)
	}
	if r := TOSTMean([]float64{1}, []float64{1, 2}, Margin); r.Verdict != TooFew {
		t.Errorf("TOSTMean of one truth value = %q; want too few", r.Verdict)
	}
	// Constant samples: the difference is exact, 5 % inside the margin.
	if r := TOSTMean([]float64{10, 10}, []float64{10.5, 10.5}, Margin); r.Verdict != Equivalent || !near(r.Lo, 0.05, 1e-12) {
		t.Errorf("TOSTMean(constant) = %+v; want equivalent at +5%%", r)
	}
}

func TestTOSTPercentile(t *testing.T) {
	truth := make([]float64, 400)
	for i := range truth {
		truth[i] = 1001 + float64(i) // 1001 … 1400
	}
	scaled := func(f float64) []float64 {
		out := make([]float64, len(truth))
		for i, x := range truth {
			out[i] = f * x
		}
		return out
	}
	cases := []struct {
		name    string
		sim     []float64
		p       float64
		lo, hi  float64
		verdict Verdict
	}{
		// P50 of 400: np = 200, 1.96·√(400·0.25) = 19.60, ranks ⌊180.40⌋ =
		// 180 and ⌈219.60⌉ = 220, so the truth's interval is [1180, 1220]
		// and ×1.02's [1203.6, 1244.4]; the ratio's is [1203.6/1220 − 1,
		// 1244.4/1180 − 1] = [−0.01344, +0.05458]: equivalent.
		{"P50 two per cent high", scaled(1.02), 50, 1203.6/1220 - 1, 1244.4/1180 - 1, Equivalent},
		// P99 of 400: np = 396, 1.96·√3.96 = 3.900, ranks 392 and 400:
		// [1392, 1400] and [1419.84, 1428]: [+0.01417, +0.02586].
		{"P99 two per cent high", scaled(1.02), 99, 1419.84/1400 - 1, 1428.0/1392 - 1, Equivalent},
		// ×1.15 at P50: [1357/1220 − 1, 1403/1180 − 1] = [+0.1123,
		// +0.1890]: narrow and outside: not equivalent.
		{"P50 fifteen per cent high", scaled(1.15), 50, 1357.0/1220 - 1, 1403.0/1180 - 1, NotEquivalent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := TOSTPercentile(truth, c.sim, c.p, Margin)
			if !near(r.Lo, c.lo, 1e-9) || !near(r.Hi, c.hi, 1e-9) || r.Verdict != c.verdict {
				t.Errorf("TOSTPercentile(P%v) = [%.5f, %.5f] %q; want [%.5f, %.5f] %q", c.p, r.Lo, r.Hi, r.Verdict, c.lo, c.hi, c.verdict)
			}
		})
	}
	// P99 of 300 values: np = 297, 1.96·√2.97 = 3.378, the upper rank
	// ⌈300.38⌉ = 301 lies past the sample: no bounded interval.
	if r := TOSTPercentile(truth[:300], truth[:300], 99, Margin); r.Verdict != TooFew {
		t.Errorf("TOSTPercentile(P99 of 300) = %q; want too few", r.Verdict)
	}
}

func TestErrors(t *testing.T) {
	// (110 − 100)/100 = +0.10; (45 − 50)/50 = −0.10; MAPE of +0.1, −0.1,
	// +0.04 = (10 + 10 + 4)/3 = 8 %.
	if got := SignedError(110, 100); !near(got, 0.10, 1e-12) {
		t.Errorf("SignedError(110, 100) = %v; want 0.10", got)
	}
	if got := SignedError(45, 50); !near(got, -0.10, 1e-12) {
		t.Errorf("SignedError(45, 50) = %v; want -0.10", got)
	}
	if got := SignedError(1, 0); !math.IsNaN(got) {
		t.Errorf("SignedError(1, 0) = %v; want NaN", got)
	}
	if got := MAPE([]float64{0.1, -0.1, 0.04, math.NaN()}); !near(got, 8, 1e-12) {
		t.Errorf("MAPE = %v; want 8", got)
	}
	// numpy: percentile([1,2,3,4], 50) = 2.5, 90 → 3 + 0.7 = 3.7.
	if got := Percentile([]float64{1, 2, 3, 4}, 90); !near(got, 3.7, 1e-12) {
		t.Errorf("Percentile([1 2 3 4], 90) = %v; want 3.7", got)
	}
}
