package cli

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/review"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/stats"
)

// parsed fills cmd's options from args as the command line would, without
// running the command; the words left after the flags go to *words.
func parsed(t *testing.T, cmd *cobra.Command, words *[]string, args ...string) {
	t.Helper()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	*words = cmd.Flags().Args()
}

// Each command's run hook returns the run.Result it would render, so a
// test reads what a run found without parsing its output.
func TestRunHooks(t *testing.T) {
	dir := t.TempDir()
	env := Env{Stdout: io.Discard, Stderr: io.Discard, Now: time.Now, Getenv: func(string) string { return "" }, Dir: dir}
	records := filepath.Join(dir, "sim.records.jsonl")

	so := &SimOptions{Engine: sim.DefaultConfig()}
	parsed(t, simCommand(env, so), &so.args, "--num-prompts", "100", "--request-rate", "10", "--goodput", "ttft:500", "--records", records)
	res, err := so.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Levels[0]; l.Summary.Completed != 100 || l.Level.RequestRate != 10 || res.SLA == "" || res.Virtual == nil {
		t.Errorf("sim: completed %d at rate %v, SLA %q, virtual %v", l.Summary.Completed, l.Level.RequestRate, res.SLA, res.Virtual)
	}

	sw := &SweepOptions{}
	parsed(t, sweepCommand(env, sw), &sw.args, "--sim", "--request-rate", "5,10", "--num-prompts", "100", "--records", "none")
	res, err = sw.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sweep; s == nil || len(s.Points) != 2 || s.GoodputPeak == nil {
		t.Errorf("sweep: %+v; want two levels and a goodput peak", s)
	}

	b := &BenchOptions{}
	parsed(t, benchCommand(env, b), &b.args, "--num-prompts", "10", "--records", "none", "--quiet")
	res, err = b.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Levels[0]; l.Summary.Completed != 10 || res.Meta.Target != "embedded-sim" || res.TokenizerID == "" {
		t.Errorf("bench: completed %d, target %q, tokenizer %q", l.Summary.Completed, res.Meta.Target, res.TokenizerID)
	}

	// report's hook judges the sim's records as the sim judged itself.
	meta, recs := readRecords(t, records)
	ro := &review.ReportSpec{ReadingSpeedMs: 50, Summary: review.SummarySpec{Spec: stats.Spec{PercentileMetrics: defaultPercentileMetrics, MetricPercentiles: "50,90,95,99", Buckets: "1024,8192"}}}
	again, err := ro.Analyze(meta, recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.SLA == "" || again.Levels[0].Summary.SLO.Goodput <= 0 {
		t.Errorf("report: SLA %q, goodput %v; want the sim's SLO applied", again.SLA, again.Levels[0].Summary.SLO.Goodput)
	}
}
