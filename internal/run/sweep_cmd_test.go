package run

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sweep"
)

func TestSweepLines(t *testing.T) {
	var b strings.Builder
	s := SweepOf(sweep.Plan{Axis: sweep.AxisRate, Auto: true, Criteria: sweep.Criteria{Attainment: 0.9}})
	plan, point := s.Lines(&b)
	plan(Plan{Axis: sweep.AxisRate, Search: true, Lo: 1, Hi: 8, Virtual: true, Probe: &runlog.CapacityProbe{Completed: 10, DurationS: 2, RequestThroughput: 5}})
	point(sweep.Point{Level: runlog.Level{RequestRate: 2}}, "", &Meets{Why: "ttft"})
	for _, want := range []string{
		"no levels given: measuring capacity first, then sweeping 20 %, 40 %",
		"capacity probe: 10 requests completed in 2.0 s, 5 requests/s",
		"bisecting rate (req/s) in [1, 8] for SLO attainment ≥ 90 % (virtual time)",
		"| misses: ttft",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Lines wrote %q; want %q in it", b.String(), want)
		}
	}
	if s.Fractions == nil || SweepOf(sweep.Plan{}).Fractions != nil {
		t.Errorf("SweepOf: fractions %v for an automatic plan; want AutoFractions, none otherwise", s.Fractions)
	}
}
