package run

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/setting"
)

// OutputSpec is what a run saves, as a user gives it.
type OutputSpec struct {
	// SaveResult saves the result JSON (vLLM's keys); SaveDetailed adds
	// the per-request lists and keeps each answer's text.
	SaveResult, SaveDetailed bool
	// ResultDir holds the result and records files, ResultFilename names
	// the result; Records is the records file ("" beside the result,
	// none: no file).
	ResultDir, ResultFilename, Records string
	// Metadata are K=V pairs saved with the result.
	Metadata []string
	// HTML is the HTML report's file ("" none).
	HTML string
	// Label replaces the backend in the result file name and is the
	// result's label.
	Label string
	// AppendResult appends the result to its file as one JSON line;
	// Overwrite lets a run replace files of the names given.
	AppendResult, Overwrite bool
}

// Output is where the run writes, relative paths taken from wd (the
// working directory; "" the process's).
func (s *OutputSpec) Output(wd string) Output {
	dir := s.ResultDir
	if dir == "" {
		dir = wd
	} else if wd != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	records := s.Records
	if records != "" && records != "none" && records != "-" && wd != "" && !filepath.IsAbs(records) {
		records = filepath.Join(wd, records)
	}
	return Output{
		Dir: dir, ResultName: s.ResultFilename, Label: s.Label, Records: records, Overwrite: s.Overwrite,
		Saving: s.SaveResult && !s.AppendResult, KeepRecords: s.HTML != "" || s.SaveDetailed, KeepText: s.SaveDetailed,
	}
}

// Meta is Metadata as a map.
func (s *OutputSpec) Meta() (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range s.Metadata {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, setting.Errorf("Metadata", strconv.Quote(kv), "want KEY=VALUE")
		}
		m[strings.TrimSpace(k)] = v
	}
	return m, nil
}

// SaveError is a file the setting Field asked for that could not be
// written (Path: the file, "" when Err names it).
type SaveError struct {
	Field, Path string
	Err         error
}

func (e *SaveError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *SaveError) Unwrap() error { return e.Err }

// Save writes the result file the spec asks for (saved, or appended to)
// through out and returns the result JSON; note tells where it went.
func (s *OutputSpec) Save(res *Result, out Output, note func(string)) ([]byte, error) {
	doc, err := res.JSON(JSONOptions{Label: s.Label, Detailed: s.SaveDetailed})
	if err != nil {
		return nil, err
	}
	switch {
	case s.AppendResult:
		if err := out.AppendResult(res.ResultPath, doc); err != nil {
			return nil, &SaveError{Field: "AppendResult", Err: err}
		}
		note("result appended to " + res.ResultPath)
	case s.SaveResult:
		path, err := out.WriteResult(res.ResultPath, doc)
		if err != nil {
			return nil, &SaveError{Field: "SaveResult", Err: err}
		}
		note("result saved to " + path)
	}
	return doc, nil
}

// SaveHTML writes the HTML report the spec asks for, if any, stamped now.
func (s *OutputSpec) SaveHTML(res *Result, out Output, now time.Time, note func(string)) error {
	if s.HTML == "" {
		return nil
	}
	in := res.HTML(Title(res.Meta), now)
	if err := out.WriteFile(s.HTML, func(b *bytes.Buffer) error { return report.HTML(b, in) }); err != nil {
		return &SaveError{Field: "HTML", Path: s.HTML, Err: err}
	}
	note("HTML report in " + s.HTML)
	return nil
}
