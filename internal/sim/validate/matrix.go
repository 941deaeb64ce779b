package validate

import (
	"math"
	"slices"
	"strings"
)

// Metrics of the matrix, named as vLLM's result keys name them.
const (
	TTFT              = "ttft"               // time to first token, ms
	TPOT              = "tpot"               // time per output token, ms
	ITL               = "itl"                // inter-token latency, ms
	E2E               = "e2el"               // end-to-end latency, ms
	OutputThroughput  = "output_throughput"  // output tokens/s
	RequestThroughput = "request_throughput" // requests/s
)

// latencyMetrics are the per-request metrics, in the matrix's order.
var latencyMetrics = []string{TTFT, TPOT, ITL, E2E}

// throughputMetrics are the run-wide rates, in the matrix's order.
var throughputMetrics = []string{OutputThroughput, RequestThroughput}

// stats of a latency metric, in the matrix's order: the mean and the
// percentiles (P50 is vLLM's "median").
var stats = []string{"mean", "p50", "p90", "p99"}

// statPercentile is a percentile stat's p (per cent); 0 for the mean.
func statPercentile(stat string) float64 {
	switch stat {
	case "p50":
		return 50
	case "p90":
		return 90
	case "p99":
		return 99
	}
	return 0
}

// Samples are one run's per-request figures, ms, and its rates. A nil
// slice means the metric is not known (ITL of a source with no chunk
// times); a zero rate the same.
type Samples struct {
	TTFT, TPOT, ITL, E2E []float64
	// OutputThroughput is output tokens/s and RequestThroughput
	// requests/s, both over first send to last completion.
	OutputThroughput, RequestThroughput float64
}

func (s *Samples) of(metric string) []float64 {
	switch metric {
	case TTFT:
		return s.TTFT
	case TPOT:
		return s.TPOT
	case ITL:
		return s.ITL
	case E2E:
		return s.E2E
	}
	return nil
}

func (s *Samples) rate(metric string) float64 {
	if metric == OutputThroughput {
		return s.OutputThroughput
	}
	return s.RequestThroughput
}

// Figure returns the sample's figure for a latency metric and stat ("mean",
// "p50", ...), or a rate for a throughput metric (stat ""); NaN when
// unknown.
func (s *Samples) Figure(metric, stat string) float64 {
	if slices.Contains(throughputMetrics, metric) {
		if r := s.rate(metric); r > 0 {
			return r
		}
		return math.NaN()
	}
	xs := s.of(metric)
	if len(xs) == 0 {
		return math.NaN()
	}
	if stat == "mean" {
		return Mean(xs)
	}
	return Percentile(sorted(xs), statPercentile(stat))
}

// Figures are a run's aggregate truth keyed as FigureKey names them
// ("mean_ttft_ms", "p99_tpot_ms", "output_throughput"): what a paper's
// table or a sweep's CSV gives. A missing key is a figure not known.
type Figures map[string]float64

// FigureKey is the key of a metric's stat in Figures: vLLM's result key
// ("mean_ttft_ms", "p50_e2el_ms"; P50 also read as "median_") or, for a
// throughput, its name.
func FigureKey(metric, stat string) string {
	if stat == "" {
		return metric
	}
	return stat + "_" + metric + "_ms"
}

// Cell is one figure of one run: the truth, the simulator's, the signed
// error and, where the truth is per request, the tests.
type Cell struct {
	// Run names the run or point.
	Run string
	// Metric is one of TTFT, TPOT, ITL, E2E, OutputThroughput,
	// RequestThroughput; Stat is "mean", "p50", "p90" or "p99" ("" for a
	// throughput).
	Metric, Stat string
	// Unit is "ms", "tok/s" or "req/s".
	Unit string
	// Truth and Sim are the figure measured and simulated; Error is
	// SignedError(Sim, Truth).
	Truth, Sim, Error float64
	// TOST is the equivalence test of this figure, KS the distribution
	// test of the metric (the same on each of its stats); nil where the
	// truth is aggregate only.
	TOST *TOSTResult
	KS   *KSResult
}

// Section is the matrix of one calibration state over every run: the
// uncalibrated simulator (its built-in profiles), or the calibrated one
// (a GPU profile `sim fit` fitted).
type Section struct {
	// Name is "uncalibrated" or "calibrated"; Profile the fitted profile
	// of a calibrated section.
	Name, Profile string
	// Cells are the runs' figures in order: run by run, metric by metric.
	Cells []Cell
}

// Matrix is the accuracy matrix: one Section per calibration state.
type Matrix struct {
	Sections []Section
}

// AddSamples adds run's cells where the truth is per request: every
// latency stat of the metrics both sides know, each with its TOST and the
// metric's KS, then the throughputs both sides know.
func (s *Section) AddSamples(run string, truth, sim *Samples) {
	for _, m := range latencyMetrics {
		tx, sx := truth.of(m), sim.of(m)
		if len(tx) == 0 || len(sx) == 0 {
			continue
		}
		ks := KS(tx, sx)
		for _, st := range stats {
			var t TOSTResult
			if st == "mean" {
				t = TOSTMean(tx, sx, Margin)
			} else {
				t = TOSTPercentile(tx, sx, statPercentile(st), Margin)
			}
			s.Cells = append(s.Cells, Cell{Run: run, Metric: m, Stat: st, Unit: "ms",
				Truth: t.Truth, Sim: t.Sim, Error: SignedError(t.Sim, t.Truth), TOST: &t, KS: &ks})
		}
	}
	s.addRates(run, truth.Figure, sim)
}

// AddFigures adds run's cells where the truth is aggregate: every figure
// the truth gives that the simulated run has, with no tests.
func (s *Section) AddFigures(run string, truth Figures, sim *Samples) {
	for _, m := range latencyMetrics {
		for _, st := range stats {
			t, ok := truth[FigureKey(m, st)]
			x := sim.Figure(m, st)
			if !ok || math.IsNaN(x) {
				continue
			}
			s.Cells = append(s.Cells, Cell{Run: run, Metric: m, Stat: st, Unit: "ms", Truth: t, Sim: x, Error: SignedError(x, t)})
		}
	}
	s.addRates(run, func(m, st string) float64 {
		if t, ok := truth[FigureKey(m, st)]; ok {
			return t
		}
		return math.NaN()
	}, sim)
}

func (s *Section) addRates(run string, truth func(metric, stat string) float64, sim *Samples) {
	for _, m := range throughputMetrics {
		t, x := truth(m, ""), sim.Figure(m, "")
		if math.IsNaN(t) || math.IsNaN(x) {
			continue
		}
		unit := "tok/s"
		if m == RequestThroughput {
			unit = "req/s"
		}
		s.Cells = append(s.Cells, Cell{Run: run, Metric: m, Unit: unit, Truth: t, Sim: x, Error: SignedError(x, t)})
	}
}

// MAPERow is the mean absolute relative error of one metric over every
// run and stat of a section (Metric "all": over every cell).
type MAPERow struct {
	Metric string
	// Percent is the MAPE in per cent; Cells how many figures it averages.
	Percent float64
	Cells   int
}

// MAPE is the section's MAPE per metric, in the matrix's order, then over
// all its cells.
func (s *Section) MAPE() []MAPERow {
	var out []MAPERow
	var all []float64
	for _, m := range append(slices.Clone(latencyMetrics), throughputMetrics...) {
		var errs []float64
		for _, c := range s.Cells {
			if c.Metric == m && !math.IsNaN(c.Error) {
				errs = append(errs, c.Error)
			}
		}
		if len(errs) > 0 {
			out = append(out, MAPERow{Metric: m, Percent: MAPE(errs), Cells: len(errs)})
			all = append(all, errs...)
		}
	}
	if len(all) > 0 {
		out = append(out, MAPERow{Metric: "all", Percent: MAPE(all), Cells: len(all)})
	}
	return out
}

// Label is the cell's figure as a reader names it: "TTFT mean", "TPOT
// P99", "output throughput".
func (c *Cell) Label() string {
	if c.Stat == "" {
		return strings.ReplaceAll(c.Metric, "_", " ")
	}
	name := strings.ToUpper(c.Metric)
	if c.Metric == E2E {
		name = "E2E"
	}
	stat := c.Stat
	if stat != "mean" {
		stat = strings.ToUpper(stat)
	}
	return name + " " + stat
}
