package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// The file names WriteCSVDir writes.
const (
	SummaryCSVName  = "summary.csv"
	MetricsCSVName  = "metrics.csv"
	BucketsCSVName  = "buckets.csv"
	RequestsCSVName = "requests.csv"
)

func fcell(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// SummaryColumns are the columns of the summary CSV: one row per level.
// Throughputs are per second, durations in seconds, attainment 0–1; goodput,
// slo_attainment and slo are empty without an SLO.
var SummaryColumns = []string{
	"level", "label", "request_rate", "burstiness", "max_concurrency",
	"requests", "completed", "failed", "warmups", "duration_s",
	"request_throughput", "input_throughput", "output_throughput", "total_token_throughput",
	"peak_output_tokens_per_s", "peak_concurrency", "goodput", "slo_attainment", "slo",
	"input_tokens", "output_tokens", "cached_tokens", "delayed_arrivals",
}

// WriteSummaryCSV writes one row per level (SummaryColumns). request_rate
// is "inf" for an unpaced level, max_concurrency 0 for no cap.
func WriteSummaryCSV(w io.Writer, levels []breakdown.LevelSummary) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(SummaryColumns)
	for _, l := range levels {
		s := &l.Summary
		rate := "inf"
		if l.Level.RequestRate > 0 {
			rate = fcell(l.Level.RequestRate)
		}
		burst := l.Level.Burstiness
		if burst == 0 {
			burst = 1
		}
		var goodput, attain string
		if s.SLO.Set {
			goodput, attain = fcell(s.SLO.Goodput), fcell(s.SLO.Attainment)
		}
		_ = cw.Write([]string{
			strconv.Itoa(l.Index), l.Level.Label, rate, fcell(burst), strconv.Itoa(l.Level.MaxConcurrency),
			strconv.Itoa(s.Requests), strconv.Itoa(s.Completed), strconv.Itoa(s.Failed), strconv.Itoa(s.Warmups),
			fcell(s.DurationS),
			fcell(s.RequestThroughput), fcell(s.InputThroughput), fcell(s.OutputThroughput), fcell(s.TotalTokenThroughput),
			fcell(s.PeakOutputTokensPerS), strconv.Itoa(s.PeakConcurrency), goodput, attain, s.Options.SLO.String(),
			strconv.FormatInt(s.InputTokens, 10), strconv.FormatInt(s.OutputTokens, 10), strconv.FormatInt(s.CachedTokens, 10),
			strconv.Itoa(l.Level.DelayedArrivals),
		})
	}
	cw.Flush()
	return cw.Error()
}

// percentileColumns names the columns for ps: "p50", "p99.9".
func percentileColumns(ps []float64) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = "p" + stats.PercentileName(p)
	}
	return out
}

func metricCells(m stats.MetricSummary, ps []float64) []string {
	out := []string{m.Name, strconv.Itoa(m.N), fcell(m.Mean), fcell(m.Median), fcell(m.Std), fcell(m.Min), fcell(m.Max)}
	for _, p := range ps {
		v, _ := m.P(p)
		out = append(out, fcell(v))
	}
	return out
}

// WriteMetricsCSV writes one row per level and metric: level, metric, n,
// mean, median, std, min, max (milliseconds) and one column per percentile
// of the first level's options (all levels share them).
func WriteMetricsCSV(w io.Writer, levels []breakdown.LevelSummary) error {
	var ps []float64
	if len(levels) > 0 {
		ps = levels[0].Summary.Options.Percentiles
	}
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{"level", "metric", "n", "mean", "median", "std", "min", "max"}, percentileColumns(ps)...))
	for _, l := range levels {
		for _, m := range l.Summary.Metrics {
			_ = cw.Write(append([]string{strconv.Itoa(l.Index)}, metricCells(m, ps)...))
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteBucketsCSV writes one row per level, input-length bucket and metric:
// the bucket's counts (repeated on each of its rows) then the metric's
// figures as in WriteMetricsCSV, with the bucket percentiles (the options'
// plus 50 and 99). A bucket without completed requests has one row with an
// empty metric.
func WriteBucketsCSV(w io.Writer, levels []breakdown.LevelSummary) error {
	var ps []float64
	for _, l := range levels {
		for _, b := range l.Summary.Buckets {
			for _, m := range b.Metrics {
				if len(m.Percentiles) > len(ps) {
					ps = ps[:0]
					for _, pv := range m.Percentiles {
						ps = append(ps, pv.P)
					}
				}
			}
		}
	}
	cw := csv.NewWriter(w)
	head := []string{"level", "bucket", "lo", "hi", "requests", "completed", "failed", "good", "slo_attainment",
		"metric", "n", "mean", "median", "std", "min", "max"}
	_ = cw.Write(append(head, percentileColumns(ps)...))
	for _, l := range levels {
		for _, b := range l.Summary.Buckets {
			hi, attain := "", ""
			if b.Hi > 0 {
				hi = strconv.Itoa(b.Hi)
			}
			if l.Summary.SLO.Set {
				attain = fcell(b.Attainment)
			}
			pre := []string{strconv.Itoa(l.Index), b.Label, strconv.Itoa(b.Lo), hi, strconv.Itoa(b.Requests),
				strconv.Itoa(b.Completed), strconv.Itoa(b.Failed), strconv.Itoa(b.Good), attain}
			wrote := false
			for _, m := range b.Metrics {
				if m.N == 0 {
					continue
				}
				_ = cw.Write(append(append([]string{}, pre...), metricCells(m, ps)...))
				wrote = true
			}
			if !wrote {
				_ = cw.Write(append(pre, make([]string, 7+len(ps))...))
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteCSVDir writes SummaryCSVName, MetricsCSVName, BucketsCSVName and
// RequestsCSVName (the per-request rows of recs) into dir, creating it. It
// returns the paths written.
func WriteCSVDir(dir string, levels []breakdown.LevelSummary, recs []runlog.Record) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{SummaryCSVName, func(w io.Writer) error { return WriteSummaryCSV(w, levels) }},
		{MetricsCSVName, func(w io.Writer) error { return WriteMetricsCSV(w, levels) }},
		{BucketsCSVName, func(w io.Writer) error { return WriteBucketsCSV(w, levels) }},
		{RequestsCSVName, func(w io.Writer) error { return WritePerRequestCSV(w, Records(recs)) }},
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := writeFile(p, f.write); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeFile creates path and fills it with write, reporting the first error
// of writing or closing.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := write(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
