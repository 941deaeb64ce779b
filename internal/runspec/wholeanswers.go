package runspec

import (
	"slices"
	"time"

	"github.com/goodput/goodput/internal/stats"
)

// NoStreamError is a summary setting that asks for a streaming metric
// (TTFT, TPOT, ITL, TTP) of a run of whole answers, which measures E2E
// (and response time) only.
type NoStreamError struct {
	// Metric is the metric asked for; SLO says it was asked as an SLO
	// term, else as a summarised metric.
	Metric string
	SLO    bool
}

func (e *NoStreamError) Error() string {
	if e.SLO {
		return "an SLO on " + e.Metric + ": whole answers measure E2E only"
	}
	return e.Metric + ": whole answers measure E2E only"
}

// WholeAnswers fits so to a run of whole answers, not streamed: the
// streaming metrics are dropped rather than reported from the one chunk a
// whole answer makes (TTFT would equal E2E, TPOT be 0). An SLO on one of
// them, or, when explicit (the metrics were asked for, not defaulted), one
// of them among so.Metrics, is a *NoStreamError.
func WholeAnswers(so *stats.Options, explicit bool) error {
	streaming := []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricITL, stats.MetricTTP}
	for i, limit := range []time.Duration{so.SLO.TTFT, so.SLO.TPOT, so.SLO.TTP} {
		if limit > 0 {
			return &NoStreamError{Metric: []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricTTP}[i], SLO: true}
		}
	}
	ms := so.Metrics
	if ms == nil {
		ms = stats.AllMetrics
	}
	var kept []string
	for _, m := range ms {
		switch {
		case !slices.Contains(streaming, m):
			kept = append(kept, m)
		case explicit:
			return &NoStreamError{Metric: m}
		}
	}
	if len(kept) == 0 {
		kept = []string{stats.MetricE2E}
	}
	so.Metrics = kept
	return nil
}
