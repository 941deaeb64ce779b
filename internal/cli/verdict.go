package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// verdictFlags are the findings and CI-gate flags of bench and sim (sweep
// registers its own, with sweep-level keys).
type verdictFlags struct {
	FailIf         []string
	ReadingSpeedMs float64
	gate           gate.Gate
	// flags is the set the flags were registered in, beside the output
	// flags (bench and sim register both in one group): --fail-if is
	// checked before the run against the keys the result will have, which
	// depend on --metric-percentiles, --percentile-metrics, --buckets,
	// --goodput, --metadata and --save-detailed.
	flags *pflag.FlagSet
}

func (v *verdictFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&v.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'p99_ttft_ms>500' or 'request_goodput<10' (repeatable)")
	fs.Float64Var(&v.ReadingSpeedMs, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
	v.flags = fs
}

// parse checks the flags before anything runs: a --fail-if key the result
// JSON can never hold as a number is a usage error naming the key and the
// known keys closest to it.
func (v *verdictFlags) parse() error {
	g, err := gate.Parse(v.FailIf)
	if err != nil {
		return flagError(err, "")
	}
	if v.ReadingSpeedMs <= 0 {
		return usagef("--reading-speed-ms %v: want > 0", v.ReadingSpeedMs)
	}
	if so, md, detail, ok := v.outputOptions(); ok && len(g.Conds) > 0 {
		if err := validateGate(g, so, func(so stats.Options) (map[string]any, error) { return benchSchema(so, md, detail) }); err != nil {
			return err
		}
	}
	v.gate = g
	return nil
}

// outputOptions reads the output flags registered beside the verdict flags;
// ok is false when they are not there or do not parse (the run reports
// that itself), and --fail-if then goes unchecked until the run ends.
func (v *verdictFlags) outputOptions() (so stats.Options, metadata map[string]string, detailed, ok bool) {
	fs := v.flags
	if fs == nil || fs.Lookup("metric-percentiles") == nil || fs.Lookup("percentile-metrics") == nil || fs.Lookup("buckets") == nil {
		return so, nil, false, false
	}
	var err error
	if so.Percentiles, err = stats.ParsePercentiles(fs.Lookup("metric-percentiles").Value.String()); err != nil {
		return so, nil, false, false
	}
	if so.Metrics, err = stats.ParseMetrics(fs.Lookup("percentile-metrics").Value.String()); err != nil {
		return so, nil, false, false
	}
	if so.Buckets, err = stats.ParseBuckets(fs.Lookup("buckets").Value.String()); err != nil {
		return so, nil, false, false
	}
	if goodput, err := fs.GetStringArray("goodput"); err == nil && len(goodput) > 0 {
		so.SLO = placeholderSLO // its constraints' names do not change the keys
	}
	if kvs, err := fs.GetStringArray("metadata"); err == nil {
		if metadata, err = parseKV("--metadata", kvs); err != nil {
			return so, nil, false, false
		}
	}
	detailed, _ = fs.GetBool("save-detailed")
	return so, metadata, detailed, true
}

// placeholderSLO stands for any SLO in a schema: the result's keys depend
// on whether there is one, not on its terms.
var placeholderSLO = stats.SLO{TTFT: time.Second}

// schemaMeta is the meta of a schema result: a capped open-loop level (so
// no load key is null), a start time, the run's metadata and a simulated
// engine (its settings are opened to any key).
func schemaMeta(metadata map[string]string) *runlog.Meta {
	return &runlog.Meta{
		Started:   time.Unix(0, 0).UTC(),
		Levels:    []runlog.Level{{RequestRate: 1, Burstiness: 1, MaxConcurrency: 1, NumPrompts: 1, Label: "x"}},
		Simulated: map[string]any{"engine": ""},
		Metadata:  metadata,
	}
}

// schemaSummary is an empty run summarised with so, with a failure of
// every class, so every key a result can hold is there.
func schemaSummary(so stats.Options) stats.Summary {
	s := stats.Summarize(nil, so)
	s.Level = 0
	for _, c := range runlog.ErrorClasses {
		s.Failures[c] = 1
	}
	return s
}

// schemaFindings is one finding, whose evidence opens to any key.
func schemaFindings() []findings.Finding {
	return []findings.Finding{{Evidence: map[string]any{}}}
}

// openSchema marks the parts of a decoded result whose keys are known only
// at run time: each finding's evidence and the simulated engine's settings.
func openSchema(m map[string]any) {
	if fs, ok := m["findings"].([]any); ok {
		for _, f := range fs {
			if f, ok := f.(map[string]any); ok {
				f["evidence"] = gate.Any
			}
		}
	}
	if c, ok := m["conditions"].(map[string]any); ok {
		if _, ok := c["simulated"]; ok {
			c["simulated"] = gate.Any
		}
	}
	if ls, ok := m["levels"].([]any); ok {
		for _, l := range ls {
			if l, ok := l.(map[string]any); ok {
				openSchema(l)
			}
		}
	}
}

// schemaResult is a run of one schema level as a run.Result: every
// optional key present (a tokenizer, a label, an interruption, a ramp).
func schemaResult(so stats.Options, metadata map[string]string) *run.Result {
	meta := schemaMeta(metadata)
	lv := meta.Levels[0]
	lv.Ramp = &runlog.Ramp{Strategy: "linear", StartRPS: 1, EndRPS: 2}
	return &run.Result{Meta: meta, Levels: []run.LevelResult{{Level: lv, Summary: schemaSummary(so), Findings: schemaFindings()}},
		Findings: schemaFindings(), TokenizerID: "x", Interrupted: true, RecordsPath: "x"}
}

// benchSchema is the result JSON bench and sim write for a run summarised
// with so, decoded: run.Result.JSON of schemaResult (a superset: a key
// some flag adds passes here and is judged after the run;
// TestSchemaCoversResult catches one missing) and, with --save-detailed,
// vLLM's per-request lists of one request.
func benchSchema(so stats.Options, metadata map[string]string, detail bool) (map[string]any, error) {
	res := schemaResult(so, metadata)
	if detail {
		// One request of two tokens: every list has an element, itls a gap.
		res.Records = []runlog.Record{{Chunks: []runlog.Chunk{{T: 1, Tokens: 1, Visible: true}, {T: 2, Tokens: 1, Visible: true}}, End: 2, Status: 200}}
	}
	b, err := res.JSON(run.JSONOptions{Label: "x", Detailed: detail})
	if err != nil {
		return nil, err
	}
	return decodeSchema(b)
}

// sweepSchema is the result JSON sweep writes, decoded: the JSON of one
// schema level with every optional part of the verdict present (a knee, a
// search, a violation, a capacity probe), merged with the knee-less
// rendering's knee_note.
func sweepSchema(so stats.Options, metadata map[string]string) (map[string]any, error) {
	if so.SLO.IsZero() {
		so.SLO = placeholderSLO // a sweep always ranks goodput by an SLO
	}
	res := schemaResult(so, metadata)
	p := sweep.Point{Summary: res.Levels[0].Summary, Level: runlog.Level{RequestRate: 1, MaxConcurrency: 1, Label: "x"}}
	pk := &sweep.Peak{}
	res.Sweep = &run.SweepResult{Result: sweep.Result{Points: []sweep.Point{p}, Saturated: []string{""}, Knee: &sweep.Knee{},
		ThroughputPeak: pk, GoodputPeak: pk, MaxWithinSLO: pk, Violation: &sweep.Violation{}},
		Search: &sweep.SearchResult{}, Probe: &runlog.CapacityProbe{Fractions: []float64{1}}}
	render := func() (map[string]any, error) {
		b, err := res.JSON(run.JSONOptions{})
		if err != nil {
			return nil, err
		}
		return decodeSchema(b)
	}
	m, err := render()
	if err != nil {
		return nil, err
	}
	res.Sweep.Knee = nil
	noKnee, err := render()
	if err != nil {
		return nil, err
	}
	if sw, ok := m["sweep"].(map[string]any); ok {
		if nk, ok := noKnee["sweep"].(map[string]any); ok {
			for k, v := range nk {
				if _, have := sw[k]; !have || sw[k] == nil {
					sw[k] = v
				}
			}
		}
	}
	return m, nil
}

func decodeSchema(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("--fail-if: result schema: %w", err)
	}
	openSchema(m)
	return m, nil
}

// percentileKey finds the percentile a metric key asks for ("p99.9" in
// "buckets.0.p99.9_ttft_ms").
var percentileKey = regexp.MustCompile(`(?:^|\.)p([0-9]+(?:\.[0-9]+)?)_[a-z0-9_]+_ms$`)

// whatIf is another run's schema a bad key may belong to, with the hint
// that says how to get that run.
type whatIf struct {
	hint   string
	schema func(stats.Options) (map[string]any, error)
}

// validateGate checks g against the result schema for so and turns a bad
// key into a usage error naming it and either the flag that would make the
// result hold it (--goodput, --percentile-metrics, --metric-percentiles,
// or one of ifs) or the closest known keys.
func validateGate(g gate.Gate, so stats.Options, schema func(stats.Options) (map[string]any, error), ifs ...whatIf) error {
	valid := func(so stats.Options) (bool, error) {
		m, err := schema(so)
		if err != nil {
			return false, err
		}
		return g.Validate(m) == nil, nil
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
	for _, c := range g.Conds { // the hints below ask about the bad key alone
		if c.Expr == ke.Expr {
			g = gate.Gate{Conds: []gate.Cond{c}}
			break
		}
	}
	var hint string
	for _, w := range ifs {
		if m, err := w.schema(so); err == nil && g.Validate(m) == nil {
			hint = " (" + w.hint + ")"
		}
	}
	switch {
	case hint != "":
	case so.SLO.IsZero() && must(valid(with(so, func(o *stats.Options) { o.SLO = placeholderSLO }))):
		hint = " (only a run with an SLO has it: add --goodput)"
	case so.Metrics != nil && must(valid(with(so, func(o *stats.Options) { o.Metrics = nil }))):
		hint = " (add its metric to --percentile-metrics)"
	default:
		if sm := percentileKey.FindStringSubmatch(ke.Key); sm != nil {
			if p, err := strconv.ParseFloat(sm[1], 64); err == nil && p <= 100 && !slices.Contains(so.Percentiles, p) &&
				must(valid(with(so, func(o *stats.Options) { o.Percentiles = append(slices.Clone(o.Percentiles), p) }))) {
				hint = fmt.Sprintf(" (add %s to --metric-percentiles)", sm[1])
			}
		}
	}
	if hint != "" {
		ke.Near = nil
	}
	return usagef("%v%s", flagError(ke, ""), hint)
}

// with returns a copy of so changed by f.
func with(so stats.Options, f func(*stats.Options)) stats.Options {
	if so.Percentiles == nil {
		so.Percentiles = stats.DefaultPercentiles
	}
	f(&so)
	return so
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
	md, err := parseKV("--metadata", o.out.Metadata)
	if err != nil {
		return nil
	}
	schema := func(search bool) func(stats.Options) (map[string]any, error) {
		return func(so stats.Options) (map[string]any, error) {
			m, err := sweepSchema(so, md)
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

// must reads a validity check whose schema failed to render as false.
func must(ok bool, err error) bool { return ok && err == nil }
