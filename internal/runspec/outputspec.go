package runspec

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
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
	// MetricsListen serves the client's view as Prometheus metrics on
	// this address during the run ("" none).
	MetricsListen string
}

// Output is where the run writes, relative paths taken from wd (the
// working directory; "" the process's).
func (s *OutputSpec) Output(wd string) run.Output {
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
	return run.Output{
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

// Save writes the result file the spec asks for (saved, or appended to)
// through out and returns the result JSON; note tells where it went.
func (s *OutputSpec) Save(res *run.Result, out run.Output, note func(string)) ([]byte, error) {
	doc, err := res.JSON(run.JSONOptions{Label: s.Label, Detailed: s.SaveDetailed})
	if err != nil {
		return nil, err
	}
	switch {
	case s.AppendResult:
		if err := out.AppendResult(res.ResultPath, doc); err != nil {
			return nil, &setting.OutputError{Field: "AppendResult", Err: err}
		}
		note("result appended to " + res.ResultPath)
	case s.SaveResult:
		path, err := out.WriteResult(res.ResultPath, doc)
		if err != nil {
			return nil, &setting.OutputError{Field: "SaveResult", Err: err}
		}
		note("result saved to " + path)
	}
	return doc, nil
}

// SaveHTML writes the HTML report the spec asks for, if any, stamped now.
func (s *OutputSpec) SaveHTML(res *run.Result, out run.Output, now time.Time, note func(string)) error {
	if s.HTML == "" {
		return nil
	}
	in := res.HTML(run.Title(res.Meta), now)
	if err := out.WriteFile(s.HTML, func(b *bytes.Buffer) error { return report.HTML(b, in) }); err != nil {
		return &setting.OutputError{Field: "HTML", Path: s.HTML, Err: err}
	}
	note("HTML report in " + s.HTML)
	return nil
}

// Live serves the run's live metrics on MetricsListen, once the run's
// meta is known, summarised as so says: start is the run's Hooks.Start,
// stop closes the server. An address that cannot be listened on is a
// *setting.Error.
func (s *OutputSpec) Live(so stats.Options, note func(string)) (start func(*runlog.Meta) ([]run.Sink, error), stop func()) {
	var live *promexport.Live
	start = func(m *runlog.Meta) ([]run.Sink, error) {
		if s.MetricsListen == "" {
			return nil, nil
		}
		var err error
		live, err = promexport.ServeLive(s.MetricsListen, promexport.MetricsOptions{
			SLO: so.SLO, Buckets: so.Buckets, Model: m.Model, Route: promexport.RouteOf(m.Endpoint)})
		switch {
		case errors.Is(err, promexport.ErrListen):
			return nil, setting.Errorf("MetricsListen", "", "%v", err)
		case err != nil:
			return nil, &setting.OutputError{Field: "MetricsListen", Err: err}
		}
		note("live metrics at " + live.URL)
		return []run.Sink{live}, nil
	}
	return start, func() { live.Close() }
}
