package cli

import (
	"bytes"
	"fmt"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
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
	if err := res.AllFailed(); err != nil {
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
	failed, err := g.CheckJSON(doc)
	if err != nil {
		return fmt.Errorf("--fail-if: %w", err)
	}
	if len(failed) > 0 {
		return &GateError{Failed: failed}
	}
	return nil
}
