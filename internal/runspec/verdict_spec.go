package runspec

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// VerdictSpec is how a run is judged, as a user gives it.
type VerdictSpec struct {
	// FailIf are the gate's conditions (gate.Parse's syntax): the run
	// fails when one holds on its result JSON.
	FailIf []string
	// ReadingSpeedMs is the findings' reading speed, ms per token.
	ReadingSpeedMs float64
	// Repeats is how many times the run repeats its load (LoadSpec's):
	// above 1 the gate reads the repeats' result (RepeatsSchema).
	Repeats int
}

// Check is FailIf parsed (a *gate.ExprError when a condition does not
// parse) and checked, before the run, against the result JSON out saves
// of a single-level run summarised with so (ResultSchema): a key the
// result can never hold is an error of FailIf naming the setting that
// would add it, else a *GateKeyError with the known keys closest to it.
// Out's Metadata is checked whether or not there is a gate.
func (s VerdictSpec) Check(so stats.Options, out *OutputSpec) (gate.Gate, error) {
	g, metadata, err := s.parse(out)
	if err != nil || len(g.Conds) == 0 {
		return g, err
	}
	err = CheckGate(g, so, func(so stats.Options) (map[string]any, error) {
		if s.Repeats > 1 {
			return RepeatsSchema(so, metadata)
		}
		return ResultSchema(so, metadata, out.SaveDetailed)
	})
	if err != nil {
		return gate.Gate{}, gateKeyError(err)
	}
	return g, nil
}

// parse is FailIf parsed, the reading speed and out's Metadata checked.
func (s VerdictSpec) parse(out *OutputSpec) (gate.Gate, map[string]string, error) {
	g, err := gate.Parse(s.FailIf)
	if err != nil {
		return gate.Gate{}, nil, err
	}
	if !(s.ReadingSpeedMs > 0) {
		return gate.Gate{}, nil, setting.Errorf("ReadingSpeedMs", fmt.Sprint(s.ReadingSpeedMs), "want > 0")
	}
	metadata, err := out.Meta()
	if err != nil {
		return gate.Gate{}, nil, err
	}
	return g, metadata, nil
}

// CheckSweep is Check for a sweep: FailIf parsed and checked against
// the sweep result JSON out saves (SweepSchema), whose search part only a
// Search run's result holds.
func (s VerdictSpec) CheckSweep(so stats.Options, out *OutputSpec, search bool) (gate.Gate, error) {
	g, metadata, err := s.parse(out)
	if err != nil || len(g.Conds) == 0 {
		return g, err
	}
	schema := func(search bool) Schema {
		return func(so stats.Options) (map[string]any, error) {
			m, err := SweepSchema(so, metadata)
			if sw, ok := m["sweep"].(map[string]any); ok && !search {
				delete(sw, "search")
			}
			return m, err
		}
	}
	var alts []Schema
	if !search {
		alts = append(alts, schema(true))
	}
	return g, gateKeyError(CheckGate(g, so, schema(search), alts...), "Search")
}

// gateKeyError is CheckGate's err with what the run lacks as a setting's
// error of FailIf: alts name the setting that makes each alternative's
// run. A key nothing known would add stays a *GateKeyError.
func gateKeyError(err error, alts ...string) error {
	var ke *GateKeyError
	if !errors.As(err, &ke) || ke.Need == NeedNothing {
		return err
	}
	expr, what := strconv.Quote(ke.Expr), ke.Key+" "+ke.Problem
	switch ke.Need {
	case NeedAlternative:
		return setting.Errorf("FailIf", expr, "%s (only a %v run has it)", what, setting.Name(alts[ke.Alternative]))
	case NeedSLO:
		return setting.Errorf("FailIf", expr, "%s (only a run with an SLO has it: add %v)", what, setting.Name("Goodput"))
	case NeedMetric:
		return setting.Errorf("FailIf", expr, "%s (add its metric to %v)", what, setting.Name("PercentileMetrics"))
	default: // NeedPercentile
		return setting.Errorf("FailIf", expr, "%s (add %s to %v)", what, ke.Percentile, setting.Name("MetricPercentiles"))
	}
}
