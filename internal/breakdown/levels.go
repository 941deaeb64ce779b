package breakdown

import (
	"maps"
	"slices"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// LevelSummary is the summary of one load level of a run.
type LevelSummary struct {
	// Index is the level's index (Record.Level).
	Index int
	// Level describes the offered load (zero when the meta did not say).
	Level runlog.Level
	// Summary aggregates the level's records.
	Summary stats.Summary
}

// SummarizeLevels summarises recs per load level, in level order: one
// LevelSummary per level of meta (even one without records) and per other
// level index found in the records (records with a negative level last,
// together, with Index -1). meta may be nil; without a level of its own a
// run still has an (empty) level 0.
func SummarizeLevels(meta *runlog.Meta, recs []runlog.Record, o stats.Options) []LevelSummary {
	n := 0
	if meta != nil {
		n = len(meta.Levels)
	}
	// Level indexes come from files: only those that occur get an
	// accumulator, however large they are. Exact ones: a report has every
	// record and owes exact percentiles at any size.
	accs := map[int]*stats.Accumulator{}
	for i := range n {
		accs[i] = stats.NewExactAccumulator(o)
	}
	var stray *stats.Accumulator
	for i := range recs {
		l := recs[i].Level
		if l < 0 {
			if stray == nil {
				stray = stats.NewExactAccumulator(o)
			}
			stray.Add(&recs[i])
			continue
		}
		a := accs[l]
		if a == nil {
			a = stats.NewExactAccumulator(o)
			accs[l] = a
		}
		a.Add(&recs[i])
	}
	if len(accs) == 0 {
		accs[0] = stats.NewExactAccumulator(o)
	}
	out := make([]LevelSummary, 0, len(accs)+1)
	for _, i := range slices.Sorted(maps.Keys(accs)) {
		ls := LevelSummary{Index: i, Summary: accs[i].Summary()}
		if meta != nil && i < len(meta.Levels) {
			ls.Level = meta.Levels[i]
		}
		if ls.Summary.Level < 0 {
			ls.Summary.Level = i // empty level: still say which it is
		}
		out = append(out, ls)
	}
	if stray != nil {
		out = append(out, LevelSummary{Index: -1, Summary: stray.Summary()})
	}
	return out
}

// ServerSeries is what one scraped /metrics endpoint said during a run, for
// the HTML report's "Server side" section.
type ServerSeries struct {
	// Target names the endpoint: "server" for the target's own /metrics,
	// else the name it was given (--server-metrics NAME=URL, e.g. "dcgm").
	Target string
	// Snapshots are its scrapes in time order. Their TimeNS is nanoseconds
	// from the run's start, the clock of the records, so the charts share
	// the per-request timeline's axis. Empty draws nothing.
	Snapshots []servermetrics.Snapshot
}
