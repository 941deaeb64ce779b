package runspec

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// summaryOptions are the stats.Options of a run summarised as spec says.
func summaryOptions(t *testing.T, spec stats.Spec) stats.Options {
	t.Helper()
	so, err := spec.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	return so
}

// TestVerdictSpecCheck: each bad verdict setting is an error of its field,
// a key some setting would add naming that setting.
func TestVerdictSpecCheck(t *testing.T) {
	cases := []struct {
		name    string
		spec    VerdictSpec
		summary stats.Spec
		out     OutputSpec
		want    string   // the error with field paths; "" none
		fields  []string // the *setting.Error's fields; nil: not one
	}{
		{"ok", VerdictSpec{FailIf: []string{"p99_ttft_ms>500", "completed<1"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{}, "", nil},
		{"no gate", VerdictSpec{ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{}, "", nil},
		{"parse", VerdictSpec{FailIf: []string{"p99_ttft_ms>>5"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{}, `"p99_ttft_ms>>5": ">5" is not a number`, nil},
		{"speed zero", VerdictSpec{ReadingSpeedMs: 0}, stats.Spec{}, OutputSpec{}, "ReadingSpeedMs 0: want > 0", []string{"ReadingSpeedMs"}},
		{"speed negative", VerdictSpec{ReadingSpeedMs: -1}, stats.Spec{}, OutputSpec{}, "ReadingSpeedMs -1: want > 0", []string{"ReadingSpeedMs"}},
		{"speed nan", VerdictSpec{ReadingSpeedMs: math.NaN()}, stats.Spec{}, OutputSpec{}, "ReadingSpeedMs NaN: want > 0", []string{"ReadingSpeedMs"}},
		{"metadata", VerdictSpec{FailIf: []string{"completed<1"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{Metadata: []string{"gpus"}},
			`Metadata "gpus": want KEY=VALUE`, []string{"Metadata"}},
		{"slo", VerdictSpec{FailIf: []string{"request_goodput<1"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{},
			`FailIf "request_goodput<1": request_goodput is always null in this run's result (only a run with an SLO has it: add Goodput)`, []string{"FailIf", "Goodput"}},
		{"slo given", VerdictSpec{FailIf: []string{"request_goodput<1"}, ReadingSpeedMs: 40}, stats.Spec{Goodput: []string{"ttft:2000"}}, OutputSpec{}, "", nil},
		{"metric", VerdictSpec{FailIf: []string{"p99_itl_ms>1"}, ReadingSpeedMs: 40}, stats.Spec{PercentileMetrics: "ttft"}, OutputSpec{},
			`FailIf "p99_itl_ms>1": p99_itl_ms is not a key of the result (add its metric to PercentileMetrics)`, []string{"FailIf", "PercentileMetrics"}},
		{"percentile", VerdictSpec{FailIf: []string{"completed>0", "p99.9_ttft_ms>500"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{},
			`FailIf "p99.9_ttft_ms>500": p99.9_ttft_ms is not a key of the result (add 99.9 to MetricPercentiles)`, []string{"FailIf", "MetricPercentiles"}},
		{"percentile given", VerdictSpec{FailIf: []string{"p99.9_ttft_ms>500"}, ReadingSpeedMs: 40}, stats.Spec{MetricPercentiles: "50,99.9"}, OutputSpec{}, "", nil},
		{"typo", VerdictSpec{FailIf: []string{"p99_ttftx_ms>1"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{},
			`"p99_ttftx_ms>1": p99_ttftx_ms is not a key of the result; did you mean p99_ttft_ms,`, nil},
		{"detailed only", VerdictSpec{FailIf: []string{"rtfx>1"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{},
			`"rtfx>1": rtfx is not a key of the result`, nil},
		{"detailed", VerdictSpec{FailIf: []string{"rtfx>1"}, ReadingSpeedMs: 40}, stats.Spec{}, OutputSpec{SaveDetailed: true}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := c.spec.Check(summaryOptions(t, c.summary), &c.out)
			if c.want == "" {
				if err != nil {
					t.Fatalf("error %v; want none", err)
				}
				if len(g.Conds) != len(c.spec.FailIf) {
					t.Errorf("gate of %d conditions; want %d", len(g.Conds), len(c.spec.FailIf))
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v; want %q", err, c.want)
			}
			var se *setting.Error
			if errors.As(err, &se) != (c.fields != nil) || se != nil && !slices.Equal(se.Fields(), c.fields) {
				t.Errorf("setting error %v of fields %v; want fields %v", se, fieldsOf(se), c.fields)
			}
		})
	}
}

func fieldsOf(e *setting.Error) []string {
	if e == nil {
		return nil
	}
	return e.Fields()
}

// TestCheckSweep: the sweep's keys, a search key naming Search in a run
// without it; the reading speed and the metadata are checked too.
func TestCheckSweep(t *testing.T) {
	so := summaryOptions(t, stats.Spec{})
	cases := []struct {
		expr   string
		search bool
		want   string
	}{
		{"sweep.goodput_peak.load<1", false, ""},
		{"sweep.recommendation.load<1", false, ""},
		{"levels.1.p99_ttft_ms>1e9", false, ""},
		{"sweep.search.capacity<1", true, ""},
		{"sweep.search.capacity<1", false, `FailIf "sweep.search.capacity<1": sweep.search.capacity is not a key of the result (only a Search run has it)`},
		{"sweep.gooput_peak.load<1", false, `"sweep.gooput_peak.load<1": sweep.gooput_peak.load is not a key of the result; did you mean sweep.goodput_peak.load`},
	}
	for _, c := range cases {
		_, err := VerdictSpec{FailIf: []string{c.expr}, ReadingSpeedMs: 1}.CheckSweep(so, &OutputSpec{}, c.search)
		if got := errString(err); c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s (search %v): %q; want %q", c.expr, c.search, got, c.want)
		}
	}
	if _, err := (VerdictSpec{ReadingSpeedMs: 1}).CheckSweep(so, &OutputSpec{Metadata: []string{"x"}}, false); err == nil {
		t.Error("metadata x: no error, want one (K=V)")
	}
	if _, err := (VerdictSpec{}).CheckSweep(so, &OutputSpec{}, false); errString(err) != "ReadingSpeedMs 0: want > 0" {
		t.Errorf("reading speed 0: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFinishOutcome: Finish renders and saves, then returns the run's
// outcome in order: the run's own error, an interruption, every request
// failed, a failed gate.
func TestFinishOutcome(t *testing.T) {
	runErr := errors.New("records failed")
	cases := []struct {
		name   string
		edit   func(*run.Result)
		runErr error
		gate   string
		want   func(error) bool
	}{
		{"ok", nil, nil, "completed<1", func(err error) bool { return err == nil }},
		{"gate", nil, nil, "completed>0", func(err error) bool {
			var ge *GateError
			return errors.As(err, &ge) && len(ge.Failed) == 1 && strings.HasPrefix(err.Error(), "gate failed: completed>0")
		}},
		{"run error first", func(r *run.Result) { r.Interrupted = true }, runErr, "completed>0", func(err error) bool { return err == runErr }},
		{"interrupted", func(r *run.Result) { r.Interrupted = true }, nil, "completed>0", func(err error) bool { return err == ErrInterrupted }},
		{"all failed", func(r *run.Result) {
			s := &r.Levels[0].Summary
			s.Completed, s.Failed = 0, 2
		}, nil, "completed<1", func(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "all 2 requests failed") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := schemaResult(summaryOptions(t, stats.Spec{}), nil)
			res.Interrupted, res.RecordsPath, res.RecordsWritten = false, "r.jsonl", 3
			res.Levels[0].Summary.Completed = 5
			if c.edit != nil {
				c.edit(res)
			}
			g, err := gate.Parse([]string{c.gate})
			if err != nil {
				t.Fatal(err)
			}
			var term bytes.Buffer
			var notes []string
			before := false
			err = (&OutputSpec{}).Finish(res, c.runErr, FinishOptions{Stdout: &term, Gate: g,
				Before: func(*run.Result) { before = term.Len() > 0 },
				Note:   func(s string) { notes = append(notes, s) }, Now: time.Now})
			if !c.want(err) {
				t.Errorf("outcome %v", err)
			}
			if !before {
				t.Error("Before did not run after the terminal summary")
			}
			if !slices.Contains(notes, "3 records in r.jsonl") {
				t.Errorf("notes %q lack the records", notes)
			}
		})
	}
}
