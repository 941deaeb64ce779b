package runspec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/servermetrics"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// The result schemas: every key a result JSON can hold for given summary
// options, decoded, from the same JSON code a run writes with — so that a
// --fail-if gate on a key no result will ever hold is refused before the
// run, not after an hour of it.

// AnySLO stands for any SLO in a schema: the result's keys depend
// on whether there is one, not on its terms.
var AnySLO = stats.SLO{TTFT: time.Second}

// schemaMeta is the meta of a schema result: a capped open-loop level (so
// no load key is null), a start time, the run's metadata and a simulated
// engine (its settings are opened to any key).
func schemaMeta(metadata map[string]string) *runlog.Meta {
	return &runlog.Meta{
		Started:   time.Unix(0, 0).UTC(),
		Levels:    []runlog.Level{{RequestRate: 1, Burstiness: 1, MaxConcurrency: 1, NumPrompts: 1, Label: "x"}},
		Simulated: runlog.Engine{Model: "engine"},
		Metadata:  metadata,
	}
}

// schemaSummary is an empty run summarised with so, with a failure of
// every class and, when so asks for intervals, an interval on every figure
// that can carry one, so every key a result can hold is there with its
// shape ("p99_ttft_ms_ci.1" is a key).
func schemaSummary(so stats.Options) stats.Summary {
	s := stats.Summarize(nil, so)
	s.Level = 0
	for _, c := range runlog.ErrorClasses {
		s.Failures[c] = 1
	}
	if lv := s.Options.Confidence; lv > 0 {
		iv := stats.Interval{Level: lv}
		ms := func(m []stats.MetricSummary) {
			for i := range m {
				m[i].MeanCI, m[i].MedianCI = iv, iv
				for j := range m[i].Percentiles {
					m[i].Percentiles[j].CI = iv
				}
			}
		}
		ms(s.Metrics)
		for i := range s.Buckets {
			ms(s.Buckets[i].Metrics)
			s.Buckets[i].AttainmentCI = iv
		}
		s.RequestThroughputCI, s.OutputThroughputCI = iv, iv
		s.SLO.GoodputCI, s.SLO.AttainmentCI = iv, iv
		for i := range s.SLO.Constraints {
			s.SLO.Constraints[i].AttainmentCI = iv
		}
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
	return &run.Result{Meta: meta, Levels: []run.LevelResult{{Level: lv, Summary: schemaSummary(so), Findings: schemaFindings(),
		Server: []run.ServerWindow{{Target: "server", Window: schemaServerWindow()}}, Breakdowns: report.SectionExamples(breakdown.Options{Percentiles: so.Percentiles})}},
		Findings: schemaFindings(), TokenizerID: "x", Interrupted: true, RecordsPath: "x", Sessions: schemaSessions(so)}
}

// schemaSessions is one session of one turn under a session SLO, with an
// interval on every figure that can carry one when so asks for them, so
// every "sessions" key is there with its shape.
func schemaSessions(so stats.Options) *stats.SessionSummary {
	one := stats.SummarizeValues("x", so.Percentiles, []float64{1})
	iv := stats.Interval{Level: so.Confidence}
	if so.Confidence > 0 {
		one.MeanCI, one.MedianCI = iv, iv
		for j := range one.Percentiles {
			one.Percentiles[j].CI = iv
		}
	}
	s := &stats.SessionSummary{Sessions: 1, Completed: 1, Turns: []stats.TurnSummary{{Turn: 1, N: 1, TTFT: one, TTP: one, E2E: one, Prompt: one}},
		Duration: one, TurnTTFT: one, TurnTTP: one, TurnsPerSession: one, SLO: stats.SessionSLO{TTP: time.Second}, Confidence: so.Confidence}
	if so.Confidence > 0 {
		s.AttainmentCI, s.GoodputCI, s.TTFTPer1KHistoryCI = iv, iv, iv
	}
	return s
}

// schemaServerWindow is a server window holding every figure of the
// vocabulary (one GPU included), so the schema has every server key.
func schemaServerWindow() servermetrics.Window {
	w := servermetrics.Window{StartNS: 0, EndNS: 1e9, Scrapes: 2, Kind: servermetrics.KindVLLM,
		Increase: map[servermetrics.Name]float64{}, Rate: map[servermetrics.Name]float64{}, Resets: map[servermetrics.Name]int{},
		Gauges: map[servermetrics.Name]servermetrics.GaugeStats{}, Histograms: map[servermetrics.Name]servermetrics.HistogramStats{},
		GPUs: map[string]map[servermetrics.Name]servermetrics.GaugeStats{"0": {}}, PrefixHitRate: 0.5,
		PromptTokensPerSec: 1, GenerationTokensPerSec: 1}
	one := servermetrics.GaugeStats{N: 2, Mean: 1, Min: 1, Max: 1, Last: 1}
	for _, d := range servermetrics.Vocabulary() {
		switch d.Type {
		case servermetrics.TypeCounter:
			w.Increase[d.Name], w.Rate[d.Name], w.Resets[d.Name] = 1, 1, 1
		case servermetrics.TypeGauge:
			w.Gauges[d.Name] = one
			w.GPUs["0"][d.Name] = one
		case servermetrics.TypeHistogram:
			w.Histograms[d.Name] = servermetrics.HistogramStats{Count: 1, Mean: 1, P50: 1, P90: 1, P99: 1}
		}
	}
	return w
}

// ResultSchema is the result JSON a single-level run writes for a run summarised
// with so, decoded: run.Result.JSON of schemaResult (a superset: a key
// some flag adds passes here and is judged after the run;
// TestSchemaCoversResult catches one missing) and, with --save-detailed,
// vLLM's per-request lists of one request.
func ResultSchema(so stats.Options, metadata map[string]string, detail bool) (map[string]any, error) {
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

// RepeatsSchema is the result JSON a run of repeats (--repeats) writes,
// decoded: two schema levels, and the repeats' spread of two runs that
// measured every figure, so each figure's single-run key (its mean over
// the repeats) and, with intervals, its "_ci" are there.
func RepeatsSchema(so stats.Options, metadata map[string]string) (map[string]any, error) {
	res := schemaResult(so, metadata)
	second := res.Levels[0]
	res.Levels[0].Level.Repeat, second.Level.Repeat = 1, 2
	res.Levels = append(res.Levels, second)
	// Two requests of two tokens: every metric has a sample.
	two := []runlog.Record{
		{Sent: 0, Chunks: []runlog.Chunk{{T: 1, Tokens: 1, Visible: true}, {T: 2, Tokens: 1, Visible: true}}, End: 2, Status: 200},
		{Sent: 1, Chunks: []runlog.Chunk{{T: 2, Tokens: 1, Visible: true}, {T: 3, Tokens: 1, Visible: true}}, End: 3, Status: 200},
	}
	sum := stats.Summarize(two, so)
	res.Repeats = stats.RepeatSpread([]stats.Summary{sum, sum}, cmp.Or(so.Confidence, stats.DefaultConfidence))
	b, err := res.JSON(run.JSONOptions{})
	if err != nil {
		return nil, err
	}
	return decodeSchema(b)
}

// SweepSchema is the result JSON a sweep writes, decoded: the JSON of one
// schema level with every optional part of the verdict present (a knee, a
// search, a violation, a capacity probe), merged with the knee-less
// rendering's knee_note.
func SweepSchema(so stats.Options, metadata map[string]string) (map[string]any, error) {
	if so.SLO.IsZero() {
		so.SLO = AnySLO // a sweep always ranks goodput by an SLO
	}
	res := schemaResult(so, metadata)
	p := sweep.Point{Summary: res.Levels[0].Summary, Level: runlog.Level{RequestRate: 1, MaxConcurrency: 1, Label: "x"}, Offered: 1}
	res.Levels[0].OfferedRate = 1 // a measured rate, as every open-loop level has
	pk := &sweep.Peak{}
	res.Sweep = &run.SweepResult{Result: sweep.Result{Points: []sweep.Point{p}, Saturated: []string{""}, Knee: &sweep.Knee{Range: &sweep.KneeRange{}},
		ThroughputPeak: pk, GoodputPeak: pk, MaxWithinSLO: pk, Recommended: pk, Violation: &sweep.Violation{}},
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
		return nil, fmt.Errorf("result schema: %w", err)
	}
	openSchema(m)
	return m, nil
}
