package runspec

import (
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Overrides are the analysis settings given again for a run read back
// from its records (goodput report): each replaces the setting the run
// stored where its Set field says it was given, the others keep the run's;
// a run that stored no settings is judged with Stats and ReadingSpeedMs
// whole. (Named apart from setting.Given, which fields a user set.)
type Overrides struct {
	Stats          stats.Options
	ReadingSpeedMs float64
	// SLOSet, MetricsSet, PercentilesSet, BucketsSet, ConfidenceSet and
	// ReadingSpeedSet say which settings were given.
	SLOSet, MetricsSet, PercentilesSet, BucketsSet, ConfidenceSet, ReadingSpeedSet bool
}

// Settle returns the summary options and reading speed that judge the
// run of meta as it judged itself, but for the settings given. A run of
// whole answers keeps the metrics they measure (WholeAnswers: a streaming
// one given is a *NoStreamError).
func (g Overrides) Settle(meta *runlog.Meta) (stats.Options, float64, error) {
	so, speed := g.Stats, g.ReadingSpeedMs
	if meta != nil && meta.Analysis != nil {
		stored, storedSpeed, err := run.StoredOptions(meta)
		if err != nil {
			return so, 0, err
		}
		so = stored
		if g.SLOSet {
			so.SLO = g.Stats.SLO
		}
		if g.MetricsSet {
			so.Metrics = g.Stats.Metrics
		}
		if g.PercentilesSet {
			so.Percentiles = g.Stats.Percentiles
		}
		if g.BucketsSet {
			so.Buckets = g.Stats.Buckets
		}
		// A run from before intervals stored no level: it gets the one
		// given, the default included, like a run measured today.
		if g.ConfidenceSet || stored.Confidence == 0 {
			so.Confidence = g.Stats.Confidence
		}
		if storedSpeed > 0 && !g.ReadingSpeedSet {
			speed = storedSpeed
		}
	}
	if meta != nil && meta.NoStream {
		if err := WholeAnswers(&so, g.MetricsSet); err != nil {
			return so, 0, err
		}
	}
	return so, speed, nil
}
