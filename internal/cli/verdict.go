package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/stats"
)

// verdictFlags are the findings and CI-gate flags of bench and sim (sweep
// registers its own, with sweep-level keys).
type verdictFlags struct {
	FailIf         []string
	ReadingSpeedMs float64
	gate           gate.Gate
}

func (v *verdictFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&v.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'p99_ttft_ms>500' or 'request_goodput<10' (repeatable)")
	registerReadingSpeed(fs, &v.ReadingSpeedMs)
}

// registerReadingSpeed adds --reading-speed-ms, the findings' reading
// speed, as every command that judges a run names it.
func registerReadingSpeed(fs *pflag.FlagSet, ms *float64) {
	fs.Float64Var(ms, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
}

// parse checks the flags before anything runs: a --fail-if key the result
// JSON of the run out describes can never hold as a number is a usage
// error naming the key and the known keys closest to it.
func (v *verdictFlags) parse(out *outputFlags, args []string) error {
	g, err := gate.Parse(v.FailIf)
	if err != nil {
		return err
	}
	if v.ReadingSpeedMs <= 0 {
		return usagef("--reading-speed-ms %v: want > 0", v.ReadingSpeedMs)
	}
	so, err := out.statsOptions(args)
	if err != nil {
		return err
	}
	md, err := out.Meta()
	if err != nil {
		return err
	}
	if len(g.Conds) > 0 {
		schema := func(so stats.Options) (map[string]any, error) { return run.ResultSchema(so, md, out.SaveDetailed) }
		if err := validateGate(g, so, schema); err != nil {
			return err
		}
	}
	v.gate = g
	return nil
}

// whatIf is another run's schema a bad key may belong to, with the hint
// that says how to get that run.
type whatIf struct {
	hint   string
	schema run.Schema
}

// validateGate checks g against the result schema for so
// (run.CheckGate) and turns a bad key into a usage error naming it and
// either the flag that would make the result hold it (--goodput,
// --percentile-metrics, --metric-percentiles, or one of ifs) or the
// closest known keys.
func validateGate(g gate.Gate, so stats.Options, schema run.Schema, ifs ...whatIf) error {
	alts := make([]run.Schema, len(ifs))
	for i, w := range ifs {
		alts[i] = w.schema
	}
	err := run.CheckGate(g, so, schema, alts...)
	var ke *run.GateKeyError
	if !errors.As(err, &ke) {
		return err
	}
	hint := ""
	switch ke.Need {
	case run.NeedAlternative:
		hint = " (" + ifs[ke.Alternative].hint + ")"
	case run.NeedSLO:
		hint = " (only a run with an SLO has it: add --goodput)"
	case run.NeedMetric:
		hint = " (add its metric to --percentile-metrics)"
	case run.NeedPercentile:
		hint = fmt.Sprintf(" (add %s to --metric-percentiles)", ke.Percentile)
	}
	return usagef("--fail-if %v%s", ke.KeyError, hint)
}

// validateSweepGate checks sweep's --fail-if against the sweep result's
// keys for the run's output flags, before any level runs. Flags that do not
// parse are left for the run to report.
func validateSweepGate(g gate.Gate, o *SweepOptions) error {
	if len(g.Conds) == 0 {
		return nil
	}
	so, err := o.out.statsOptions(o.args)
	if err != nil {
		return nil
	}
	md, err := o.out.Meta()
	if err != nil {
		return nil
	}
	schema := func(search bool) run.Schema {
		return func(so stats.Options) (map[string]any, error) {
			m, err := run.SweepSchema(so, md)
			if sw, ok := m["sweep"].(map[string]any); ok && !search {
				delete(sw, "search")
			}
			return m, err
		}
	}
	var ifs []whatIf
	if !o.Search {
		ifs = append(ifs, whatIf{"only a --search run has it", schema(true)})
	}
	return validateGate(g, so, schema(o.Search), ifs...)
}
