package runspec

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// TestOverridesSettle: the stored SLO (ttft 2 s), percentiles (50, 99) and
// reading speed (40 ms) stand unless given; a given SLO (ttft 500 ms)
// replaces only the SLO; a run that stored nothing takes what is given
// whole; a given TPOT metric of whole answers is refused.
func TestOverridesSettle(t *testing.T) {
	meta := &runlog.Meta{Analysis: &runlog.Analysis{SLO: "ttft:2000", Percentiles: []float64{50, 99}, ReadingSpeedMs: 40}}
	given := Overrides{Stats: stats.Options{SLO: stats.SLO{TTFT: 500 * time.Millisecond}, Percentiles: []float64{90}}, ReadingSpeedMs: 25}
	so, speed, err := given.Settle(meta)
	if err != nil || so.SLO.TTFT != 2*time.Second || !slices.Equal(so.Percentiles, []float64{50, 99}) || speed != 40 {
		t.Errorf("nothing set: %+v, %v, %v", so, speed, err)
	}
	given.SLOSet, given.ReadingSpeedSet = true, true
	so, speed, err = given.Settle(meta)
	if err != nil || so.SLO.TTFT != 500*time.Millisecond || !slices.Equal(so.Percentiles, []float64{50, 99}) || speed != 25 {
		t.Errorf("SLO and speed set: %+v, %v, %v", so, speed, err)
	}
	so, speed, err = given.Settle(&runlog.Meta{})
	if err != nil || !slices.Equal(so.Percentiles, []float64{90}) || speed != 25 {
		t.Errorf("nothing stored: %+v, %v, %v", so, speed, err)
	}
	whole := Overrides{Stats: stats.Options{Metrics: []string{stats.MetricTPOT}}, MetricsSet: true}
	var ne *NoStreamError
	if _, _, err := whole.Settle(&runlog.Meta{NoStream: true}); !errors.As(err, &ne) || ne.Metric != stats.MetricTPOT {
		t.Errorf("tpot of whole answers: %v", err)
	}
}

func TestLevelRules(t *testing.T) {
	so := stats.Options{Confidence: 0.95}
	r, err := (&LoadSpec{TargetPrecision: "p99_ttft:5%", Repeats: 3, SteadyState: "auto"}).Rules(so)
	if err != nil || len(r.Precision) != 1 || r.Repeats != 3 || !r.SteadyTrim {
		t.Errorf("rules %+v, %v; want one target, 3 repeats, the transient trimmed", r, err)
	}
	for _, bad := range []LoadSpec{{Repeats: 0}, {Repeats: 1, SteadyState: "maybe"}, {Repeats: 1, TargetPrecision: "p99_ttft"}} {
		if _, err := bad.Rules(so); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
