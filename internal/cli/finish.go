package cli

import (
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
	note := func(s string) { fmt.Fprintln(env.Stderr, "goodput: "+s) }
	if res.RecordsPath != "" {
		note(fmt.Sprintf("%d records in %s", res.RecordsWritten, res.RecordsPath))
	}
	output := o.out.runOutput(env)
	doc, err := o.out.Save(res, output, note)
	if err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if err := o.out.SaveHTML(res, output, env.Now(), note); err != nil {
		return err
	}
	if res.Interrupted {
		return interruptedError{o.interrupted(res)}
	}
	if err := res.AllFailed(); err != nil {
		return err
	}
	return checkGate(o.gate, doc)
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
