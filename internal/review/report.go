package review

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// Files say how a command over saved runs reaches its files and streams.
type Files struct {
	Open Opener
	// Path is where an output file named by the user lies.
	Path func(name string) string
	// Stdout takes the report; Note and Warn the lines about it.
	Stdout     io.Writer
	Note, Warn func(string)
	Now        func() time.Time
}

// DirFiles are the files of a user working in dir ("" the working
// directory), relative paths relative to it, with notes and warnings
// written to stderr.
func DirFiles(dir string, stdout, stderr io.Writer, now func() time.Time) Files {
	path := func(p string) string {
		if dir == "" || filepath.IsAbs(p) || p == "-" {
			return p
		}
		return filepath.Join(dir, p)
	}
	return Files{Open: func(name string) (io.ReadCloser, error) { return os.Open(path(name)) }, Path: path, Stdout: stdout,
		Note: func(s string) { fmt.Fprintf(stderr, "goodput: %s\n", s) },
		Warn: func(w string) { fmt.Fprintf(stderr, "goodput: warning: %s\n", w) }, Now: now}
}

// SplitArgs separates SLO words, which follow Goodput's first term when
// goodput says it was given, from file arguments; a word naming an
// existing file stays a file.
func (f Files) SplitArgs(args []string, goodput bool) (files, slo []string) {
	for _, a := range args {
		if goodput && stats.IsSLOTerm(a) {
			if _, err := os.Stat(f.Path(a)); err != nil {
				slo = append(slo, a)
				continue
			}
		}
		files = append(files, a)
	}
	return files, slo
}

// writeFile renders a file named by the setting field.
func (f Files) writeFile(field, name, note string, render func(*bytes.Buffer) error) error {
	var out run.Output
	if err := out.WriteFile(f.Path(name), render); err != nil {
		return &setting.OutputError{Field: field, Err: err}
	}
	f.Note(fmt.Sprintf(note, name))
	return nil
}

// SummarySpec is how records are summarised and priced, as a user
// writes it.
type SummarySpec struct {
	stats.Spec
	run.Cost
}

// readSettings names the settings that would read err's files: Force
// for runs that differ, Read.Merge for several runs in one file (fields
// of ReportSpec and CompareSpec); other errors pass as they are.
func readSettings(err error) error {
	switch {
	case errors.Is(err, runlog.ErrIncompatible):
		return setting.Errorf("", "", "%v; use %v to merge them anyway", err, setting.Name("Force"))
	case errors.Is(err, runlog.ErrSeveralRuns):
		return setting.Errorf("", "", "%v; give %v to summarise them together, each run on its own clock", err, setting.Name("Read.Merge"))
	}
	return err
}

// ReportSpec is "goodput report": records files merged into one run,
// judged again and written out.
type ReportSpec struct {
	Files []string
	// SLOWords are stray "name:ms" words that extend Summary.Goodput.
	SLOWords []string
	// Summary replaces the run's stored setting wherever one was given.
	Summary SummarySpec
	// Force merges files from incompatible runs; Read says how they read.
	Force bool
	Read  runlog.ReadOptions
	// PerRequest prints one row per request instead of the summary: csv
	// or jsonl.
	PerRequest string
	// CSVDir, HTML and JSON are output paths ("": none); Title heads the
	// HTML.
	CSVDir, HTML, JSON, Title string
	// ReadingSpeedMs is the findings' reading speed, ms per token.
	ReadingSpeedMs float64
}

// Check refuses settings no report has.
func (s *ReportSpec) Check() error {
	if !(s.ReadingSpeedMs > 0) {
		return setting.Errorf("ReadingSpeedMs", fmt.Sprint(s.ReadingSpeedMs), "want > 0")
	}
	switch s.PerRequest {
	case "", "csv", "jsonl":
		return nil
	}
	return setting.Errorf("PerRequest", strconv.Quote(s.PerRequest), "want csv or jsonl")
}

// Reanalysis is what a report judges saved records with: the settings
// given again (Overrides), the price and the session SLO where given.
type Reanalysis struct {
	runspec.Overrides
	Cost       *run.Cost
	SessionSLO *stats.SessionSLO
}

// Reanalysis checks the summary settings; given (field paths of the
// spec) says which replace the run's own.
func (s *ReportSpec) Reanalysis(given setting.Given) (Reanalysis, error) {
	sum := &s.Summary
	so, err := sum.Options(s.SLOWords)
	if err != nil {
		return Reanalysis{}, setting.Within("Summary", err)
	}
	a := Reanalysis{Overrides: runspec.Overrides{Stats: so, ReadingSpeedMs: s.ReadingSpeedMs,
		SLOSet:     given.Has("Summary.Goodput") || given.Has("Summary.SLOPreset") || len(s.SLOWords) > 0,
		MetricsSet: given.Has("Summary.PercentileMetrics"), PercentilesSet: given.Has("Summary.MetricPercentiles"),
		BucketsSet: given.Has("Summary.Buckets"), ConfidenceSet: given.Has("Summary.Confidence"), ReadingSpeedSet: given.Has("ReadingSpeedMs")}}
	if given.Has("Summary.GPUCostPerHour") || given.Has("Summary.NumGPUs") {
		if err := sum.Cost.Check(); err != nil {
			return a, setting.Within("Summary", err)
		}
		a.Cost = &sum.Cost
	}
	if given.Has("Summary.SessionGoodput") || given.Has("Summary.SLOPreset") {
		slo, err := sum.SessionSLO()
		if err != nil {
			return a, setting.Within("Summary", err)
		}
		a.SessionSLO = &slo
	}
	return a, nil
}

// Analyze judges merged records as the run that wrote them did, but for
// the settings given (Reanalysis).
func (s *ReportSpec) Analyze(meta *runlog.Meta, recs []runlog.Record, scrapes []runlog.Scrape, given setting.Given) (*run.Result, error) {
	a, err := s.Reanalysis(given)
	if err != nil {
		return nil, err
	}
	so, speed, err := a.Settle(meta)
	if err != nil {
		return nil, err
	}
	if meta != nil && meta.Model == "" {
		// Live traffic's Meta names no model; its records say which ones
		// the clients asked for.
		if seen := modelsSeen(recs); seen != "" {
			mm := *meta
			mm.Model = seen
			meta = &mm
		}
	}
	return run.AnalyzeRecords(meta, recs, run.AnalyzeOptions{Stats: &so, ReadingSpeedMs: speed, Scrapes: scrapes,
		Cost: a.Cost, SessionSLO: a.SessionSLO})
}

// Report checks the spec, reads and merges its files (ReadMerged), judges
// them (Analyze) and prints and writes what the spec asks. Files that
// Force or Read.Merge would merge are a *setting.Error naming it.
func Report(s *ReportSpec, given setting.Given, term run.TerminalOptions, f Files) error {
	if len(s.Files) == 0 {
		return setting.Errorf("", "", "no records file given")
	}
	if _, err := s.Reanalysis(given); err != nil {
		return err
	}
	if err := s.Check(); err != nil {
		return err
	}
	m, err := ReadMerged(f.Open, s.Files, s.Read, s.Force, f.Warn)
	if err != nil {
		return readSettings(err)
	}
	res, err := s.Analyze(m.Meta, m.Records, m.Scrapes, given)
	if err != nil {
		return err
	}
	switch s.PerRequest {
	case "csv":
		err = report.WritePerRequestCSV(f.Stdout, report.Records(m.Records))
	case "jsonl":
		err = report.WritePerRequestJSONL(f.Stdout, report.Records(m.Records))
	default:
		err = res.Terminal(f.Stdout, term)
	}
	if err != nil {
		return err
	}
	if s.CSVDir != "" {
		levels := make([]breakdown.LevelSummary, len(res.Levels))
		for i, l := range res.Levels {
			levels[i] = breakdown.LevelSummary{Index: l.Index, Level: l.Level, Summary: l.Summary}
		}
		paths, err := report.WriteCSVDir(f.Path(s.CSVDir), levels, m.Records)
		if err == nil {
			var more []string
			more, err = report.WriteSessionCSVDir(f.Path(s.CSVDir), res.Sessions)
			paths = append(paths, more...)
		}
		if err != nil {
			return &setting.OutputError{Field: "CSVDir", Err: err}
		}
		f.Note("wrote " + strings.Join(paths, ", "))
	}
	if s.JSON != "" {
		doc, err := res.JSON(run.JSONOptions{})
		if err != nil {
			return &setting.OutputError{Field: "JSON", Err: err}
		}
		if err := f.writeFile("JSON", s.JSON, "result saved to %s", func(b *bytes.Buffer) error { _, err := b.Write(doc); return err }); err != nil {
			return err
		}
	}
	if s.HTML != "" {
		in := res.HTML(s.Title, f.Now())
		return f.writeFile("HTML", s.HTML, "HTML report written to %s", func(b *bytes.Buffer) error { return report.HTML(b, in) })
	}
	return nil
}

// CompareSpec is "goodput compare": run B judged against the baseline A.
type CompareSpec struct {
	A, B string
	// Spec's SLOs judge both runs; its MetricPercentiles and
	// PercentileMetrics say what is compared (its Buckets are unused).
	stats.Spec
	Resamples      int
	Confidence     float64
	Seed           uint64
	ReadingSpeedMs float64
	// HTML is the side-by-side report's path ("": none).
	HTML string
	// Read says how records files read; Force merges a file's runs (with
	// Read.Merge) even when they differ.
	Read  runlog.ReadOptions
	Force bool
}

// options are the checked settings.
func (s *CompareSpec) options() (compare.Options, error) {
	so, err := s.Spec.Options(nil)
	if err != nil {
		return compare.Options{}, err
	}
	sess, err := s.SessionSLO()
	if err != nil {
		return compare.Options{}, err
	}
	for _, m := range so.Metrics {
		if m == stats.MetricITL {
			return compare.Options{}, setting.Errorf("PercentileMetrics", "", "itl cannot be compared with intervals (its gaps are not independent samples); compare tpot")
		}
	}
	switch {
	case s.Resamples < 100:
		return compare.Options{}, setting.Errorf("Resamples", strconv.Itoa(s.Resamples), "want at least 100")
	case !(s.Confidence > 0 && s.Confidence < 1):
		return compare.Options{}, setting.Errorf("Confidence", fmt.Sprint(s.Confidence), "want a number between 0 and 1, e.g. 0.95")
	case !(s.ReadingSpeedMs > 0 && s.ReadingSpeedMs < 1e6):
		return compare.Options{}, setting.Errorf("ReadingSpeedMs", fmt.Sprint(s.ReadingSpeedMs), "want a positive number of milliseconds per token")
	}
	return compare.Options{SLO: so.SLO, Percentiles: so.Percentiles, Metrics: so.Metrics, Resamples: s.Resamples,
		Confidence: s.Confidence, Seed: s.Seed, SessionSLO: sess,
		ReadingSpeed: time.Duration(s.ReadingSpeedMs * float64(time.Millisecond))}, nil
}

// SetArgs takes the command's arguments: the runs A and B, and SLO words
// that extend Goodput.
func (s *CompareSpec) SetArgs(args []string, f Files) error {
	names, slo := f.SplitArgs(args, len(s.Goodput) > 0)
	if len(names) != 2 {
		return setting.Errorf("", "", "compare takes two files, A and B; got %d", len(names))
	}
	s.A, s.B, s.Goodput = names[0], names[1], append(s.Goodput, slo...)
	return nil
}

// Compare reads both runs, prints the comparison and writes its HTML. A
// comparison the runs do not allow, or runs that Force or Read.Merge
// would merge, is a *setting.Error.
func Compare(s *CompareSpec, f Files) error {
	co, err := s.options()
	if err != nil {
		return err
	}
	so := stats.Options{SLO: co.SLO, Percentiles: co.Percentiles}
	var sides [2]CompareSide
	for i, name := range []string{s.A, s.B} {
		r, err := f.Open(name)
		if err != nil {
			return err
		}
		sides[i], err = ReadCompareSide(r, name, so, s.Read, s.Force, f.Warn)
		r.Close()
		if err != nil {
			return readSettings(err)
		}
	}
	c, err := compare.Compare(sides[0].Run, sides[1].Run, co)
	if err != nil {
		return setting.Errorf("", "", "%v", err)
	}
	if err := report.CompareTerminal(f.Stdout, c); err != nil {
		return err
	}
	if s.HTML == "" {
		return nil
	}
	in := report.CompareHTMLInput{Comparison: c, A: sides[0].Report, B: sides[1].Report, Generated: f.Now()}
	return f.writeFile("HTML", s.HTML, "HTML report written to %s", func(b *bytes.Buffer) error { return report.CompareHTML(b, in) })
}

// modelsSeen names the models the records asked for, the most requested
// first: "m" for one, "a, b" for two or three, "a, b, c and 4 more" past
// that; "" when no record names one.
func modelsSeen(recs []runlog.Record) string {
	n := map[string]int{}
	for i := range recs {
		if m := recs[i].Model; m != "" {
			n[m]++
		}
	}
	names := make([]string, 0, len(n))
	for m := range n {
		names = append(names, m)
	}
	slices.SortFunc(names, func(a, b string) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return strings.Compare(a, b)
	})
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}
