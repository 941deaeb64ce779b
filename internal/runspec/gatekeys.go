package runspec

import (
	"errors"
	"regexp"
	"slices"
	"strconv"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/stats"
)

// Schema renders the result schema a run with these summary options
// writes (ResultSchema, SweepSchema), for a gate to be checked against
// before the run.
type Schema func(stats.Options) (map[string]any, error)

// GateNeed is what a run lacks for a gate's key to hold a number.
type GateNeed int

// What a run may lack.
const (
	// NeedNothing: nothing known would add the key; the KeyError's Near
	// lists the known keys closest to it.
	NeedNothing GateNeed = iota
	// NeedAlternative: the run of another schema has it (GateKeyError.
	// Alternative says which of CheckGate's).
	NeedAlternative
	// NeedSLO: only a run with an SLO has it.
	NeedSLO
	// NeedMetric: its metric is not among the summarised ones.
	NeedMetric
	// NeedPercentile: its percentile (GateKeyError.Percentile) is not
	// among the summarised ones.
	NeedPercentile
)

// GateKeyError is a gate's key that the run's result can never hold as a
// number, with what the run would need for it to.
type GateKeyError struct {
	*gate.KeyError
	Need GateNeed
	// Alternative is the index of the alternative schema that has the key
	// (NeedAlternative); Percentile the percentile asked for, as written
	// in the key (NeedPercentile).
	Alternative int
	Percentile  string
}

func (e *GateKeyError) Unwrap() error { return e.KeyError }

// percentileKey finds the percentile a metric key asks for ("p99.9" in
// "buckets.0.p99.9_ttft_ms").
var percentileKey = regexp.MustCompile(`(?:^|\.)p([0-9]+(?:\.[0-9]+)?)_[a-z0-9_]+_ms$`)

// CheckGate checks g against the result schema for so before the run: a
// key the result cannot hold as a number is a *GateKeyError saying what
// would make the result hold it, a run of one of alternatives (the last
// that has it), an SLO, its metric or its percentile, or else, with the
// known keys closest to it, nothing known. A schema that fails to render
// is its error.
func CheckGate(g gate.Gate, so stats.Options, schema Schema, alternatives ...Schema) error {
	valid := func(so stats.Options) bool {
		m, err := schema(so)
		return err == nil && g.Validate(m) == nil
	}
	m, err := schema(so)
	if err != nil {
		return err
	}
	err = g.Validate(m)
	var ke *gate.KeyError
	if !errors.As(err, &ke) {
		return err
	}
	for _, c := range g.Conds { // the checks below ask about the bad key alone
		if c.Expr == ke.Expr {
			g = gate.Gate{Conds: []gate.Cond{c}}
			break
		}
	}
	e := &GateKeyError{KeyError: ke}
	for i, alt := range alternatives {
		if m, err := alt(so); err == nil && g.Validate(m) == nil {
			e.Need, e.Alternative = NeedAlternative, i
		}
	}
	switch {
	case e.Need != NeedNothing:
	case so.SLO.IsZero() && valid(with(so, func(o *stats.Options) { o.SLO = AnySLO })):
		e.Need = NeedSLO
	case so.Metrics != nil && valid(with(so, func(o *stats.Options) { o.Metrics = nil })):
		e.Need = NeedMetric
	default:
		if sm := percentileKey.FindStringSubmatch(ke.Key); sm != nil {
			if p, err := strconv.ParseFloat(sm[1], 64); err == nil && p <= 100 && !slices.Contains(so.Percentiles, p) &&
				valid(with(so, func(o *stats.Options) { o.Percentiles = append(slices.Clone(o.Percentiles), p) })) {
				e.Need, e.Percentile = NeedPercentile, sm[1]
			}
		}
	}
	if e.Need != NeedNothing {
		ke.Near = nil
	}
	return e
}

// with returns a copy of so changed by f.
func with(so stats.Options, f func(*stats.Options)) stats.Options {
	if so.Percentiles == nil {
		so.Percentiles = stats.DefaultPercentiles
	}
	f(&so)
	return so
}
