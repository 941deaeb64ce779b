package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// summaryFlags are the flags that say how records are summarised; report
// and compare share them, with bench's names and meanings.
type summaryFlags struct {
	Goodput []string
	// SLOPreset names a product's SLO (stats.Presets); --goodput and
	// --session-goodput override it constraint by constraint.
	SLOPreset         string
	PercentileMetrics string
	// GPUCostPerHour and NumGPUs price and count the GPUs (per-GPU
	// goodput, cost per 1M output tokens).
	GPUCostPerHour    float64
	NumGPUs           int
	MetricPercentiles string
	Buckets           string
}

// slo parses --goodput plus stray "name:ms" words taken from the
// arguments, over --slo-preset's request constraints.
func (s *summaryFlags) slo(extra []string) (stats.SLO, error) {
	p, err := s.preset()
	if err != nil {
		return stats.SLO{}, err
	}
	var slo stats.SLO
	if spec := strings.TrimSpace(strings.Join(append(append([]string{}, s.Goodput...), extra...), " ")); spec != "" {
		if slo, err = stats.ParseSLO(spec); err != nil {
			return stats.SLO{}, usagef("--goodput: %v", err)
		}
	}
	if p != nil {
		slo, _ = p.Merge(slo, stats.SessionSLO{})
	}
	return slo, nil
}

// sessionSLO parses a --session-goodput spec over --slo-preset's session
// constraints.
func (s *summaryFlags) sessionSLO(spec string) (stats.SessionSLO, error) {
	p, err := s.preset()
	if err != nil {
		return stats.SessionSLO{}, err
	}
	slo, err := stats.ParseSessionSLO(spec)
	if err != nil {
		return slo, usagef("--session-goodput: %v", err)
	}
	if p != nil {
		_, slo = p.Merge(stats.SLO{}, slo)
	}
	return slo, nil
}

// cost is --gpu-cost-per-hour and --num-gpus, checked.
func (s *summaryFlags) cost() (run.Cost, error) {
	switch {
	case !(s.GPUCostPerHour >= 0) || s.GPUCostPerHour > 1e9:
		return run.Cost{}, usagef("--gpu-cost-per-hour %v: want a cost ≥ 0", s.GPUCostPerHour)
	case s.NumGPUs < 0 || s.NumGPUs > 1<<20:
		return run.Cost{}, usagef("--num-gpus %d: want ≥ 1 (0: the engine's, else 1)", s.NumGPUs)
	}
	return run.Cost{GPUCostPerHour: s.GPUCostPerHour, NumGPUs: s.NumGPUs}, nil
}

// preset is --slo-preset's preset; nil when none was given.
func (s *summaryFlags) preset() (*stats.Preset, error) {
	if s.SLOPreset == "" {
		return nil, nil
	}
	p, err := stats.LookupPreset(s.SLOPreset)
	if err != nil {
		return nil, usagef("--slo-preset: %v", err)
	}
	return &p, nil
}

// register adds the flags, with bench's names, meanings and defaults.
func (s *summaryFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&s.Goodput, "goodput", nil, "SLO for goodput, e.g. --goodput ttft:2000 tpot:50 (ms; ttft, tpot, e2el, ttp)")
	fs.StringVar(&s.SLOPreset, "slo-preset", "", "a product's SLO ("+strings.Join(stats.PresetNames(), ", ")+"; goodput slo list); --goodput and --session-goodput override it constraint by constraint")
	fs.Float64Var(&s.GPUCostPerHour, "gpu-cost-per-hour", 0, "what one GPU costs an hour (any currency): adds the cost of 1M output tokens and, with scraped GPU power, the energy per token")
	fs.IntVar(&s.NumGPUs, "num-gpus", 0, "GPUs serving the run, for per-GPU goodput and cost (default: the simulated engine's tensor parallelism, else 1)")
	fs.StringVar(&s.PercentileMetrics, "percentile-metrics", defaultPercentileMetrics, "metrics to report percentiles for (response: E2E from the intended send, the backlog included)")
	fs.StringVar(&s.MetricPercentiles, "metric-percentiles", "50,90,95,99", "percentiles to report")
	fs.StringVar(&s.Buckets, "buckets", "1024,8192", "input-length bucket edges in tokens (none for no buckets)")
}

// options parses the flags plus extra "name:ms" SLO words.
func (s *summaryFlags) options(extra []string) (stats.Options, error) {
	var so stats.Options
	var err error
	if so.SLO, err = s.slo(extra); err != nil {
		return so, err
	}
	if so.Percentiles, err = stats.ParsePercentiles(s.MetricPercentiles); err != nil {
		return so, usagef("--metric-percentiles: %v", err)
	}
	if so.Metrics, err = stats.ParseMetrics(s.PercentileMetrics); err != nil {
		return so, usagef("--percentile-metrics: %v", err)
	}
	if so.Buckets, err = stats.ParseBuckets(s.Buckets); err != nil {
		return so, usagef("--buckets: %v", err)
	}
	return so, nil
}

// splitSLOArgs separates vLLM-style SLO words ("tpot:50" after --goodput
// ttft:2000) from file arguments; a word naming an existing file stays a
// file.
func splitSLOArgs(env Env, args []string, haveGoodput bool) (files, slo []string) {
	for _, a := range args {
		if haveGoodput && sloArg.MatchString(a) {
			if _, err := os.Stat(resolve(env, a)); err != nil {
				slo = append(slo, a)
				continue
			}
		}
		files = append(files, a)
	}
	return files, slo
}

// resolve makes a relative path relative to env.Dir.
func resolve(env Env, p string) string {
	if env.Dir == "" || filepath.IsAbs(p) || p == "-" {
		return p
	}
	return filepath.Join(env.Dir, p)
}

// defaultPercentileMetrics are the metrics summarised unless
// --percentile-metrics says otherwise.
const defaultPercentileMetrics = "ttft,tpot,itl,e2el,ttp,response"

// ReportOptions is everything "goodput report" needs.
type ReportOptions struct {
	Files   []string
	Summary summaryFlags
	Force   bool
	// Read says how records files are read: --skip-bad-lines, --merge.
	Read       runlog.ReadOptions
	PerRequest string
	CSVDir     string
	HTML       string
	JSON       string
	Title      string
	// ReadingSpeedMs is the reader's speed for the findings, ms per token.
	ReadingSpeedMs float64
	// SessionGoodput is the session SLO (--session-goodput).
	SessionGoodput string

	sloWords []string
	flags    *pflag.FlagSet
	// scrapes are the server scrapes of the one run read (Analyze's).
	scrapes []runlog.Scrape
}

func newReportCmd(env Env) *cobra.Command {
	var o ReportOptions
	cmd := &cobra.Command{
		Use:     "report RECORDS.jsonl...",
		Short:   "Re-summarise saved records; write HTML, CSV, JSON or per-request rows",
		Long:    helpText("report"),
		Example: helpText("report.examples"),
		Args:    atLeast(1, "give one or more records files (or result JSONs) to report on"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files, o.sloWords = splitSLOArgs(env, args, len(o.Summary.Goodput) > 0)
			o.flags = cmd.Flags()
			if len(o.Files) == 0 {
				return usagef("no records file given")
			}
			return runReport(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	o.Summary.register(fs)
	fs.BoolVar(&o.Force, "force", false, "merge records files even when they come from incompatible runs")
	readFlags(cmd, &o.Read)
	fs.StringVar(&o.PerRequest, "per-request", "", "print one row per request instead of the summary: csv or jsonl")
	fs.StringVar(&o.CSVDir, "csv", "", "write summary.csv, metrics.csv, buckets.csv and requests.csv (and, with sessions, turns.csv and sessions.csv) into this directory")
	fs.StringVar(&o.HTML, "html", "", "write a self-contained HTML report to this file")
	fs.StringVar(&o.JSON, "json", "", "write the result JSON (vLLM's keys) to this file; for several levels one object holding each level's (\"levels\") and, for a sweep, its verdict (\"sweep\")")
	fs.StringVar(&o.Title, "title", "", "title of the HTML report")
	registerReadingSpeed(fs, &o.ReadingSpeedMs)
	registerSessionGoodput(fs, &o.SessionGoodput)
	return cmd
}

// readFlags registers the flags that say how records files are read,
// shared by report and compare.
func readFlags(cmd *cobra.Command, o *runlog.ReadOptions) {
	fs := cmd.Flags()
	fs.BoolVar(&o.SkipBadLines, "skip-bad-lines", false, "skip (and name in a warning) every records line that does not parse or holds a value out of range, instead of stopping at the first")
	fs.BoolVar(&o.Merge, "merge", false, "accept a records file holding several runs (files concatenated) and merge its runs, each on its own clock")
}

// readError turns a records reader's error into the command's: a file of
// several runs is a usage error (--merge decides), a bad line says how to
// skip it.
func readError(err error, o runlog.ReadOptions) error {
	var bad *runlog.BadLineError
	switch {
	case errors.Is(err, runlog.ErrSeveralRuns):
		return usageError{fmt.Errorf("%w; give --merge to summarise them together, each run on its own clock", err)}
	case errors.As(err, &bad) && !o.SkipBadLines:
		return fmt.Errorf("%w (--skip-bad-lines skips such lines, naming each in a warning)", err)
	}
	return err
}

// mergeError is runlog.Merge's refusal of incompatible files as the
// command's: a usage error naming the flag that merges them anyway.
func mergeError(err error) error {
	return usageError{fmt.Errorf("%w; use --force to merge them anyway", err)}
}

// readRecordsFiles reads every file (run.ReadRecordsFiles), naming the
// file in errors; a file of several runs gives one RecordsFile per run
// (with --merge).
func readRecordsFiles(env Env, names []string, o runlog.ReadOptions) ([]runlog.RecordsFile, error) {
	files, err := run.ReadRecordsFiles(opener(env), names, o, warner(env))
	return files, readError(err, o)
}

// opener opens the files a user names, relative to env.Dir.
func opener(env Env) run.Opener {
	return func(name string) (io.ReadCloser, error) { return os.Open(resolve(env, name)) }
}

// warner prints a reading's warnings.
func warner(env Env) func(string) {
	return func(w string) { fmt.Fprintf(env.Stderr, "goodput: warning: %s\n", w) }
}

func runReport(_ context.Context, env Env, o *ReportOptions) error {
	if _, err := o.Summary.options(o.sloWords); err != nil {
		return err
	}
	if o.ReadingSpeedMs <= 0 {
		return usagef("--reading-speed-ms %v: want > 0", o.ReadingSpeedMs)
	}
	switch o.PerRequest {
	case "", "csv", "jsonl":
	default:
		return usagef("--per-request %q: want csv or jsonl", o.PerRequest)
	}
	m, err := run.ReadMerged(opener(env), o.Files, o.Read, o.Force, warner(env))
	if errors.Is(err, runlog.ErrIncompatible) {
		return mergeError(err)
	}
	if err != nil {
		return readError(err, o.Read)
	}
	o.scrapes = m.Scrapes
	recs := m.Records
	res, err := o.Analyze(m.Meta, recs)
	if err != nil {
		return err
	}
	levels := make([]report.LevelSummary, len(res.Levels))
	for i, l := range res.Levels {
		levels[i] = report.LevelSummary{Index: l.Index, Level: l.Level, Summary: l.Summary}
	}
	switch o.PerRequest {
	case "csv":
		if err := report.WritePerRequestCSV(env.Stdout, report.Records(recs)); err != nil {
			return err
		}
	case "jsonl":
		if err := report.WritePerRequestJSONL(env.Stdout, report.Records(recs)); err != nil {
			return err
		}
	default:
		topts := run.TerminalOptions{TermOptions: report.TermOptions{TTY: env.TTY, NoColor: env.Getenv != nil && env.Getenv("NO_COLOR") != ""},
			Headed: true}
		if err := res.Terminal(env.Stdout, topts); err != nil {
			return err
		}
	}
	if o.CSVDir != "" {
		paths, err := report.WriteCSVDir(resolve(env, o.CSVDir), levels, recs)
		if err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
		more, err := report.WriteSessionCSVDir(resolve(env, o.CSVDir), res.Sessions)
		if err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
		paths = append(paths, more...)
		fmt.Fprintf(env.Stderr, "goodput: wrote %s\n", strings.Join(paths, ", "))
	}
	var output run.Output
	if o.JSON != "" {
		doc, err := res.JSON(run.JSONOptions{})
		if err == nil {
			err = output.WriteFile(resolve(env, o.JSON), func(b *bytes.Buffer) error { _, err := b.Write(doc); return err })
		}
		if err != nil {
			return fmt.Errorf("--json: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", o.JSON)
	}
	if o.HTML != "" {
		in := res.HTML(o.Title, env.Now())
		if err := output.WriteFile(resolve(env, o.HTML), func(b *bytes.Buffer) error { return report.HTML(b, in) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: HTML report written to %s\n", o.HTML)
	}
	return nil
}

// Analyze judges merged records as the run that wrote them did: with the
// summary options and reading speed the run stored, each replaced by its
// flag where given (the command's hook; tests call it directly).
func (o *ReportOptions) Analyze(meta *runlog.Meta, recs []runlog.Record) (*run.Result, error) {
	flags, err := o.Summary.options(o.sloWords)
	if err != nil {
		return nil, err
	}
	so, speed, err := run.Given{Stats: flags, ReadingSpeedMs: o.ReadingSpeedMs,
		SLOSet:     o.changed("goodput") || o.changed("slo-preset") || len(o.sloWords) > 0,
		MetricsSet: o.changed("percentile-metrics"), PercentilesSet: o.changed("metric-percentiles"),
		BucketsSet: o.changed("buckets"), ReadingSpeedSet: o.changed("reading-speed-ms"),
	}.Settle(meta)
	if err != nil {
		// Not streamed: only E2E and response time were measured.
		return nil, wholeAnswersError(err, "a run of whole answers")
	}
	ao := run.AnalyzeOptions{Stats: &so, ReadingSpeedMs: speed, Scrapes: o.scrapes}
	if o.changed("gpu-cost-per-hour") || o.changed("num-gpus") {
		c, err := o.Summary.cost()
		if err != nil {
			return nil, err
		}
		ao.Cost = &c
	}
	if o.changed("session-goodput") || o.changed("slo-preset") {
		slo, err := o.Summary.sessionSLO(o.SessionGoodput)
		if err != nil {
			return nil, err
		}
		ao.SessionSLO = &slo
	}
	return run.AnalyzeRecords(meta, recs, ao)
}

// changed says whether the flag was given.
func (o *ReportOptions) changed(flag string) bool { return o.flags != nil && o.flags.Changed(flag) }
