package review

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// fieldOf is the field a *setting.Error names, "-" for another error and
// "" for none.
func fieldOf(err error) string {
	var se *setting.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return se.Field
	}
	return "-"
}

func TestReportSettingErrorsByField(t *testing.T) {
	cases := []struct {
		name, field string
		err         error
	}{
		{"cost", "GPUCostPerHour", run.Cost{GPUCostPerHour: -1}.Check()},
		{"cost NaN", "GPUCostPerHour", run.Cost{GPUCostPerHour: math.NaN()}.Check()},
		{"gpus", "NumGPUs", run.Cost{NumGPUs: -2}.Check()},
		{"priced", "", run.Cost{GPUCostPerHour: 2, NumGPUs: 8}.Check()},
		{"reading speed", "ReadingSpeedMs", (&ReportSpec{}).Check()},
		{"per request", "PerRequest", (&ReportSpec{ReadingSpeedMs: 50, PerRequest: "xml"}).Check()},
		{"report", "", (&ReportSpec{ReadingSpeedMs: 50, PerRequest: "jsonl"}).Check()},
		{"fit files", "", Fit(&FitSpec{}, Files{})},
		{"fit network", "Network", Fit(&FitSpec{Files: []string{"x"}, Network: -1}, Files{})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fieldOf(c.err); got != c.field || (c.name == "fit files" && c.err == nil) {
				t.Errorf("got %v naming %q; want %q", c.err, got, c.field)
			}
		})
	}
}

func TestCompareSettingErrorsByField(t *testing.T) {
	ok := CompareSpec{Spec: stats.Spec{PercentileMetrics: "ttft", MetricPercentiles: "50"}, Resamples: 100, Confidence: 0.9, ReadingSpeedMs: 50}
	cases := []struct {
		name, field string
		edit        func(*CompareSpec)
	}{
		{"ok", "", func(*CompareSpec) {}},
		{"itl", "PercentileMetrics", func(s *CompareSpec) { s.PercentileMetrics = "ttft,itl" }},
		{"metrics", "PercentileMetrics", func(s *CompareSpec) { s.PercentileMetrics = "speed" }},
		{"session", "SessionGoodput", func(s *CompareSpec) { s.SessionGoodput = "ttp:x" }},
		{"resamples", "Resamples", func(s *CompareSpec) { s.Resamples = 99 }},
		{"confidence", "Confidence", func(s *CompareSpec) { s.Confidence = 1 }},
		{"reading speed", "ReadingSpeedMs", func(s *CompareSpec) { s.ReadingSpeedMs = 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			_, err := s.options()
			if got := fieldOf(err); got != c.field {
				t.Errorf("options() = %v naming %q; want %q", err, got, c.field)
			}
		})
	}
	// Checked before any file is opened.
	s := ok
	s.Resamples = 1
	open := func(string) (io.ReadCloser, error) { t.Fatal("opened a file"); return nil, nil }
	if err := Compare(&s, Files{Open: open}); fieldOf(err) != "Resamples" {
		t.Errorf("Compare: %v", err)
	}
}

func TestReanalysisTakesWhatWasGiven(t *testing.T) {
	given := func(fs ...string) setting.Given {
		return func(f string) bool {
			for _, g := range fs {
				if g == f {
					return true
				}
			}
			return false
		}
	}
	s := &ReportSpec{ReadingSpeedMs: 50, SLOWords: []string{"ttft:100"},
		Summary: SummarySpec{Spec: stats.Spec{Goodput: []string{"tpot:50"}, SessionGoodput: "ttp:x"}, Cost: run.Cost{NumGPUs: -1}}}
	a, err := s.Reanalysis(nil)
	if err != nil || !a.SLOSet || a.MetricsSet || a.Cost != nil || a.SessionSLO != nil {
		t.Errorf("nothing given: %+v, %v; want the SLO words alone taken", a, err)
	}
	if _, err := s.Reanalysis(given("Summary.NumGPUs")); fieldOf(err) != "Summary.NumGPUs" {
		t.Errorf("cost given: %v; want Summary.NumGPUs refused", err)
	}
	if _, err := s.Reanalysis(given("Summary.SLOPreset")); fieldOf(err) != "Summary.SessionGoodput" {
		t.Errorf("preset given: %v; want Summary.SessionGoodput refused", err)
	}
	s.Summary.MetricPercentiles = "200"
	if _, err := s.Reanalysis(nil); fieldOf(err) != "Summary.MetricPercentiles" {
		t.Errorf("bad percentiles: %v", err)
	}
}

func TestSplitArgsKeepsFilesNamedLikeSLOWords(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ttp:5"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := Files{Path: func(p string) string { return filepath.Join(dir, p) }}
	files, slo := f.SplitArgs([]string{"a.jsonl", "tpot:50", "ttp:5", "e2el:9"}, true)
	if fmt.Sprint(files, slo) != "[a.jsonl ttp:5] [tpot:50 e2el:9]" {
		t.Errorf("with --goodput: files %q, slo %q", files, slo)
	}
	if files, slo = f.SplitArgs([]string{"a.jsonl", "tpot:50"}, false); len(files) != 2 || slo != nil {
		t.Errorf("without --goodput: files %q, slo %q; want every word a file", files, slo)
	}
}

func TestReportWantsAFile(t *testing.T) {
	var se *setting.Error
	if err := Report(&ReportSpec{}, nil, run.TerminalOptions{}, Files{}); !errors.As(err, &se) || se.Error() != "no records file given" {
		t.Errorf("Report of no files = %v; want the setting error", err)
	}
}

func TestCompareSetArgs(t *testing.T) {
	f := Files{Path: func(p string) string { return filepath.Join(t.TempDir(), p) }}
	s := CompareSpec{Spec: stats.Spec{Goodput: []string{"ttft:1"}}}
	if err := s.SetArgs([]string{"a", "tpot:5", "b"}, f); err != nil || s.A != "a" || s.B != "b" || len(s.Goodput) != 2 {
		t.Errorf("SetArgs = %v: %+v", err, s)
	}
	if err := s.SetArgs([]string{"a"}, f); fieldOf(err) != "" || err == nil {
		t.Errorf("SetArgs of one file = %v; want a setting error", err)
	}
}

func TestDirFilesResolveInDir(t *testing.T) {
	var stderr strings.Builder
	f := DirFiles("/w", io.Discard, &stderr, nil)
	if f.Path("a.jsonl") != filepath.Join("/w", "a.jsonl") || f.Path("/abs") != "/abs" || f.Path("-") != "-" {
		t.Errorf("Path: %q %q %q", f.Path("a.jsonl"), f.Path("/abs"), f.Path("-"))
	}
	f.Warn("w")
	f.Note("n")
	if stderr.String() != "goodput: warning: w\ngoodput: n\n" {
		t.Errorf("stderr %q", stderr.String())
	}
	if DirFiles("", nil, nil, nil).Path("a") != "a" {
		t.Error("no dir: want the path as given")
	}
}
