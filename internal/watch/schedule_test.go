package watch

import (
	"testing"
	"time"
)

// TestScheduleSpread works the spread out by hand: three targets on a 30 s
// interval take turns at 0, 10 and 20 s into each interval, each plus a
// jitter below 10 s / 10 = 1 s, so they never bunch and never reorder.
func TestScheduleSpread(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	names := []string{"vendor-a", "vendor-b", "vendor-c"}
	const interval = 30 * time.Second
	wantBound := time.Second // min(30 s / (10 × 3), MaxJitter)
	var prev time.Time
	seen := map[time.Duration]bool{}
	for k := int64(0); k < 50; k++ {
		for i, name := range names {
			s := newSchedule(start, name, i, len(names), interval)
			if s.jitter != wantBound {
				t.Fatalf("target %d: jitter bound %v; want %v", i, s.jitter, wantBound)
			}
			due := s.due(k)
			base := start.Add(time.Duration(i)*10*time.Second + time.Duration(k)*interval)
			j := due.Sub(base)
			if j < 0 || j >= wantBound {
				t.Errorf("target %d probe %d due %v after its slot; want [0, %v)", i, k, j, wantBound)
			}
			if !due.After(prev) {
				t.Errorf("target %d probe %d due %v, not after the previous probe's %v", i, k, due, prev)
			}
			prev = due
			seen[j] = true
			if again := newSchedule(start, name, i, len(names), interval).due(k); !again.Equal(due) {
				t.Errorf("due(%d) not deterministic: %v then %v", k, due, again)
			}
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct jitters in 150 probes: not jittered", len(seen))
	}
}

func TestScheduleJitterBound(t *testing.T) {
	for _, tc := range []struct {
		n        int
		interval time.Duration
		want     time.Duration
	}{
		{1, 30 * time.Second, time.Second},             // capped at MaxJitter
		{3, 30 * time.Second, time.Second},             // 10 s spacing / 10
		{10, 30 * time.Second, 300 * time.Millisecond}, // 3 s spacing / 10
		{2, time.Second, 50 * time.Millisecond},
	} {
		if got := newSchedule(time.Time{}, "x", 0, tc.n, tc.interval).jitter; got != tc.want {
			t.Errorf("jitter bound of %d targets every %v = %v; want %v", tc.n, tc.interval, got, tc.want)
		}
	}
}

// TestScheduleNext: a probe that ran past its successors' due times skips
// them, counting them missed, and the next one keeps the original grid.
func TestScheduleNext(t *testing.T) {
	start := time.Unix(1000, 0)
	s := newSchedule(start, "a", 0, 1, 10*time.Second)
	for _, tc := range []struct {
		name       string
		last       int64
		ended      time.Duration // after start
		wantK      int64
		wantMissed int64
	}{
		{"quick", 0, time.Second, 1, 0},
		{"just before the next", 0, 9 * time.Second, 1, 0},
		{"two intervals", 0, 25 * time.Second, 3, 2},
		{"from later", 5, 51*time.Second + MaxJitter, 6, 0},
		{"far later", 2, 1000 * time.Second, 100, 97},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := start.Add(tc.ended)
			k, missed := s.next(tc.last, end)
			// The answer is the first probe due at or after the end.
			if s.due(k).Before(end) || (k > tc.last+1 && !s.due(k-1).Before(end)) {
				t.Errorf("next(%d, +%v) = %d (due +%v): not the first due after the end", tc.last, tc.ended, k, s.due(k).Sub(start))
			}
			if k != tc.wantK || missed != tc.wantMissed {
				t.Errorf("next(%d, +%v) = %d, %d missed; want %d, %d missed", tc.last, tc.ended, k, missed, tc.wantK, tc.wantMissed)
			}
		})
	}
}
