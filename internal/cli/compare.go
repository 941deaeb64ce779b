package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// CompareOptions is everything "goodput compare" needs.
type CompareOptions struct {
	A, B    string
	Goodput []string
	// SLOPreset and SessionGoodput are --slo-preset and --session-goodput.
	SLOPreset, SessionGoodput string
	MetricPercentiles         string
	Metrics                   string
	Resamples                 int
	Confidence                float64
	Seed                      uint64
	ReadingSpeedMs            float64
	HTML                      string
	// Read says how records files are read: --skip-bad-lines, --merge.
	Read runlog.ReadOptions
	// Force merges the runs of one file (--merge) even when they differ in
	// model, backend, endpoint, dataset or simulated engine.
	Force bool

	sloWords []string
}

func newCompareCmd(env Env) *cobra.Command {
	var o CompareOptions
	cmd := &cobra.Command{
		Use:     "compare A B",
		Short:   "Judge run B against the baseline run A: deltas with bootstrap confidence intervals",
		Long:    helpText("compare"),
		Example: helpText("compare.examples"),
		Args:    atLeast(2, "give two runs to compare, A then B: records files or result JSONs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, slo := splitSLOArgs(env, args, len(o.Goodput) > 0)
			if len(files) != 2 {
				return usagef("compare takes two files, A and B; got %d", len(files))
			}
			o.A, o.B, o.sloWords = files[0], files[1], slo
			return runCompare(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Goodput, "goodput", nil, "SLO judging both runs' goodput, e.g. --goodput ttft:2000 tpot:50 (ms)")
	fs.StringVar(&o.SLOPreset, "slo-preset", "", "a product's SLO for both runs ("+strings.Join(stats.PresetNames(), ", ")+"); --goodput and --session-goodput override it constraint by constraint")
	fs.StringVar(&o.SessionGoodput, "session-goodput", "", "session SLO judging both runs' sessions, e.g. 'ttp:2000 turn_ttft_p95:800' (default: the one both runs stored)")
	fs.StringVar(&o.MetricPercentiles, "metric-percentiles", "50,90,99", "percentiles to compare")
	fs.StringVar(&o.Metrics, "percentile-metrics", "ttft,ttp,tpot,e2el,response", "metrics to compare (per-request ones: ttft, ttp, tpot, e2el, response)")
	fs.IntVar(&o.Resamples, "resamples", compare.DefaultResamples, "bootstrap resamples")
	fs.Float64Var(&o.Confidence, "confidence", compare.DefaultConfidence, "confidence level of the intervals, in (0, 1)")
	fs.Uint64Var(&o.Seed, "seed", compare.DefaultSeed, "bootstrap seed (the same seed gives the same intervals)")
	fs.Float64Var(&o.ReadingSpeedMs, "reading-speed-ms", float64(compare.DefaultReadingSpeed)/1e6, "time a user takes to read one token, ms: a TPOT below it is invisible to a reader")
	fs.StringVar(&o.HTML, "html", "", "write a self-contained side-by-side HTML report to this file")
	readFlags(cmd, &o.Read)
	fs.BoolVar(&o.Force, "force", false, "with --merge, merge a file's runs even when they come from incompatible runs")
	return cmd
}

// loadRun reads one side of the comparison from its file.
func loadRun(env Env, name string, so stats.Options, o *CompareOptions) (run.CompareSide, error) {
	f, err := os.Open(resolve(env, name))
	if err != nil {
		return run.CompareSide{}, err
	}
	defer f.Close()
	side, err := run.ReadCompareSide(f, name, so, o.Read, o.Force, warner(env))
	if errors.Is(err, runlog.ErrIncompatible) {
		return side, mergeError(err)
	}
	return side, readError(err, o.Read)
}

func runCompare(_ context.Context, env Env, o *CompareOptions) error {
	sf := &summaryFlags{Goodput: o.Goodput, SLOPreset: o.SLOPreset}
	slo, err := sf.slo(o.sloWords)
	if err != nil {
		return err
	}
	sessionSLO, err := sf.sessionSLO(o.SessionGoodput)
	if err != nil {
		return err
	}
	ps, err := stats.ParsePercentiles(o.MetricPercentiles)
	if err != nil {
		return usagef("--metric-percentiles: %v", err)
	}
	ms, err := stats.ParseMetrics(o.Metrics)
	if err != nil {
		return usagef("--percentile-metrics: %v", err)
	}
	for _, m := range ms {
		if m == stats.MetricITL {
			return usagef("--percentile-metrics: itl cannot be compared with intervals (its gaps are not independent samples); compare tpot")
		}
	}
	if o.Resamples < 100 {
		return usagef("--resamples %d: want at least 100", o.Resamples)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return usagef("--confidence %v: want a number between 0 and 1, e.g. 0.95", o.Confidence)
	}
	if !(o.ReadingSpeedMs > 0 && o.ReadingSpeedMs < 1e6) {
		return usagef("--reading-speed-ms %v: want a positive number of milliseconds per token", o.ReadingSpeedMs)
	}
	so := stats.Options{SLO: slo, Percentiles: ps}
	a, err := loadRun(env, o.A, so, o)
	if err != nil {
		return err
	}
	b, err := loadRun(env, o.B, so, o)
	if err != nil {
		return err
	}
	c, err := compare.Compare(a.Run, b.Run, compare.Options{
		SLO: slo, Percentiles: ps, Metrics: ms, Resamples: o.Resamples, Confidence: o.Confidence, Seed: o.Seed,
		ReadingSpeed: time.Duration(o.ReadingSpeedMs * float64(time.Millisecond)), SessionSLO: sessionSLO,
	})
	if err != nil {
		return usageError{err}
	}
	if err := report.CompareTerminal(env.Stdout, c); err != nil {
		return err
	}
	if o.HTML != "" {
		in := report.CompareHTMLInput{Comparison: c, A: a.Report, B: b.Report, Generated: env.Now()}
		var output run.Output
		if err := output.WriteFile(resolve(env, o.HTML), func(b *bytes.Buffer) error { return report.CompareHTML(b, in) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: HTML report written to %s\n", o.HTML)
	}
	return nil
}
