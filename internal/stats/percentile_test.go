package stats

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		p    float64
		want float64
	}{
		// numpy: np.percentile([1,2,3,4], [50,90,99]) = [2.5, 3.7, 3.97].
		// v = p/100·3: 1.5 → 2+0.5·1; 2.7 → 4−1·0.3; 2.97 → 4−1·0.03.
		{"numpy p50", []float64{1, 2, 3, 4}, 50, 2.5},
		{"numpy p90", []float64{1, 2, 3, 4}, 90, 3.7},
		{"numpy p99", []float64{1, 2, 3, 4}, 99, 3.97},
		// np.percentile([15,20,35,40,50], 40) = 29.0: v = 0.4·4 = 1.6,
		// between 20 and 35 at t = 0.6 → 35 − 15·0.4 = 29.
		{"numpy p40", []float64{15, 20, 35, 40, 50}, 40, 29},
		// v = 0.25·4 = 1 exactly: the second value, no interpolation.
		{"exact rank", []float64{15, 20, 35, 40, 50}, 25, 20},
		{"p0 is min", []float64{3, 5, 9}, 0, 3},
		{"p100 is max", []float64{3, 5, 9}, 100, 9},
		{"single value", []float64{7}, 99, 7},
		{"empty is zero like vLLM", nil, 99, 0},
		{"clamped above 100", []float64{3, 5, 9}, 150, 9},
		{"clamped below 0", []float64{3, 5, 9}, -1, 3},
		{"NaN p is p0", []float64{3, 5, 9}, math.NaN(), 3},
		// [0,0,0,10] p99: v = 2.97 → 10 − 10·0.03 = 9.7.
		{"interpolate from zero", []float64{0, 0, 0, 10}, 99, 9.7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.in, tt.p); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Percentile(%v, %v) = %v; want %v", tt.in, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileName(t *testing.T) {
	tests := []struct {
		p    float64
		want string
	}{
		{99, "99"}, {50, "50"}, {99.9, "99.9"}, {0, "0"}, {100, "100"}, {12.25, "12.25"}, {99.99, "99.99"},
	}
	for _, tt := range tests {
		if got := PercentileName(tt.p); got != tt.want {
			t.Errorf("PercentileName(%v) = %q; want %q", tt.p, got, tt.want)
		}
	}
}

func TestMinSamples(t *testing.T) {
	tests := []struct {
		p    float64
		want int
	}{
		// ⌈1/(1−p/100)⌉: 1/0.5 = 2, 1/0.1 = 10, 1/0.05 = 20, 1/0.01 = 100,
		// 1/0.001 = 1000 (float64 gives 1000.0000000000036: must not round up
		// to 1001), 1/0.25 = 4, 1/(1/3) = 3 for p = 66.67 → 3.0003 → 4.
		{50, 2}, {90, 10}, {95, 20}, {99, 100}, {99.9, 1000}, {75, 4}, {66.67, 4},
		{0, 0}, {100, 0}, {10, 2},
	}
	for _, tt := range tests {
		if got := MinSamples(tt.p); got != tt.want {
			t.Errorf("MinSamples(%v) = %d; want %d", tt.p, got, tt.want)
		}
	}
}

// TestPercentileProperties checks on random data that the percentile is
// monotone in p and lies between the min and the max.
func TestPercentileProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), 1, 200).Draw(t, "xs")
		slices.Sort(xs)
		p1 := rapid.Float64Range(0, 100).Draw(t, "p1")
		p2 := rapid.Float64Range(p1, 100).Draw(t, "p2")
		v1, v2 := Percentile(xs, p1), Percentile(xs, p2)
		if v1 > v2 {
			t.Fatalf("Percentile(p=%v) = %v > Percentile(p=%v) = %v", p1, v1, p2, v2)
		}
		if v1 < xs[0] || v2 > xs[len(xs)-1] {
			t.Fatalf("percentiles %v, %v outside [%v, %v]", v1, v2, xs[0], xs[len(xs)-1])
		}
	})
}

// TestKth checks the two-slice selection against sorting the concatenation.
func TestKth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOf(rapid.Int64Range(-50, 50)).Draw(t, "a")
		b := rapid.SliceOf(rapid.Int64Range(-50, 50)).Draw(t, "b")
		if len(a)+len(b) == 0 {
			return
		}
		slices.Sort(a)
		slices.Sort(b)
		all := slices.Concat(a, b)
		slices.Sort(all)
		for k := range all {
			if got := kth(a, b, k); got != all[k] {
				t.Fatalf("kth(%v, %v, %d) = %d; want %d", a, b, k, got, all[k])
			}
		}
	})
}

func TestMomentsMerge(t *testing.T) {
	// [1,2,3] ∪ [10,20]: mean 36/5 = 7.2; squared deviations
	// 38.44+27.04+17.64+7.84+163.84 = 254.8 → population std √50.96.
	var a, b moments
	for _, x := range []float64{1, 2, 3} {
		a.add(x)
	}
	for _, x := range []float64{10, 20} {
		b.add(x)
	}
	m := a.merge(b)
	if m.n != 5 || math.Abs(m.mean-7.2) > 1e-12 || math.Abs(m.std()-math.Sqrt(50.96)) > 1e-12 || m.min != 1 || m.max != 20 {
		t.Errorf("merge = n %d mean %v std %v min %v max %v; want 5, 7.2, %v, 1, 20", m.n, m.mean, m.std(), m.min, m.max, math.Sqrt(50.96))
	}
	if got := (moments{}).merge(b); got != b {
		t.Errorf("empty.merge(b) = %+v; want %+v", got, b)
	}
}
