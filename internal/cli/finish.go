package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// outputs is what a finished run prints and saves, from its flags.
type outputs struct {
	out *outputFlags
	// levelReports prints every level's full summary (sweep).
	levelReports bool
	// gate is --fail-if.
	gate gate.Gate
	// interrupted is the line an interrupted run ends with.
	interrupted func(res *run.Result) string
	// before runs after the terminal summary, before anything is saved
	// (sim's engine note).
	before func(res *run.Result)
}

// finish renders a run's Result — the terminal summary and findings, the
// records note, the result file, the HTML report — and returns the run's
// outcome as an error: the run's own (a records file that failed), an
// interruption, every request failed, or a failed gate.
func (o *outputs) finish(env Env, res *run.Result, runErr error) error {
	topts := run.TerminalOptions{TermOptions: report.TermOptions{TTY: env.TTY, NoColor: env.Getenv != nil && env.Getenv("NO_COLOR") != ""},
		LevelReports: o.levelReports}
	if err := res.Terminal(env.Stdout, topts); err != nil {
		return err
	}
	if o.before != nil {
		o.before(res)
	}
	if res.RecordsPath != "" {
		fmt.Fprintf(env.Stderr, "goodput: %d records in %s\n", res.RecordsWritten, res.RecordsPath)
	}
	doc, err := res.JSON(run.JSONOptions{Label: o.out.Label, Detailed: o.out.SaveDetailed})
	if err != nil {
		return err
	}
	output := o.out.runOutput(env)
	switch {
	case o.out.AppendResult:
		if err := output.AppendResult(res.ResultPath, doc); err != nil {
			return fmt.Errorf("--append-result: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: result appended to %s\n", res.ResultPath)
	case o.out.SaveResult:
		path, err := output.WriteResult(res.ResultPath, doc)
		if err != nil {
			return fmt.Errorf("--save-result: %w", runError(err, nil, ""))
		}
		fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", path)
	}
	if runErr != nil {
		return runErr
	}
	if o.out.HTML != "" {
		if err := writeHTML(env, output, o.out.HTML, res, run.Title(res.Meta)); err != nil {
			return err
		}
	}
	if res.Interrupted {
		return interruptedError{o.interrupted(res)}
	}
	if err := allFailed(res); err != nil {
		return err
	}
	return checkGate(o.gate, doc)
}

// writeHTML writes the run's HTML report to path.
func writeHTML(env Env, output run.Output, path string, res *run.Result, title string) error {
	in := res.HTML(title, env.Now())
	if err := output.WriteFile(path, func(b *bytes.Buffer) error { return report.HTML(b, in) }); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	fmt.Fprintf(env.Stderr, "goodput: HTML report in %s\n", path)
	return nil
}

// checkGate applies --fail-if to the result JSON.
func checkGate(g gate.Gate, doc []byte) error {
	if len(g.Conds) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return fmt.Errorf("--fail-if: %w", err)
	}
	if failed := g.Check(m); len(failed) > 0 {
		return &GateError{Failed: failed}
	}
	return nil
}

// allFailed is a run error when not one measured request of any level
// succeeded: the numbers above then describe failures, not the server.
func allFailed(res *run.Result) error {
	if len(res.Levels) == 0 {
		return nil
	}
	for _, l := range res.Levels {
		if l.Summary.Completed > 0 {
			return nil
		}
	}
	return allFailedSummary(&res.Levels[0].Summary)
}

func allFailedSummary(s *stats.Summary) error {
	if s.Completed > 0 || s.Failed == 0 {
		return nil
	}
	classes := make([]string, 0, len(s.Failures))
	for _, c := range runlog.ErrorClasses {
		if n := s.Failures[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	return fmt.Errorf("all %d requests failed (%s)", s.Failed, strings.Join(classes, ", "))
}
