package run

import (
	"runtime"
	"testing"
	"time"
)

func TestProcessCPU(t *testing.T) {
	a, ok := processCPU()
	if !ok {
		t.Skip("no /proc/self/stat on this system")
	}
	// Burn CPU until the clock-tick counter moves (10 ms ticks).
	x := 0
	var b time.Duration
	for i := 0; i < 1e9; i++ {
		x += i
		if i%1_000_000 == 0 {
			if b, _ = processCPU(); b > a {
				break
			}
		}
	}
	if b <= a {
		t.Errorf("processCPU did not advance: %v then %v", a, b)
	}
	tests := []struct {
		name string
		a, b time.Duration
		wall time.Duration
		ok   bool
		want float64
	}{
		{"unknown", 0, time.Second, 2 * time.Second, false, 0},
		{"too short", 0, 100 * time.Millisecond, 500 * time.Millisecond, true, 0},
		// 2 s of CPU over 4 s of wall on NumCPU cores.
		{"share", time.Second, 3 * time.Second, 4 * time.Second, true, 0.5 / float64(runtime.NumCPU())},
	}
	for _, tt := range tests {
		if got := cpuShare(tt.a, tt.b, tt.ok, tt.ok, tt.wall); got != tt.want {
			t.Errorf("%s: cpuShare = %v; want %v", tt.name, got, tt.want)
		}
	}
}
