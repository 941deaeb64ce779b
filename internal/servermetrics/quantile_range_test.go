package servermetrics

import (
	"math"
	"testing"
)

// windowOf is the window statistics of observations vs, bucketed as
// vLLM's request-latency histograms are.
func windowOf(vs ...float64) HistogramStats {
	b := NewHistogramBuilder(VLLMRequestLatencyBuckets)
	for _, v := range vs {
		b.Observe(v)
	}
	return statsOf(b.Histogram())
}

// The queue time: a mean of 4.15 ms, every request in the first
// 0.3 s bucket. Interpolation put the P50 at 150 ms and the P99 at 297 ms;
// what the histogram proves is P50 ≤ 8.3 ms (Markov: at most half can
// exceed twice the mean) and P99 ≤ 300 ms (the bucket).
func TestQuantileRangeFirstBucket(t *testing.T) {
	vs := make([]float64, 100)
	for i := range vs {
		vs[i] = 0.00415
	}
	st := windowOf(vs...)
	for _, tt := range []struct {
		name   string
		r      Range
		p      float64
		wantHi float64
	}{
		{"P50", st.P50Range, st.P50, 2 * 0.00415},
		{"P90", st.P90Range, st.P90, 10 * 0.00415},
		{"P99", st.P99Range, st.P99, 0.3},
	} {
		if tt.r.Lo != 0 || math.Abs(tt.r.Hi-tt.wantHi) > 1e-12 {
			t.Errorf("%s range = %+v; want [0, %g]", tt.name, tt.r, tt.wantHi)
		}
		if tt.p > tt.r.Hi {
			t.Errorf("%s = %g; want within its range %+v", tt.name, tt.p, tt.r)
		}
	}
}

func TestQuantileRangeBuckets(t *testing.T) {
	// 50 in (0.3, 0.5], 49 in (2.5, 5], 1 past the last bound (7680 s).
	var vs []float64
	for range 50 {
		vs = append(vs, 0.4)
	}
	for range 49 {
		vs = append(vs, 4)
	}
	vs = append(vs, 9000)
	st := windowOf(vs...)
	if want := (Range{Lo: 0.3, Hi: 0.5}); st.P50Range != want {
		t.Errorf("P50 range = %+v; want %+v (its bucket)", st.P50Range, want)
	}
	if want := (Range{Lo: 2.5, Hi: 5}); st.P90Range != want {
		t.Errorf("P90 range = %+v; want %+v (its bucket)", st.P90Range, want)
	}
	// The P99's rank is the 99th observation, in (2.5, 5].
	if want := (Range{Lo: 2.5, Hi: 5}); st.P99Range != want {
		t.Errorf("P99 range = %+v; want %+v", st.P99Range, want)
	}
	if h := (Histogram{}).QuantileRange(0.5); h != (Range{}) {
		t.Errorf("empty histogram's range = %+v; want zero", h)
	}
}

// The decode time: a P99 of 9,883 ms interpolated in (5, 10] s
// beside a longest request of 7,477 ms. Capped by the longest request, it
// is 5–7.477 s; a cap below the bucket contradicts the server's own count
// and is ignored.
func TestHistogramStatsCapped(t *testing.T) {
	var vs []float64
	for range 90 {
		vs = append(vs, 4)
	}
	for range 10 {
		vs = append(vs, 7.4)
	}
	st := windowOf(vs...)
	if st.P99Range.Lo != 5 || st.P99 <= 7.477 {
		t.Fatalf("uncapped P99 %g in %+v; want an interpolation past 7.477 in (5, 10]", st.P99, st.P99Range)
	}
	c := st.Capped(7.477)
	if want := (Range{Lo: 5, Hi: 7.477}); c.P99Range != want || c.P99 > 7.477 {
		t.Errorf("capped P99 %g in %+v; want ≤ 7.477 in %+v", c.P99, c.P99Range, want)
	}
	if c.P50Range != st.P50Range {
		t.Errorf("capped P50 range = %+v; want %+v unchanged (its bucket ends below the cap)", c.P50Range, st.P50Range)
	}
	if low := st.Capped(1); low.P99Range != st.P99Range {
		t.Errorf("cap below the bucket: P99 range = %+v; want %+v", low.P99Range, st.P99Range)
	}
}
