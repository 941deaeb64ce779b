package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/stats"
)

func init() { RegisterSection("steady_state", SteadyTerminal, SteadyJSON, exampleSteady) }

// pText is a p-value to two decimals, or two significant digits below
// 0.01 (so 0.0041 does not read "0.00").
func pText(p float64) string {
	if p > 0 && p < 0.01 {
		return strconv.FormatFloat(p, 'g', 2, 64)
	}
	return strconv.FormatFloat(p, 'f', 2, 64)
}

// SteadyText is the level's steady-state sentence: where its warm-up
// transient ended and whether its latency drifted after it. A drifting
// level names no transient: MSER cuts a trend anywhere, so the cut says
// nothing of a warm-up there.
func SteadyText(s *breakdown.Steady) string {
	label := metricLabel(s.Metric)
	if s.Drifting {
		return fmt.Sprintf("NOT STEADY: %s %s %.0f %% over the last %d of %d requests (%+.1f %%/min, p %.3f), so its percentiles describe a moving target — overload, a leak, a cache filling — that a longer run would move",
			label, map[bool]string{true: "kept rising,", false: "kept falling,"}[s.Drift > 0], 100*math.Abs(s.Drift), s.N-s.TransientN, s.N, 100*s.DriftPerMin, s.DriftP)
	}
	var b strings.Builder
	if s.TransientN > 0 {
		fmt.Fprintf(&b, "warm-up transient: the first %d of %d requests (sent over %.1f s; MSER-5 on %s)", s.TransientN, s.N, s.TransientS, label)
	} else {
		fmt.Fprintf(&b, "no warm-up transient (MSER-5 on %s, %d requests)", label, s.N)
	}
	if math.Abs(s.Drift) >= 0.20 {
		// A large change that is not significant: say why it is no verdict.
		fmt.Fprintf(&b, "; no significant drift after it (%s %+.1f %% across the rest, but p %s: a drift needs p below 0.001)", label, 100*s.Drift, pText(s.DriftP))
	} else {
		fmt.Fprintf(&b, "; no drift after it (%s %+.1f %% across the rest, p %s)", label, 100*s.Drift, pText(s.DriftP))
	}
	if s.Trimmed {
		b.WriteString("; the transient is left out of these figures (--steady-state auto)")
	}
	return b.String()
}

// SteadyTerminal writes the steady-state line.
func SteadyTerminal(w io.Writer, s *breakdown.Steady) error {
	_, err := fmt.Fprintln(w, "Steady state: "+SteadyText(s))
	return err
}

// SteadyJSON is the level's "steady_state" object.
func SteadyJSON(s *breakdown.Steady) map[string]any {
	return map[string]any{"metric": s.Metric, "requests": s.N, "transient_requests": s.TransientN, "transient_s": s.TransientS,
		"drift": s.Drift, "drift_per_min": s.DriftPerMin, "drift_p": s.DriftP, "drifting": s.Drifting, "trimmed": s.Trimmed}
}

func exampleSteady(breakdown.Options) *breakdown.Steady {
	return &breakdown.Steady{SteadyState: stats.SteadyState{Metric: stats.MetricTTFT, N: 1, TransientN: 1, TransientS: 1, Drift: 1, DriftPerMin: 1, DriftP: 1, Drifting: true}}
}
