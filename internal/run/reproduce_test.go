package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sweep"
	"github.com/goodput/goodput/internal/wire/openai"
)

// A report of a run's records reaches what the run printed: the same
// per-level summaries, findings, SLA sentence and, for a sweep, the same
// knee, peaks, search and early stop — because the run itself is judged by
// the same analysis over the same records, none read back.

// reanalyze reads the records file res names and judges it again with the
// options the run stored.
func reanalyze(t *testing.T, res *Result) *Result {
	t.Helper()
	f, err := os.Open(res.RecordsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, warns, err := runlog.ReadRecordsFile(f, res.RecordsPath, runlog.ReadOptions{})
	if err != nil || len(warns) > 0 {
		t.Fatalf("reading the records: %v %v", err, warns)
	}
	again, err := AnalyzeRecords(files[0].Meta, files[0].Records, AnalyzeOptions{Scrapes: files[0].Scrapes})
	if err != nil {
		t.Fatal(err)
	}
	return again
}

// sameVerdict fails t unless a and b render alike: the result JSON (what
// only the live run knows — its file names, its tokenizer — aside), the
// terminal summary, the findings and the SLA sentence.
func sameVerdict(t *testing.T, live, again *Result) {
	t.Helper()
	sameOutput(t, live, again)
	if live.SLA != again.SLA {
		t.Errorf("SLA sentence: run %q, report %q", live.SLA, again.SLA)
	}
	if len(live.Findings) == 0 {
		t.Errorf("the run has no findings: nothing was compared")
	}
	if !sameFindings(live.Findings, again.Findings) {
		t.Errorf("findings differ:\nrun:    %v\nreport: %v", ids(live.Findings), ids(again.Findings))
	}
}

// sameOutput fails t unless live and again render the same result JSON
// and terminal summary (what only the live run knows aside); it returns
// the terminal text.
func sameOutput(t *testing.T, live, again *Result) string {
	t.Helper()
	again.RecordsPath, again.TokenizerID = live.RecordsPath, live.TokenizerID
	again.Interrupted = live.Interrupted
	lj, err := live.JSON(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aj, err := again.JSON(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical(t, lj), canonical(t, aj)) {
		t.Errorf("result JSON differs:\nrun:    %s\nreport: %s", lj, aj)
	}
	var lt, at bytes.Buffer
	if err := live.Terminal(&lt, TerminalOptions{Headed: true}); err != nil {
		t.Fatal(err)
	}
	if err := again.Terminal(&at, TerminalOptions{Headed: true}); err != nil {
		t.Fatal(err)
	}
	if lt.String() != at.String() {
		t.Errorf("terminal output differs:\nrun:\n%s\nreport:\n%s", lt.String(), at.String())
	}
	return lt.String()
}

func canonical(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

func sameFindings(a, b []findings.Finding) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func ids(fs []findings.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func withRecords(t *testing.T, cfg Config) Config {
	cfg.Output.Records = filepath.Join(t.TempDir(), "run.records.jsonl")
	return cfg
}

func TestReportReproducesSim(t *testing.T) {
	cfg := withRecords(t, simConfig(t, 400))
	cfg.Command, cfg.Load.RequestRate = "sim", 20
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sameVerdict(t, res, reanalyze(t, res))
}

func TestReportReproducesSweep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rates []float64
		sat   sweep.Saturation
	}{
		{"curve", simLevels, sweep.Saturation{Off: true}},
		// The stop: level 1 stops early, the sweep skips level 2.
		{"saturation stop", []float64{10, 75, 100}, sweep.Saturation{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := withRecords(t, simConfig(t, 500))
			if tc.name == "saturation stop" {
				cfg.Load.NumPrompts = 3000
			}
			res := simSweep(t, cfg, tc.rates, tc.sat)
			again := reanalyze(t, res)
			sameVerdict(t, res, again)
			if tc.name == "saturation stop" && (again.Sweep.Stopped == "" || again.Sweep.Skipped != 1) {
				t.Errorf("report: stopped %q, skipped %d; want the run's stop and 1 skipped", again.Sweep.Stopped, again.Sweep.Skipped)
			}
			if tc.name == "curve" && again.Sweep.Knee == nil {
				t.Errorf("report found no knee: %s", again.Sweep.KneeNote)
			}
		})
	}
}

func TestReportReproducesSearch(t *testing.T) {
	cfg := withRecords(t, simConfig(t, 400))
	cfg.Sweep = &SweepConfig{Axis: sweep.AxisRate, Levels: sweep.Levels(sweep.AxisRate, []float64{4, 36}, cfg.Load),
		Criteria: sweep.Criteria{Attainment: 0.99}, Search: true, Precision: 2}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	again := reanalyze(t, res)
	sameVerdict(t, res, again)
	if again.Sweep.Search == nil || again.Sweep.Search.Capacity != res.Sweep.Search.Capacity {
		t.Errorf("report search %+v; want the run's capacity %g", again.Sweep.Search, res.Sweep.Search.Capacity)
	}
}

// A wall-clock bench against the embedded simulator (over HTTP), with an
// SLO, reproduces too: its client CPU, delayed arrivals and timing rules
// come from the records and the levels the file states.
func TestReportReproducesBench(t *testing.T) {
	cfg := withRecords(t, simConfig(t, 60))
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Load.RequestRate, cfg.Load.MaxConcurrency = 40, 8
	cfg.Target = Target{API: "openai", Endpoint: "/v1/completions", Open: func(base string, conns int, now func() int64) (Backend, error) {
		return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/completions", MaxConns: conns, Now: now, AutoUsage: true})
	}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Levels[0].Summary.Completed == 0 {
		t.Fatalf("no request completed: %+v", res.Levels[0].Summary.Failures)
	}
	sameVerdict(t, res, reanalyze(t, res))
}

// The verdict shown in HTML is the same as well: the report's marks on a
// sweep's knee and goodput peak.
func TestReportReproducesHTMLMarks(t *testing.T) {
	cfg := withRecords(t, simConfig(t, 500))
	res := simSweep(t, cfg, simLevels, sweep.Saturation{Off: true})
	a, b := res.HTML("x", res.Meta.Started), reanalyze(t, res).HTML("x", res.Meta.Started)
	if *a.Sweep != *b.Sweep || a.Sweep.Knee < 0 {
		t.Errorf("HTML marks: run %+v, report %+v", *a.Sweep, *b.Sweep)
	}
	var _ report.HTMLInput = a
}

// failingWriter fails every write after the first n.
type failingWriter struct {
	w io.Writer
	n int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return f.w.Write(p)
}

// A records file that fails part-way stops the run with an error naming
// the file and the records it holds; the Result still covers every record
// that finished (the summary loses none the file has).
func TestRecordsFileFailure(t *testing.T) {
	cfg := withRecords(t, simConfig(t, 200))
	cfg.Command, cfg.Load.RequestRate = "sim", 10
	cfg.Output.Filter = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 11} } // the meta line and 10 records
	res, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), cfg.Output.Records) ||
		!strings.Contains(err.Error(), "(10 records written)") {
		t.Fatalf("Run error = %v; want the file, the cause and the records written", err)
	}
	if res == nil || res.Levels[0].Summary.Requests < 10 {
		t.Fatalf("Result = %+v; want the records that finished", res)
	}
}

// A repeated load's report gives the same levels and the same run-to-run
// spread as the run printed.
func TestReportReproducesRepeats(t *testing.T) {
	cfg := withRecords(t, simConfig(t, 150))
	cfg.Command, cfg.Load.RequestRate, cfg.Repeats, cfg.Stats.Confidence = "sim", 10, 3, 0.95
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 3 || len(res.Repeats) == 0 {
		t.Fatalf("%d levels, %d spread figures; want 3 repeats and their spread", len(res.Levels), len(res.Repeats))
	}
	if out := sameOutput(t, res, reanalyze(t, res)); !strings.Contains(out, "Run-to-run spread (3 repeats)") {
		t.Errorf("the terminal output lacks the spread:\n%s", out)
	}
}
