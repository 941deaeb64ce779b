package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// summaryFlags are the flags that say how records are summarised; report
// and compare share them, with bench's names and meanings.
type summaryFlags struct {
	Goodput           []string
	PercentileMetrics string
	MetricPercentiles string
	Buckets           string
}

// slo parses --goodput plus stray "name:ms" words taken from the arguments.
func (s *summaryFlags) slo(extra []string) (stats.SLO, error) {
	spec := strings.TrimSpace(strings.Join(append(append([]string{}, s.Goodput...), extra...), " "))
	if spec == "" {
		return stats.SLO{}, nil
	}
	slo, err := stats.ParseSLO(spec)
	if err != nil {
		return stats.SLO{}, usagef("--goodput: %v", err)
	}
	return slo, nil
}

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
	Read       report.ReadOptions
	PerRequest string
	CSVDir     string
	HTML       string
	JSON       string
	Title      string
	// ReadingSpeedMs is the reader's speed for the findings, ms per token.
	ReadingSpeedMs float64

	sloWords []string
}

func newReportCmd(env Env) *cobra.Command {
	var o ReportOptions
	cmd := &cobra.Command{
		Use:   "report RECORDS.jsonl...",
		Short: "Re-summarise saved records; write HTML, CSV, JSON or per-request rows",
		Long: `Re-summarise records files written by bench, sweep, sim or proxy without
re-running anything: with another --goodput SLO, other --metric-percentiles,
--percentile-metrics or --buckets. Several files are merged (the levels of a
sweep, the shards of a distributed run) when they come from the same model,
backend, endpoint, dataset and simulated engine; otherwise report refuses
them, naming the field that differs, unless --force.

A line that does not parse, or holds a value out of range, stops report
with its file and line, unless --skip-bad-lines: then every such line is
skipped and named in a warning. A file holding several runs (files
concatenated with cat) is refused unless --merge: then its runs are merged
as separate files are, each on its own clock. Runs that did not overlap in
time are laid end to end, so a level's duration is the sum of its runs'
durations and never spans the idle time between them.`,
		Example: `  goodput report run.records.jsonl --goodput ttft:2000 tpot:50
  goodput report level-*.records.jsonl --html sweep.html
  goodput report run.records.jsonl --per-request csv > requests.csv
  goodput report shard1.jsonl shard2.jsonl --csv out/`,
		Args: atLeast(1, "give one or more records files (or result JSONs) to report on"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files, o.sloWords = splitSLOArgs(env, args, len(o.Summary.Goodput) > 0)
			if len(o.Files) == 0 {
				return usagef("no records file given")
			}
			return runReport(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Summary.Goodput, "goodput", nil, "SLO for goodput, e.g. --goodput ttft:2000 tpot:50 (ms; ttft, tpot, e2el, ttp)")
	fs.StringVar(&o.Summary.PercentileMetrics, "percentile-metrics", defaultPercentileMetrics, "metrics to report percentiles for (response: E2E from the intended send, the backlog included)")
	fs.StringVar(&o.Summary.MetricPercentiles, "metric-percentiles", "50,90,95,99", "percentiles to report")
	fs.StringVar(&o.Summary.Buckets, "buckets", "1024,8192", "input-length bucket edges in tokens (none for no buckets)")
	fs.BoolVar(&o.Force, "force", false, "merge records files even when they come from incompatible runs")
	readFlags(cmd, &o.Read)
	fs.StringVar(&o.PerRequest, "per-request", "", "print one row per request instead of the summary: csv or jsonl")
	fs.StringVar(&o.CSVDir, "csv", "", "write summary.csv, metrics.csv, buckets.csv and requests.csv into this directory")
	fs.StringVar(&o.HTML, "html", "", "write a self-contained HTML report to this file")
	fs.StringVar(&o.JSON, "json", "", "write the result JSON (vLLM's keys) to this file; an array of them for several levels")
	fs.StringVar(&o.Title, "title", "", "title of the HTML report")
	fs.Float64Var(&o.ReadingSpeedMs, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
	return cmd
}

// readFlags registers the flags that say how records files are read,
// shared by report and compare.
func readFlags(cmd *cobra.Command, o *report.ReadOptions) {
	fs := cmd.Flags()
	fs.BoolVar(&o.SkipBadLines, "skip-bad-lines", false, "skip (and name in a warning) every records line that does not parse or holds a value out of range, instead of stopping at the first")
	fs.BoolVar(&o.Merge, "merge", false, "accept a records file holding several runs (files concatenated) and merge its runs, each on its own clock")
}

// readError turns a records reader's error into the command's: a file of
// several runs is a usage error (--merge decides), a bad line says how to
// skip it.
func readError(err error, o report.ReadOptions) error {
	var bad *runlog.BadLineError
	switch {
	case errors.Is(err, report.ErrSeveralRuns):
		return usageError{err}
	case errors.As(err, &bad) && !o.SkipBadLines:
		return fmt.Errorf("%w (--skip-bad-lines skips such lines, naming each in a warning)", err)
	}
	return err
}

// readRecordsFiles reads every file, naming the file in errors; a file of
// several runs gives one RecordsFile per run (with --merge).
func readRecordsFiles(env Env, names []string, o report.ReadOptions) ([]report.RecordsFile, error) {
	var files []report.RecordsFile
	for _, name := range names {
		f, err := os.Open(resolve(env, name))
		if err != nil {
			return nil, fmt.Errorf("records file: %w", err)
		}
		rfs, warns, err := report.ReadRecordsFile(f, name, o)
		f.Close()
		for _, w := range warns {
			fmt.Fprintf(env.Stderr, "goodput: warning: %s\n", w)
		}
		if err != nil {
			return nil, readError(err, o)
		}
		files = append(files, rfs...)
	}
	return files, nil
}

func runReport(_ context.Context, env Env, o *ReportOptions) error {
	so, err := o.Summary.options(o.sloWords)
	if err != nil {
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
	files, err := readRecordsFiles(env, o.Files, o.Read)
	if err != nil {
		return err
	}
	meta, recs, warns, err := report.Merge(files, o.Force)
	for _, w := range warns {
		fmt.Fprintf(env.Stderr, "goodput: warning: %s\n", w)
	}
	if errors.Is(err, report.ErrIncompatible) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if meta != nil && meta.NoStream {
		// Not streamed: only E2E and response time were measured.
		if err := noStreamStats(&so, o.Summary.PercentileMetrics != defaultPercentileMetrics); err != nil {
			return err
		}
	}
	levels := report.SummarizeLevels(meta, recs, so)
	levelFs := analyzeLevels(meta, recs, levels, o.ReadingSpeedMs)

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
		if err := terminalLevels(env, levels, levelFs, meta); err != nil {
			return err
		}
	}
	if o.CSVDir != "" {
		paths, err := report.WriteCSVDir(resolve(env, o.CSVDir), levels, recs)
		if err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: wrote %s\n", strings.Join(paths, ", "))
	}
	if o.JSON != "" {
		if err := writeResultJSON(resolve(env, o.JSON), levels, levelFs, meta); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", o.JSON)
	}
	if o.HTML != "" {
		in := report.HTMLInput{Title: o.Title, Meta: meta, Levels: levels, Records: report.Records(recs), Generated: env.Now()}
		for i, fs := range levelFs {
			if len(levels) > 1 {
				for j := range fs {
					fs[j].Evidence = withLevel(fs[j].Evidence, levels[i].Index)
				}
			}
			in.Findings = append(in.Findings, htmlFindings(fs)...)
		}
		if len(levels) == 1 {
			in.SLA = findings.SLASentence(findings.Input{Summary: &levels[0].Summary, Meta: meta, Level: &levels[0].Level})
		}
		if err := writeHTMLFile(resolve(env, o.HTML), func(w io.Writer) error { return report.HTML(w, in) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: HTML report written to %s\n", o.HTML)
	}
	return nil
}

// analyzeLevels runs the findings rules over each level as the run itself
// did: the per-request timing rules get a Tracker over the level's records,
// the client-bound rule the client CPU the run stored with the level.
func analyzeLevels(meta *runlog.Meta, recs []runlog.Record, levels []report.LevelSummary, readingSpeedMs float64) [][]findings.Finding {
	trackers := map[int]*findings.Tracker{}
	for _, l := range levels {
		trackers[l.Index] = findings.NewTracker()
	}
	for i := range recs {
		if t := trackers[recs[i].Level]; t != nil {
			t.Add(&recs[i])
		}
	}
	out := make([][]findings.Finding, len(levels))
	for i := range levels {
		l := &levels[i]
		out[i] = findings.Analyze(findings.Input{
			Summary: &l.Summary, Meta: meta, Level: &l.Level, Levels: len(levels), Requests: trackers[l.Index],
			ReadingSpeedMs: readingSpeedMs, ClientCPU: l.Level.ClientCPU,
		})
	}
	return out
}

// withLevel returns ev with the level index added (a copy: findings share
// no maps with their callers).
func withLevel(ev map[string]any, level int) map[string]any {
	out := make(map[string]any, len(ev)+1)
	maps.Copy(out, ev)
	out["level"] = level
	return out
}

// terminalLevels prints each level's summary block and its findings, headed
// by its load when there are several.
func terminalLevels(env Env, levels []report.LevelSummary, levelFs [][]findings.Finding, meta *runlog.Meta) error {
	opt := report.TermOptions{TTY: env.TTY, NoColor: env.Getenv != nil && env.Getenv("NO_COLOR") != ""}
	for i, l := range levels {
		if len(levels) > 1 {
			label := fmt.Sprintf("level %d: %s", l.Index, report.LevelName(l, len(levels)))
			if i > 0 {
				fmt.Fprintln(env.Stdout)
			}
			fmt.Fprintf(env.Stdout, "# %s\n", label)
		}
		if err := report.Terminal(env.Stdout, &l.Summary, meta, opt); err != nil {
			return err
		}
		if err := findings.Render(env.Stdout, levelFs[i]); err != nil {
			return err
		}
	}
	return nil
}

func writeResultJSON(path string, levels []report.LevelSummary, levelFs [][]findings.Finding, meta *runlog.Meta) error {
	var parts [][]byte
	for i, l := range levels {
		b, err := report.ResultJSON(&l.Summary, meta, map[string]any{"findings": nonNil(levelFs[i])})
		if err != nil {
			return err
		}
		parts = append(parts, b)
	}
	var out []byte
	if len(parts) == 1 {
		out = parts[0]
	} else {
		out = append(out, "[\n"...)
		for i, p := range parts {
			if i > 0 {
				out = append(out, ",\n"...)
			}
			out = append(out, strings.TrimRight(string(p), "\n")...)
		}
		out = append(out, "\n]\n"...)
	}
	return os.WriteFile(path, out, 0o644)
}

// writeHTMLFile writes a report to path through a temporary file, so a
// failed render does not leave half a page behind.
func writeHTMLFile(path string, render func(io.Writer) error) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".goodput-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := render(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
