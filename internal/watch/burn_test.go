package watch

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestBurnRateByHand: an hour of probes every 30 s (120), objective 0.99.
// Three were bad: two 40 and 20 minutes ago, one 2 minutes ago.
//
//	5 m window: the last 10 probes, 1 bad:  (1 − 9/10) / 0.01    = 10
//	1 h window: all 120 probes, 3 bad:      (1 − 117/120) / 0.01 = 2.5
//
// so the fast window pages-level burns while the hour does not yet: the
// two-window alert waits for both.
func TestBurnRateByHand(t *testing.T) {
	now := time.Unix(100000, 0)
	b := NewBudget(0.99)
	for i := 119; i >= 0; i-- {
		at := now.Add(-time.Duration(i) * 30 * time.Second)
		ago := now.Sub(at)
		bad := ago == 40*time.Minute || ago == 20*time.Minute || ago == 2*time.Minute
		b.Add(at, !bad)
	}
	for _, tc := range []struct {
		w           time.Duration
		good, total int
		want        float64
	}{
		{5 * time.Minute, 9, 10, 10},
		{time.Hour, 117, 120, 2.5},
	} {
		rate, good, total, ok := b.Burn(now, tc.w)
		if !ok || good != tc.good || total != tc.total || !near(rate, tc.want) {
			t.Errorf("Burn(%v) = %v (%d/%d, ok %v); want %v (%d/%d)", tc.w, rate, good, total, ok, tc.want, tc.good, tc.total)
		}
	}
	// Ten minutes later with no probes: the 5 m window is empty (no rate),
	// the hour has lost its oldest 20 probes, none of them bad.
	later := now.Add(10 * time.Minute)
	if _, _, _, ok := b.Burn(later, 5*time.Minute); ok {
		t.Error("Burn over an empty window reported a rate")
	}
	if rate, good, total, _ := b.Burn(later, time.Hour); total != 100 || good != 97 || !near(rate, 3) {
		t.Errorf("Burn(1h) 10 m later = %v (%d/%d); want 3 (97/100)", rate, good, total)
	}
}

func TestBurnRate(t *testing.T) {
	for _, tc := range []struct {
		good, total int
		objective   float64
		want        float64
	}{
		{100, 100, 0.99, 0},
		{99, 100, 0.99, 1}, // exactly on budget
		{0, 10, 0.99, 100}, // everything bad: 1 / 0.01
		{9, 10, 0.9, 1},    // 10% bad against a 10% budget
		{1, 2, 0.999, 500}, // half bad against 0.1%
		{0, 0, 0.99, 0},    // nothing counted
		{856, 1000, 0.99, 14.4},
	} {
		if got := BurnRate(tc.good, tc.total, tc.objective); !near(got, tc.want) {
			t.Errorf("BurnRate(%d, %d, %v) = %v; want %v", tc.good, tc.total, tc.objective, got, tc.want)
		}
	}
}

// TestBudgetPrunes keeps memory bounded to the longest window.
func TestBudgetPrunes(t *testing.T) {
	b := NewBudget(0.99)
	t0 := time.Unix(0, 0)
	for i := range 10000 {
		b.Add(t0.Add(time.Duration(i)*time.Second), true)
	}
	if n := len(b.events); n > 2*3600 {
		t.Errorf("%d verdicts kept; want at most two hours' (7200)", n)
	}
}
