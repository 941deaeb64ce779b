package runspec

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/stats"
)

// TestWholeAnswers: of the default metrics only e2el and response stay;
// an SLO on TTFT, or TPOT asked for explicitly, is refused by name; asked
// for without intent (defaulted), TPOT is dropped silently, and a list of
// streaming metrics only falls back to e2el.
func TestWholeAnswers(t *testing.T) {
	so := stats.Options{}
	if err := WholeAnswers(&so, false); err != nil {
		t.Fatal(err)
	}
	for _, m := range so.Metrics {
		if m == stats.MetricTTFT || m == stats.MetricTPOT || m == stats.MetricITL || m == stats.MetricTTP {
			t.Errorf("kept streaming metric %s in %q", m, so.Metrics)
		}
	}
	var ne *NoStreamError
	slo := stats.Options{SLO: stats.SLO{TTFT: time.Second}}
	if err := WholeAnswers(&slo, false); !errors.As(err, &ne) || !ne.SLO || ne.Metric != stats.MetricTTFT {
		t.Errorf("SLO on ttft: %v", err)
	}
	asked := stats.Options{Metrics: []string{stats.MetricE2E, stats.MetricTPOT}}
	if err := WholeAnswers(&asked, true); !errors.As(err, &ne) || ne.SLO || ne.Metric != stats.MetricTPOT {
		t.Errorf("tpot asked: %v", err)
	}
	only := stats.Options{Metrics: []string{stats.MetricTPOT}}
	if err := WholeAnswers(&only, false); err != nil || !slices.Equal(only.Metrics, []string{stats.MetricE2E}) {
		t.Errorf("tpot defaulted: %v, metrics %q; want e2el", err, only.Metrics)
	}
}
