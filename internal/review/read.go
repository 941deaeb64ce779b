package review

import (
	"fmt"
	"io"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Reading runs back from their files: the records files that report, sim
// fit and compare judge again. Warnings (lines skipped, shards missing)
// go to warn as they arise, so that they come before an error that stops
// the reading.

// Opener opens a file a user named (relative to wherever the caller
// resolves names).
type Opener func(name string) (io.ReadCloser, error)

// ReadRecordsFiles reads every named records file; a file of several runs
// gives one RecordsFile per run (with o.Merge). An error that is the
// file's (it does not open) names the file; a bad line is a
// *runlog.BadLineError, a file of several runs without o.Merge
// runlog.ErrSeveralRuns.
func ReadRecordsFiles(open Opener, names []string, o runlog.ReadOptions, warn func(string)) ([]runlog.RecordsFile, error) {
	var files []runlog.RecordsFile
	for _, name := range names {
		f, err := open(name)
		if err != nil {
			return nil, fmt.Errorf("records file: %w", err)
		}
		rfs, warns, err := runlog.ReadRecordsFile(f, name, o)
		f.Close()
		for _, w := range warns {
			warn(w)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, rfs...)
	}
	return files, nil
}

// Merged is records files merged into one run.
type Merged struct {
	Meta    *runlog.Meta
	Records []runlog.Record
	// Scrapes are the runs' scrapes of their servers, on the merged clock.
	Scrapes []runlog.Scrape
}

// ReadMerged reads the named records files (ReadRecordsFiles) and merges
// them onto one clock (runlog.Merge): files from incompatible runs give an
// error wrapping runlog.ErrIncompatible unless force.
func ReadMerged(open Opener, names []string, o runlog.ReadOptions, force bool, warn func(string)) (*Merged, error) {
	files, err := ReadRecordsFiles(open, names, o, warn)
	if err != nil {
		return nil, err
	}
	meta, recs, warns, err := runlog.Merge(files, force)
	for _, w := range warns {
		warn(w)
	}
	if err != nil {
		return nil, err
	}
	scrapes, err := runlog.MergeScrapes(files)
	if err != nil {
		return nil, err
	}
	return &Merged{Meta: meta, Records: recs, Scrapes: scrapes}, nil
}

// CompareSide is one side of a comparison as read from its file.
type CompareSide struct {
	// Run is what compare judges; Report what its HTML shows (empty for a
	// result JSON, which has no records).
	Run    compare.Run
	Report report.CompareSide
}

// ReadCompareSide reads one side of a comparison from r, a records file
// or a result JSON named name, summarising its levels with so. A file of
// several runs (read with o.Merge) is merged into one side, each run on its
// own clock, refused with an error wrapping runlog.ErrIncompatible when
// the runs differ, unless force.
func ReadCompareSide(r io.Reader, name string, so stats.Options, o runlog.ReadOptions, force bool, warn func(string)) (CompareSide, error) {
	in, warns, err := report.ReadInput(r, name, o)
	for _, w := range warns {
		warn(w)
	}
	if err != nil {
		return CompareSide{}, err
	}
	if in.Result != nil {
		return CompareSide{Run: compare.Run{Name: name, Figures: report.Figures(in.Result)}}, nil
	}
	meta, recs := in.Records[0].Meta, in.Records[0].Records
	if len(in.Records) > 1 {
		var warns []string
		meta, recs, warns, err = runlog.Merge(in.Records, force)
		for _, w := range warns {
			warn(w)
		}
		if err != nil {
			return CompareSide{}, err
		}
	}
	return CompareSide{
		Run:    compare.Run{Name: name, Records: recs, Meta: meta},
		Report: report.CompareSide{Meta: meta, Records: recs, Levels: breakdown.SummarizeLevels(meta, recs, so)},
	}, nil
}
