package runspec

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
)

// FinishOptions say how Finish reports a run.
type FinishOptions struct {
	// Stdout takes the terminal summary, drawn as Terminal says.
	Stdout   io.Writer
	Terminal run.TerminalOptions
	// Before runs after the terminal summary, before anything is saved
	// (sim's engine note); nil for nothing.
	Before func(*run.Result)
	// Note tells where the records, the result and the report went.
	Note func(string)
	// Output is where the files go; Now stamps the HTML report.
	Output run.Output
	Now    func() time.Time
	// Gate is the verdict's, applied to the result JSON.
	Gate gate.Gate
}

// ErrInterrupted is the outcome of a run cut short: what finished was
// reported and saved.
var ErrInterrupted = errors.New("interrupted")

// GateError is a result that failed its gate: the conditions that held.
type GateError struct{ Failed []string }

func (e *GateError) Error() string { return "gate failed: " + strings.Join(e.Failed, "; ") }

// InconclusiveError is a result its gate could not judge: no condition
// failed, and those listed straddle their bound within the figure's
// interval, so a pass or a fail would be luck.
type InconclusiveError struct{ Inconclusive []string }

func (e *InconclusiveError) Error() string {
	return "gate inconclusive: " + strings.Join(e.Inconclusive, "; ") +
		" (more requests, --target-precision or --repeats narrow the interval; --confidence 0 judges the values alone)"
}

// Finish reports res, the Result of a run that ended with runErr, as s
// asks — the terminal summary and findings, the records note, the result
// file, the HTML report — and returns the run's outcome: an output that
// failed, runErr (the run's own, after its result is saved),
// ErrInterrupted, every request failed, a *GateError, or an
// *InconclusiveError.
func (s *OutputSpec) Finish(res *run.Result, runErr error, o FinishOptions) error {
	if err := res.Terminal(o.Stdout, o.Terminal); err != nil {
		return err
	}
	if o.Before != nil {
		o.Before(res)
	}
	if res.RecordsPath != "" {
		o.Note(fmt.Sprintf("%d records in %s", res.RecordsWritten, res.RecordsPath))
	}
	doc, err := s.Save(res, o.Output, o.Note)
	if err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if err := s.SaveHTML(res, o.Output, o.Now(), o.Note); err != nil {
		return err
	}
	if res.Interrupted {
		return ErrInterrupted
	}
	if err := res.AllFailed(); err != nil {
		return err
	}
	v, err := o.Gate.JudgeJSON(doc)
	if err != nil { // not a result the gate can read
		return &setting.OutputError{Field: "FailIf", Err: err}
	}
	for _, n := range v.Notes {
		o.Note(n)
	}
	switch {
	case len(v.Failed) > 0:
		if len(v.Inconclusive) > 0 {
			o.Note("gate inconclusive: " + strings.Join(v.Inconclusive, "; "))
		}
		return &GateError{Failed: v.Failed}
	case len(v.Inconclusive) > 0:
		return &InconclusiveError{Inconclusive: v.Inconclusive}
	}
	return nil
}
