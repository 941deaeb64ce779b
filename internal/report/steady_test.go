package report

import (
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/stats"
)

// TestSteadyText words each case of the steady-state sentence: a drift
// (significant and large), a large change that is not significant (the
// all-at-once burst of the README's run: TTFT +132.9 %, p 0.0041), and a
// flat level.
func TestSteadyText(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    stats.SteadyState
		want string
	}{
		{"drifting", stats.SteadyState{Metric: "ttft", N: 400, TransientN: 100, Drift: 0.5, DriftPerMin: 0.25, DriftP: 0.0002, Drifting: true},
			"NOT STEADY: TTFT kept rising, 50 % over the last 300 of 400 requests (+25.0 %/min, p 0.000), so its percentiles describe a moving target — overload, a leak, a cache filling — that a longer run would move"},
		{"large, not significant", stats.SteadyState{Metric: "ttft", N: 200, Drift: 1.329, DriftP: 0.0041},
			"no warm-up transient (MSER-5 on TTFT, 200 requests); no significant drift after it (TTFT +132.9 % across the rest, but p 0.0041: a drift needs p below 0.001)"},
		{"flat", stats.SteadyState{Metric: "ttft", N: 60, TransientN: 30, TransientS: 3, Drift: 0, DriftP: 1},
			"warm-up transient: the first 30 of 60 requests (sent over 3.0 s; MSER-5 on TTFT); no drift after it (TTFT +0.0 % across the rest, p 1.00)"},
	} {
		if got := SteadyText(&breakdown.Steady{SteadyState: tt.s}); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
