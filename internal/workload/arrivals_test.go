package workload

import (
	"math"
	"testing"
	"time"
)

func TestArrivalsMeanAndCV(t *testing.T) {
	// Gamma(k, θ) gaps have mean kθ = 1/rate and CV 1/√k, so the CV is
	// 1 for burstiness 1 (Poisson), √(1/0.25) = 2 for 0.25, √(1/4) = 0.5 for 4.
	// With 40,000 gaps the sample mean's relative standard error is CV/200
	// (≤ 1 %), so 5 % bounds fail only on a real error.
	tests := []struct {
		name             string
		rate, burstiness float64
		wantCV           float64
	}{
		{"poisson", 10, 1, 1},
		{"bursty", 50, 0.25, 2},
		{"regular", 2, 4, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 40000
			a := NewArrivals(tt.rate, tt.burstiness, 42)
			var prev time.Duration
			var sum, sumSq float64
			for range n {
				at := a.Next()
				if at < prev {
					t.Fatalf("Next() = %v after %v; want non-decreasing", at, prev)
				}
				g := (at - prev).Seconds()
				sum += g
				sumSq += g * g
				prev = at
			}
			mean := sum / n
			cv := math.Sqrt(sumSq/n-mean*mean) / mean
			if want := 1 / tt.rate; math.Abs(mean-want)/want > 0.05 {
				t.Errorf("mean gap = %.5f s; want %.5f s ± 5%%", mean, want)
			}
			if math.Abs(cv-tt.wantCV)/tt.wantCV > 0.05 {
				t.Errorf("gap CV = %.3f; want %.3f ± 5%%", cv, tt.wantCV)
			}
		})
	}
}

func TestArrivalsAllAtZero(t *testing.T) {
	for _, rate := range []float64{0, -1, math.Inf(1), math.NaN()} {
		a := NewArrivals(rate, 1, 1)
		for range 3 {
			if got := a.Next(); got != 0 {
				t.Errorf("NewArrivals(%v).Next() = %v; want 0", rate, got)
			}
		}
	}
}

func TestArrivalsDeterministic(t *testing.T) {
	a, b, c := NewArrivals(5, 0.5, 7), NewArrivals(5, 0.5, 7), NewArrivals(5, 0.5, 8)
	differs := false
	for i := range 1000 {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("arrival %d: %v vs %v with the same seed; want equal", i, x, y)
		}
		differs = differs || x != z
	}
	if !differs {
		t.Errorf("seeds 7 and 8 gave the same 1000 arrivals; want different")
	}
}

func TestArrivalsNoDrift(t *testing.T) {
	// Burstiness +Inf is treated as Poisson; a shape of 1e12 is nearly
	// deterministic: gaps of 1/rate, so arrival n is at n/rate with no
	// accumulated rounding: 100,000 gaps of 1/3 s end at 33,333.33 s.
	a := NewArrivals(3, 1e12, 1)
	var at time.Duration
	for range 100000 {
		at = a.Next()
	}
	want := 100000.0 / 3
	if got := at.Seconds(); math.Abs(got-want) > 1e-3 {
		t.Errorf("arrival 100000 = %.3f s; want %.3f s", got, want)
	}
}

func BenchmarkArrivalsNext(b *testing.B) {
	a := NewArrivals(100, 0.5, 1)
	for b.Loop() {
		a.Next()
	}
}

func TestRampHandWorked(t *testing.T) {
	// A shape of 1e12 makes every gap 1/rate (to ~1e-6 relative), so the
	// offsets can be worked by hand. Five requests:
	//   linear 1→5 req/s: rates 1, 2, 3, 4, 5; gaps 1, 1/2, 1/3, 1/4, 1/5 s;
	//   exponential 1→16 req/s: rates 1, 2, 4, 8, 16 (×2 per request);
	//   gaps 1, 1/2, 1/4, 1/8, 1/16 s.
	// A sixth request past n keeps the end rate.
	tests := []struct {
		name       string
		strategy   RampStrategy
		start, end float64
		wantRates  []float64
		wantAt     []float64 // seconds
	}{
		{"linear", RampLinear, 1, 5, []float64{1, 2, 3, 4, 5, 5},
			[]float64{1, 1.5, 1.5 + 1.0/3, 1.5 + 1.0/3 + 0.25, 1.5 + 1.0/3 + 0.25 + 0.2, 1.5 + 1.0/3 + 0.25 + 0.4}},
		{"exponential", RampExponential, 1, 16, []float64{1, 2, 4, 8, 16, 16},
			[]float64{1, 1.5, 1.75, 1.875, 1.9375, 2}},
		{"flat", RampLinear, 4, 4, []float64{4, 4, 4, 4, 4, 4},
			[]float64{0.25, 0.5, 0.75, 1, 1.25, 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRamp(tt.strategy, tt.start, tt.end, 1e12, 5, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.wantRates {
				if got := r.Rate(i); math.Abs(got-want) > 1e-9 {
					t.Errorf("Rate(%d) = %v; want %v", i, got, want)
				}
			}
			for i, want := range tt.wantAt {
				if got := r.Next().Seconds(); math.Abs(got-want) > 1e-5 {
					t.Errorf("arrival %d at %.6f s; want %.6f s", i, got, want)
				}
			}
		})
	}
}

func TestRampPoissonMeans(t *testing.T) {
	// With burstiness 1 each gap is exponential with mean 1/Rate(i): over
	// 20,000 requests ramping 10→100 req/s linearly, the expected end is
	// Σ 1/Rate(i); its relative standard error is about 1/√20000 (< 1 %).
	const n = 20000
	r, err := NewRamp(RampLinear, 10, 100, 1, n, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	var at time.Duration
	for i := range n {
		want += 1 / r.Rate(i)
		at = r.Next()
	}
	if got := at.Seconds(); math.Abs(got-want)/want > 0.03 {
		t.Errorf("arrival %d at %.3f s; want %.3f s ± 3%%", n, got, want)
	}
}

func TestNewRampErrors(t *testing.T) {
	tests := []struct {
		name       string
		strategy   RampStrategy
		start, end float64
		n          int
	}{
		{"unknown strategy", "sigmoid", 1, 2, 10},
		{"zero start", RampExponential, 0, 2, 10},
		{"zero start linear", RampLinear, 0, 2, 10},
		{"end below start", RampLinear, 5, 2, 10},
		{"infinite end", RampLinear, 1, math.Inf(1), 10},
		{"no requests", RampLinear, 1, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewRamp(tt.strategy, tt.start, tt.end, 1, tt.n, 1); err == nil {
				t.Errorf("NewRamp(%q, %v, %v, n=%d) = nil error; want one", tt.strategy, tt.start, tt.end, tt.n)
			}
		})
	}
}
