package run

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// The outputs of a Result, each rendered by package report from the same
// Result: the terminal summary, the result JSON and the HTML report. A run
// and a report of its records render alike.

// TerminalOptions say how the terminal summary looks.
type TerminalOptions struct {
	report.TermOptions
	// LevelReports prints every level's full summary before a sweep's
	// verdict; Headed heads each by its load and follows it with its
	// findings (a report of the records).
	LevelReports, Headed bool
}

// Terminal prints the run: one level's summary and findings; several
// levels' summaries, each headed by its load; and a sweep's curve, knee,
// peaks and verdict with the findings of the level they speak for.
func (r *Result) Terminal(w io.Writer, o TerminalOptions) error {
	switch {
	case r.Sweep != nil:
		if o.LevelReports || o.Headed {
			if err := r.levelBlocks(w, o.TermOptions, o.Headed); err != nil {
				return err
			}
			if o.Headed {
				fmt.Fprintln(w)
			}
		}
		if r.Pareto != nil {
			// Concurrencies × length pairs are no one curve: no knee, no
			// peaks; the frontier is the verdict.
			return report.ParetoTerminal(w, r.Pareto, r.ParetoGPUs)
		}
		if err := report.SweepTerminal(w, &r.Sweep.Result, r.Sweep.Search, r.Sweep.Criteria); err != nil {
			return err
		}
		if p, what := r.Sweep.operatingPoint(); p != nil && p.Index >= 0 && p.Index < len(r.Levels) && r.Levels[p.Index].Cost() != nil {
			// What the operating point costs: the figure a capacity plan
			// multiplies.
			fmt.Fprintf(w, "At the %s (level %d, %s):\n", what, r.Levels[p.Index].Index, r.Levels[p.Index].Level.Label)
			if err := report.CostTerminal(w, r.Levels[p.Index].Cost()); err != nil {
				return err
			}
		}
		if err := report.ShardsTerminal(w, r.Shards); err != nil {
			return err
		}
		if f := r.Focus; f >= 0 && f < len(r.Sweep.Points) {
			p := r.Sweep.Points[f]
			fmt.Fprintf(w, "Findings for level %d (%s) and the sweep:\n", p.Index, p.Level.Label)
		}
		return report.FindingsTerminal(w, r.Findings)
	case len(r.Levels) == 1:
		if err := report.Terminal(w, &r.Levels[0].Summary, r.Meta, o.TermOptions); err != nil {
			return err
		}
		if err := r.Levels[0].blocksTerminal(w); err != nil {
			return err
		}
		if err := report.SessionsTerminal(w, r.Sessions, o.TermOptions); err != nil {
			return err
		}
		if err := report.ShardsTerminal(w, r.Shards); err != nil {
			return err
		}
		return report.FindingsTerminal(w, r.Findings)
	}
	if err := r.levelBlocks(w, o.TermOptions, true); err != nil {
		return err
	}
	if err := report.RepeatsTerminal(w, r.Repeats, r.repeatLevel()); err != nil {
		return err
	}
	if err := report.SessionsTerminal(w, r.Sessions, o.TermOptions); err != nil {
		return err
	}
	return report.ShardsTerminal(w, r.Shards)
}

// levelBlocks prints each level's summary (and, with fs, its findings),
// headed by its load when there are several.
func (r *Result) levelBlocks(w io.Writer, o report.TermOptions, fs bool) error {
	for i, l := range r.Levels {
		if len(r.Levels) > 1 && fs {
			if i > 0 {
				fmt.Fprintln(w)
			}
			ls := breakdown.LevelSummary{Index: l.Index, Level: l.Level, Summary: l.Summary}
			fmt.Fprintf(w, "# level %d: %s\n", l.Index, report.LevelName(ls, len(r.Levels)))
		}
		if err := report.Terminal(w, &r.Levels[i].Summary, r.Meta, o); err != nil {
			return err
		}
		if err := r.Levels[i].blocksTerminal(w); err != nil {
			return err
		}
		if fs {
			if err := report.FindingsTerminal(w, l.Findings); err != nil {
				return err
			}
		}
	}
	return nil
}

// blocksTerminal prints the level's blocks after its summary: what each
// scraped endpoint saw, then each breakdown's section in turn.
func (l *LevelResult) blocksTerminal(w io.Writer) error {
	if err := serverTerminal(w, l.Server, l.TTFTSplit()); err != nil {
		return err
	}
	for _, s := range report.Sections(l.Breakdowns) {
		if err := s.Terminal(w); err != nil {
			return err
		}
	}
	return nil
}

// serverTerminal prints what each scraped endpoint saw during a level,
// named when it is not the target itself.
func serverTerminal(w io.Writer, ws []ServerWindow, split *breakdown.TTFTSplit) error {
	for i := range ws {
		if ws[i].Target != "server" {
			fmt.Fprintf(w, "(%s)\n", ws[i].Target)
		}
		if err := report.ServerTerminalTimed(w, &ws[i].Window, ownTiming(ws[i].Target, split)); err != nil {
			return err
		}
	}
	return nil
}

// ownTiming is the requests' own server timing for the target's own
// endpoint, which served them all; another endpoint (a second replica)
// saw only some, so its histograms stand alone.
func ownTiming(target string, split *breakdown.TTFTSplit) *breakdown.TTFTSplit {
	if target != "server" {
		return nil
	}
	return split
}

// serverJSON is the levels' server side for the result JSON: the target's
// own under "server", other endpoints under "server_<name>".
func serverJSON(extra map[string]any, ws []ServerWindow, split *breakdown.TTFTSplit) {
	for i := range ws {
		key := "server"
		if ws[i].Target != "server" {
			key = "server_" + ws[i].Target
		}
		if m := report.ServerJSONTimed(&ws[i].Window, ownTiming(ws[i].Target, split)); m != nil {
			extra[key] = m
		}
	}
}

// JSONOptions add to the result JSON.
type JSONOptions struct {
	// Label is stored as the result's label ("" none).
	Label string
	// Detailed adds vLLM's per-request lists (needs Result.Records).
	Detailed bool
}

// JSON is the result file: for one level, vLLM's keys (report.ResultJSON)
// with goodput's beside them; for several (a sweep, or a report of
// several levels) one object of run facts with "levels" (each level's
// result), the run's "findings" and, for a sweep, "sweep" (the verdict).
func (r *Result) JSON(o JSONOptions) ([]byte, error) {
	if len(r.Levels) == 1 && r.Sweep == nil {
		return r.levelJSON(o)
	}
	levels := make([]json.RawMessage, len(r.Levels))
	for i := range r.Levels {
		l := &r.Levels[i]
		extra := map[string]any{"findings": nonNil(l.Findings), "level_label": l.Level.Label}
		levelBlocks(extra, l)
		if r.Sweep != nil {
			extra["saturated"], extra["median_queue_ms"], extra["median_queue_from_server"] = l.Saturated, l.MedianQueueMs, l.QueueFromServer
			if l.OfferedRate > 0 {
				extra["offered_rate"] = l.OfferedRate
			}
		}
		b, err := report.ResultJSON(&l.Summary, r.Meta, extra)
		if err != nil {
			return nil, err
		}
		levels[i] = b
	}
	m := r.Meta
	doc := map[string]any{
		"date": m.Started.Format(report.DateFormat), "command": m.Command, "target": m.Target, "backend": m.Backend,
		"model_id": m.Model, "dataset": m.Dataset, "seed": m.Seed, "levels": levels,
		"findings": nonNil(r.Findings), "records_file": r.RecordsPath,
	}
	if r.Sessions != nil {
		doc["sessions"] = report.SessionsJSON(r.Sessions)
	}
	if m := report.ShardsJSON(r.Shards); m != nil {
		doc["shards"] = m
	}
	if m := report.RepeatsJSON(r.Repeats, r.repeatLevel()); m != nil {
		doc["repeats"] = m
		report.RepeatVerdictKeys(doc, r.Repeats, r.Levels[0].Summary.Options.Confidence > 0)
	}
	switch {
	case r.Pareto != nil:
		doc["pareto"] = report.ParetoJSON(r.Pareto, r.ParetoGPUs)
	case r.Sweep != nil:
		doc["sweep"] = report.SweepJSON(&r.Sweep.Result, r.Sweep.Search)
		doc["capacity_probe"] = r.Sweep.Probe
		if p := r.Sweep.GoodputPeak; p != nil && p.Index >= 0 && p.Index < len(r.Levels) {
			if m := report.CostJSON(r.Levels[p.Index].Cost()); m != nil {
				doc["goodput_peak_cost"] = m
			}
		}
		if p := r.Sweep.Recommended; p != nil && p.Index >= 0 && p.Index < len(r.Levels) {
			if m := report.CostJSON(r.Levels[p.Index].Cost()); m != nil {
				doc["recommendation_cost"] = m
			}
		}
	}
	if len(r.Levels) > 0 {
		doc["slo"] = r.Levels[0].Summary.Options.SLO.String()
	}
	if r.Interrupted {
		doc["interrupted"] = true
	}
	for k, v := range m.Metadata {
		if _, taken := doc[k]; !taken {
			doc[k] = v
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("result json: %w", err)
	}
	return append(b, '\n'), nil
}

// levelBlocks adds level l's blocks that exist (the server's side, then
// each breakdown's section: the TTFT split, the replicas, the gateway,
// the cost, ...) to its JSON object extra, the same for a single level as
// for each level of a sweep.
func levelBlocks(extra map[string]any, l *LevelResult) {
	serverJSON(extra, l.Server, l.TTFTSplit())
	for _, s := range report.Sections(l.Breakdowns) {
		s.JSON(extra)
	}
}

// levelJSON is a single level's result.
func (r *Result) levelJSON(o JSONOptions) ([]byte, error) {
	l := &r.Levels[0]
	extra := map[string]any{"records_file": r.RecordsPath, "findings": nonNil(r.Findings)}
	levelBlocks(extra, l)
	if r.TokenizerID != "" {
		extra["tokenizer_id"] = r.TokenizerID
	}
	if o.Label != "" {
		extra["label"] = o.Label
	}
	if rp := l.Level.Ramp; rp != nil {
		// vLLM's keys for a ramp (its rates are integers there).
		extra["ramp_up_strategy"], extra["ramp_up_start_rps"], extra["ramp_up_end_rps"] = rp.Strategy, jsonNumber(rp.StartRPS), jsonNumber(rp.EndRPS)
	}
	if r.Sessions != nil {
		extra["sessions"] = report.SessionsJSON(r.Sessions)
	}
	if m := report.ShardsJSON(r.Shards); m != nil {
		extra["shards"] = m
	}
	if o.Detailed {
		for k, v := range report.Detailed(r.Records, l.Index) {
			extra[k] = v
		}
	}
	if r.Interrupted {
		extra["interrupted"] = true
	}
	return report.ResultJSON(&l.Summary, r.Meta, extra)
}

// jsonNumber writes a whole number as an integer (as vLLM's integer
// flags are), any other as a float.
func jsonNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

func nonNil(fs []findings.Finding) []findings.Finding {
	if fs == nil {
		return []findings.Finding{}
	}
	return fs
}

// HTML is the self-contained HTML report's input: every level, every
// record kept, the run's findings (each level's, marked with its level,
// for several levels that are not a sweep) and a sweep's knee and goodput
// peak.
func (r *Result) HTML(title string, generated time.Time) report.HTMLInput {
	levels := make([]breakdown.LevelSummary, len(r.Levels))
	for i, l := range r.Levels {
		levels[i] = breakdown.LevelSummary{Index: l.Index, Level: l.Level, Summary: l.Summary}
	}
	in := report.HTMLInput{Title: title, Meta: r.Meta, Levels: levels, Records: report.Records(r.Records),
		Findings: r.Findings, SLA: r.SLA, Generated: generated, Sessions: r.Sessions, Server: r.Server, Pareto: r.Pareto,
		Shards: r.Shards, Repeats: r.Repeats}
	if len(r.Levels) > 0 {
		focus := len(r.Levels) - 1
		if r.Focus >= 0 && r.Focus < len(r.Levels) {
			focus = r.Focus
		}
		in.Replicas = r.Levels[focus].Replicas()
		in.Classes = r.Levels[focus].Classes()
		in.Jobs = r.Levels[focus].Jobs()
		in.TTFTSplit = r.Levels[focus].TTFTSplit()
		for i := range r.Levels[focus].Server {
			w := &r.Levels[focus].Server[i]
			in.ServerWindows = append(in.ServerWindows, report.ServerWindow{Target: w.Target, Window: &w.Window})
		}
	}
	switch {
	case r.Sweep != nil:
		in.Sweep = &report.SweepMarks{Knee: -1, GoodputPeak: -1, WithinSLO: -1}
		if k := r.Sweep.Knee; k != nil && k.Index < len(levels) {
			in.Sweep.Knee = k.Index
		}
		if p := r.Sweep.GoodputPeak; p != nil && p.Index < len(levels) {
			in.Sweep.GoodputPeak = p.Index
		}
		if p := r.Sweep.MaxWithinSLO; p != nil && p.Index < len(levels) {
			in.Sweep.WithinSLO = p.Index
		}
	case len(r.Levels) > 1:
		in.Findings = nil
		for _, l := range r.Levels {
			for _, f := range l.Findings {
				f.Evidence = withLevel(f.Evidence, l.Index)
				in.Findings = append(in.Findings, f)
			}
		}
	}
	return in
}

// Title names a run for people, e.g. "goodput bench".
func Title(m *runlog.Meta) string {
	if m == nil || strings.TrimSpace(m.Command) == "" {
		return "goodput"
	}
	return "goodput " + m.Command
}

// repeatLevel is the confidence level of the repeats' spread: the
// summaries' (95 % when they had none).
func (r *Result) repeatLevel() float64 {
	if len(r.Levels) > 0 && r.Levels[0].Summary.Options.Confidence > 0 {
		return r.Levels[0].Summary.Options.Confidence
	}
	return stats.DefaultConfidence
}
