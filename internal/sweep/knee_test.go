package sweep

import (
	"math"
	"testing"
)

// TestFindKneeRangeByHand: loads 1–4 with the knee at 4 (P99 100, 105,
// 110, 200: base slope max(5, 5 % of 100) = 5, and only the last segment,
// 90 ms per unit, passes 3 × 5 and 1.5 × 100).
func TestFindKneeRangeByHand(t *testing.T) {
	loads := []float64{1, 2, 3, 4}
	for _, tt := range []struct {
		name   string
		lo, hi []float64
		want   KneeRange
		ok     bool
	}{
		// ±1: base from max(104−101, 4.95) = 4.95 to max(106−99, 5.05) = 7;
		// level 3 can (111−104 = 7 < 14.85: no), level 4 must (199−111 =
		// 88 > 21, 199 > 151.5): the knee is at 4 and nowhere else.
		{"tight", []float64{99, 104, 109, 199}, []float64{101, 106, 111, 201}, KneeRange{First: 4, Last: 4}, true},
		// Wide: base at least 4.5 (the floor; 95−110 < 0), at most 25;
		// level 3 can (170−95 = 75 > 13.5, 170 > 135), must not; level 4
		// must not (150−170 < 0): from 3 to beyond the levels.
		{"wide", []float64{90, 95, 100, 150}, []float64{110, 115, 170, 250}, KneeRange{First: 3, Last: 4, Beyond: true}, true},
		// Level 4 high enough that every curve turns there: 300−170 =
		// 130 > 3 × 25 and 300 > 1.5 × 110.
		{"must", []float64{90, 95, 100, 300}, []float64{110, 115, 170, 320}, KneeRange{First: 3, Last: 4}, true},
		{"flat", []float64{99, 99, 99, 99}, []float64{101, 101, 101, 101}, KneeRange{}, false},
		{"no interval", []float64{99, 104, math.NaN(), 199}, []float64{101, 106, math.NaN(), 201}, KneeRange{}, false},
		{"two levels", []float64{99, 104}, []float64{101, 106}, KneeRange{}, false},
	} {
		got, ok := FindKneeRange(loads, tt.lo, tt.hi, KneeConfig{})
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: FindKneeRange = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	// The point knee of the tight curve is the range's.
	if k, ok, _ := FindKnee(loads, []float64{100, 105, 110, 200}, KneeConfig{}); !ok || k.Load != 4 {
		t.Errorf("FindKnee = %+v, %v; want the knee at 4", k, ok)
	}
}
