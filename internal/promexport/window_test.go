package promexport

import (
	"testing"

	"github.com/goodput/goodput/internal/stats"
)

func TestWindows(t *testing.T) {
	const s = int64(1e9)
	w := newWindows(stats.SLO{}, func() int64 { return 0 }) // created at 0
	w.add(s/2, true)                                        // second 0
	w.add(30*s, false)                                      // second 30
	w.add(90*s+1, true)                                     // second 90
	w.add(-s/2, true)                                       // second -1: before the start, still counted by its second
	tests := []struct {
		name              string
		at, span          int64
		wantTotal, wantOK int64
		wantDur           float64
	}{
		// 1m at 100 s: seconds 41…100 hold only the request of second
		// 90; the window began at 41 s: 59 s long.
		{"1m at 100 s", 100 * s, 60, 1, 1, 59},
		// 5m at 100 s: seconds -199…100 hold all four, but time begins
		// at the start (0): 100 s long.
		{"5m at 100 s", 100 * s, 300, 4, 3, 100},
		// 1m at 400 s: seconds 341…400: empty.
		{"1m at 400 s", 400 * s, 60, 0, 0, 59},
		// 5m at 399.5 s: seconds 100…399: empty (second 90 fell out).
		{"5m at 399.5 s", 399*s + s/2, 300, 0, 0, 299.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total, good, dur := w.window(tt.at, tt.span)
			if total != tt.wantTotal || good != tt.wantOK || dur != tt.wantDur {
				t.Errorf("window(%d, %d) = %d, %d, %g; want %d, %d, %g", tt.at, tt.span, total, good, dur, tt.wantTotal, tt.wantOK, tt.wantDur)
			}
		})
	}
	// Second 300 shares second 0's slot: the old count is replaced, not
	// added to.
	w.add(300*s, false)
	if total, good, _ := w.window(300*s, 300); total != 3 || good != 1 {
		// Seconds 1…300: second 30 (bad), 90 (good), 300 (bad); the
		// good request of second -1 sat in slot 299 and is out of range.
		t.Errorf("window(300 s, 300) = %d total, %d good; want 3, 1", total, good)
	}
}
