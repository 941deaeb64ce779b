package run

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/sweep"
)

// SweepOf is the sweep a checked plan describes; an automatic one sweeps
// AutoFractions of the capacity its probe measures.
func SweepOf(p sweep.Plan) *SweepConfig {
	s := &SweepConfig{Axis: p.Axis, Levels: p.Levels, KneeK: p.KneeK, Criteria: p.Criteria, Saturation: p.Saturation,
		Search: p.Search, Precision: p.Precision, Pareto: p.Pareto}
	if p.Auto {
		s.Fractions = AutoFractions
	}
	return s
}

// Lines are the hooks that print the sweep's progress to w: its plan
// (after the capacity probe), then each level's line as it finishes. An
// automatic sweep says so on w at once.
func (s *SweepConfig) Lines(w io.Writer) (plan func(Plan), point func(sweep.Point, string, *Meets)) {
	if s.Fractions != nil {
		parts := make([]string, len(s.Fractions))
		for i, f := range s.Fractions {
			parts[i] = strconv.FormatFloat(math.Round(1000*f)/10, 'f', -1, 64) + " %"
		}
		fmt.Fprintf(w, "goodput sweep: no levels given: measuring capacity first, then sweeping %s of it\n", strings.Join(parts, ", "))
	}
	plan = func(p Plan) {
		mode := "wall clock"
		if p.Virtual {
			mode = "virtual time"
		}
		if pr := p.Probe; pr != nil {
			fmt.Fprintf(w, "goodput sweep: capacity probe: %d requests completed in %.1f s, %.3g requests/s\n",
				pr.Completed, pr.DurationS, pr.RequestThroughput)
		}
		if p.Search {
			fmt.Fprintf(w, "goodput sweep: bisecting %s (%s) in [%g, %g] for SLO attainment ≥ %g %% (%s)\n",
				p.Axis, p.Axis.Unit(), p.Lo, p.Hi, 100*s.Criteria.Attainment, mode)
			return
		}
		fmt.Fprintf(w, "goodput sweep: %d levels of %s (%s), %s\n", len(p.Levels), p.Axis, p.Axis.Unit(), mode)
	}
	point = func(p sweep.Point, saturated string, meets *Meets) {
		line := report.SweepLevelLine(p, saturated)
		if meets != nil {
			verdict := "within SLO"
			if !meets.OK {
				verdict = "misses: " + meets.Why
			}
			line += " | " + verdict
		}
		fmt.Fprintln(w, line)
	}
	return plan, point
}
