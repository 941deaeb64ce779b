// Package breakdown holds the typed per-level breakdowns of a run — the
// TTFT split by the server's own timing, the cluster's replicas, a
// gateway's priority classes, the cost per GPU — and the run-wide ones
// (a Pareto sweep's points, the shards of a split run, the levels'
// summaries), apart from how anything renders them (package report).
//
// A record-fed breakdown is an Accumulator: Add each of a level's records,
// then take its Breakdown. Register puts a kind in every Set, so a new
// breakdown is its own file here and its section in package report: the
// run feeds a Set and renders a Level without naming any kind.
//
// Accumulators are not safe for concurrent use (a run's one fan-out calls
// them in turn); Register is for package initialisation only.
package breakdown

import (
	"reflect"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Breakdown is one finished per-level breakdown.
type Breakdown interface {
	// Rank places the breakdown among a level's: lower first, the order
	// its block takes in every output.
	Rank() int
}

// The ranks of the built-in breakdowns, the order their blocks have
// always had: a new one takes a rank between or after them.
const (
	RankTTFTSplit = 10
	RankReplicas  = 20
	RankClasses   = 30
	RankCost      = 40
)

// Accumulator collects one breakdown from a level's records.
type Accumulator interface {
	// Add counts r; the accumulator decides which records it reads
	// (warm-ups, failures, records of no replica).
	Add(r *runlog.Record)
	// Breakdown is what the records added make; nil (an untyped nil)
	// when they gave it nothing to say.
	Breakdown() Breakdown
}

// Options are what an accumulator may need of the level's summary
// options.
type Options struct {
	// SLO is the level's SLO (zero: none).
	SLO stats.SLO
	// Percentiles are the summary's percentiles (nil: the defaults).
	Percentiles []float64
}

// kinds are the registered accumulators' constructors, in registration
// order (the Level they make is ordered by rank, not by this).
var kinds []func(Options) Accumulator

// Register adds a kind of record-fed breakdown to every Set made after it:
// call it from an init function, as image.RegisterFormat is called, so a
// breakdown's own file is all it takes to collect it.
func Register(newAccumulator func(Options) Accumulator) {
	kinds = append(kinds, newAccumulator)
}

// Set is a level's accumulators: one of each registered kind.
type Set []Accumulator

// NewSet starts one accumulator of each registered kind.
func NewSet(o Options) Set {
	s := make(Set, len(kinds))
	for i, k := range kinds {
		s[i] = k(o)
	}
	return s
}

// Add counts r in every accumulator.
func (s Set) Add(r *runlog.Record) {
	for _, a := range s {
		a.Add(r)
	}
}

// Level is the breakdowns the records made, ordered by rank.
func (s Set) Level() Level {
	var l Level
	for _, a := range s {
		l.Put(a.Breakdown())
	}
	return l
}

// Level is one level's finished breakdowns, ordered by rank, at most one
// of each type.
type Level []Breakdown

// Put adds b in its rank's place, replacing a breakdown of b's type; a nil
// b (untyped) adds nothing.
func (l *Level) Put(b Breakdown) {
	if b == nil {
		return
	}
	t := reflect.TypeOf(b)
	for i, have := range *l {
		if reflect.TypeOf(have) == t {
			(*l)[i] = b
			return
		}
	}
	at := len(*l)
	for i, have := range *l {
		if have.Rank() > b.Rank() {
			at = i
			break
		}
	}
	*l = append(*l, nil)
	copy((*l)[at+1:], (*l)[at:])
	(*l)[at] = b
}

// Get is l's breakdown of type T, the zero T (a nil pointer) when l has
// none.
func Get[T Breakdown](l Level) T {
	for _, b := range l {
		if t, ok := b.(T); ok {
			return t
		}
	}
	var zero T
	return zero
}
