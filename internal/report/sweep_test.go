package report

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// sweepPoint is a level at rate with the given throughput, goodput,
// attainment and P99 TTFT (ms), of 100 requests, as sweep's tests make.
func sweepPoint(rate, thr, goodput, att, p99 float64) sweep.Point {
	p := sweep.Point{
		Summary: stats.Summary{
			Requests: 100, Completed: 100, RequestThroughput: thr, OutputThroughput: 100 * thr, DurationS: 100 / thr,
			Metrics: []stats.MetricSummary{{Name: stats.MetricTTFT, N: 100, Max: p99, Percentiles: []stats.PercentileValue{{P: 99, Value: p99}}}},
			SLO:     stats.SLOSummary{Set: true, Goodput: goodput, Attainment: att},
		},
	}
	p.Level = sweep.AxisRate.At(p.Level, rate)
	return p
}

// TestSweepTerminalBelowCapacity: levels that never saturate put the
// capacity above the range tested; the verdict says so and recommends no
// operating point (sweep's TestAnalyzeBelowCapacity analyses this curve).
func TestSweepTerminalBelowCapacity(t *testing.T) {
	pts := []sweep.Point{sweepPoint(2, 2, 2, 1, 100), sweepPoint(4, 4, 4, 1, 110), sweepPoint(8, 8, 8, 1, 130), sweepPoint(16, 16, 16, 1, 900)}
	res := sweep.Analyze(pts, sweep.Config{Axis: sweep.AxisRate})
	if !res.CapacityAbove || res.Knee != nil {
		t.Fatalf("CapacityAbove %v, Knee %+v; want true and no knee", res.CapacityAbove, res.Knee)
	}
	var b strings.Builder
	if err := SweepTerminal(&b, &res, nil, sweep.Criteria{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Knee: none found: P99 TTFT turns up only at the highest load tested",
		"Throughput peak: 16.00 req/s (1600 output tok/s) at rate=16, the highest load tested (throughput still rising)",
		"Recommended operating point (highest load within SLO, attainment ≥ 99 %): rate=16 (attainment 100.0 %), the highest load tested: no level saturated, so the capacity lies above the range tested",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("SweepTerminal =\n%s\nwant a line containing %q", b.String(), want)
		}
	}
	if strings.Contains(b.String(), "recommended operating point") {
		t.Errorf("SweepTerminal recommends the highest load tested:\n%s", b.String())
	}
	if j := SweepJSON(&res, nil); j["capacity_above_range"] != true || j["knee"] != nil {
		t.Errorf("SweepJSON capacity_above_range %v, knee %v; want true, null", j["capacity_above_range"], j["knee"])
	}
}

// TestSweepTerminal renders a curve whose knee, peaks and violation are
// worked out by hand in sweep's TestAnalyze, in load order whatever the
// run order, with a search result and an early stop.
func TestSweepTerminal(t *testing.T) {
	pts := []sweep.Point{
		sweepPoint(16, 10.5, 2.1, 0.2, 9000),
		sweepPoint(2, 2, 2, 1, 100),
		sweepPoint(4, 4, 4, 1, 110),
		sweepPoint(8, 8, 7.9, 0.99, 130),
		sweepPoint(12, 10.2, 6, 0.59, 1500),
	}
	for i := range pts {
		pts[i].Index = i
	}
	res := sweep.Analyze(pts, sweep.Config{Axis: sweep.AxisRate})
	res.Stopped, res.Skipped = "level 0 saturated", 2
	search := &sweep.SearchResult{Found: true, Capacity: 8.25, Lo: 8, Hi: 8.5, Precision: 0.5, Points: make([]sweep.Point, 3)}
	var b strings.Builder
	if err := SweepTerminal(&b, &res, search, sweep.Criteria{MaxMedianQueueMs: 50}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	// Rows in load order: levels 1, 2, 3, 4, 0; the goodput peak (level 3)
	// starred, the saturated level 0 marked.
	var order, marks []string
	for _, line := range strings.Split(got, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "rate=") {
			order = append(order, f[0])
			marks = append(marks, f[len(f)-1])
		}
	}
	if strings.Join(order, " ") != "1 2 3 4 0" || strings.Join(marks, " ") != "- - * - sat" {
		t.Errorf("curve rows %v, last columns %v; want 1 2 3 4 0 and - - * - sat:\n%s", order, marks, got)
	}
	for _, want := range []string{
		"Knee: 12 req/s (rate=12): P99 TTFT 1500 ms, rising 342.5 ms per req/s vs 5 at low load\n",
		"Throughput peak: 10.50 req/s (1050 output tok/s) at rate=16 — inside SLO violation: 80.0 % of requests miss the SLO there, goodput 73 % below its peak, at 2.00× the goodput peak's load\n",
		"Goodput peak: 7.90 req/s meeting the SLO at rate=8 (attainment 99.0 %)\n",
		"Recommended operating point (highest load within SLO, attainment ≥ 99 %, median queue ≤ 50 ms): rate=8 (attainment 99.0 %, 7.90 req/s meeting the SLO)\n",
		"Max load within SLO (bisection): 8.25 req/s, bracket [8, 8.5], precision 0.5, 3 runs\n",
		"Sweep stopped early: level 0 saturated (2 levels not run)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("SweepTerminal =\n%s\nwant it to contain %q", got, want)
		}
	}
	j := SweepJSON(&res, search)
	if gp, _ := j["goodput_peak"].(map[string]any); gp == nil || gp["level"] != 3 || gp["load"] != 8.0 || gp["label"] != "rate=8" {
		t.Errorf("SweepJSON goodput_peak = %v; want level 3 at load 8", j["goodput_peak"])
	}
	if k, _ := j["knee"].(map[string]any); k == nil || k["slope_ms_per_unit"] != 342.5 || k["level"] != 4 {
		t.Errorf("SweepJSON knee = %v; want level 4, slope 342.5", j["knee"])
	}
	if s, _ := j["search"].(map[string]any); s == nil || s["capacity"] != 8.25 || s["runs"] != 3 {
		t.Errorf("SweepJSON search = %v; want capacity 8.25 over 3 runs", j["search"])
	}
}

// TestSweepTerminalRecommendsWithinSLO: a goodput peak past the SLO is
// shown as what it is, and the recommendation is the highest load within
// SLO, in the terminal, the JSON and the HTML's marks.
func TestSweepTerminalRecommendsWithinSLO(t *testing.T) {
	pts := []sweep.Point{sweepPoint(10, 10, 10, 1, 100), sweepPoint(18.5, 18.4, 18.3, 0.995, 400),
		sweepPoint(21.2, 21, 18.8, 0.894, 2000), sweepPoint(25, 21.5, 10, 0.46, 9000)}
	for i := range pts {
		pts[i].Index = i
	}
	res := sweep.Analyze(pts, sweep.Config{Axis: sweep.AxisRate})
	var b strings.Builder
	if err := SweepTerminal(&b, &res, nil, sweep.Criteria{}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"Goodput peak: 18.80 req/s meeting the SLO at rate=21.2 (attainment 89.4 %) — misses the SLO (attainment 89.40 % < 99 %): not an operating point\n",
		"Recommended operating point (highest load within SLO, attainment ≥ 99 %): rate=18.5 (attainment 99.5 %, 18.30 req/s meeting the SLO)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("SweepTerminal =\n%s\nwant it to contain %q", got, want)
		}
	}
	j := SweepJSON(&res, nil)
	if r, _ := j["recommendation"].(map[string]any); r == nil || r["load"] != 18.5 {
		t.Errorf("SweepJSON recommendation = %v; want load 18.5", j["recommendation"])
	}
	if g, _ := j["goodput_peak"].(map[string]any); g == nil || g["load"] != 21.2 {
		t.Errorf("SweepJSON goodput_peak = %v; want load 21.2", j["goodput_peak"])
	}
}

// TestSweepTerminalInterrupted: a level cut short is marked and named, and
// the JSON lists it.
func TestSweepTerminalInterrupted(t *testing.T) {
	cut := sweepPoint(30, 40, 40, 1, 100)
	cut.Index, cut.Stopped = 2, sweep.Interrupted
	pts := []sweep.Point{sweepPoint(10, 10, 10, 1, 100), sweepPoint(20, 19.9, 19.8, 0.995, 300), cut}
	pts[1].Index = 1
	res := sweep.Analyze(pts, sweep.Config{Axis: sweep.AxisRate})
	var b strings.Builder
	if err := SweepTerminal(&b, &res, nil, sweep.Criteria{}); err != nil {
		t.Fatal(err)
	}
	if want := "Level 2 (rate=30) was interrupted: shown, but left out of the knee, the peaks and the recommendation\n"; !strings.Contains(b.String(), want) {
		t.Errorf("SweepTerminal =\n%s\nwant it to contain %q", b.String(), want)
	}
	if !strings.Contains(b.String(), "rate=30") || !strings.Contains(b.String(), " cut\n") {
		t.Errorf("SweepTerminal =\n%s\nwant the interrupted row marked cut", b.String())
	}
	if got, _ := SweepJSON(&res, nil)["interrupted"].([]int); len(got) != 1 || got[0] != 2 {
		t.Errorf("SweepJSON interrupted = %v; want [2]", got)
	}
}

func TestSweepLevelLine(t *testing.T) {
	p := sweepPoint(8, 7.5, 7.25, 0.967, 130)
	p.Index = 3
	p.Summary.Completed, p.Summary.Failed = 97, 3
	// TTFT has no P50 of its own: its median, 0, stands in.
	p.Summary.Metrics = append(p.Summary.Metrics, stats.MetricSummary{Name: stats.MetricTPOT, N: 97,
		Median: 20.04, Percentiles: []stats.PercentileValue{{P: 50, Value: 20.04}, {P: 99, Value: 31.26}}})
	want := "level 3 rate=8: 97 ok, 3 failed | 7.50 req/s, 750 out tok/s | goodput 7.25 req/s (96.7 %) | TTFT P50/P99 0.0/130.0 ms | TPOT P50/P99 20.0/31.3 ms | SATURATED: fell behind"
	if got := SweepLevelLine(p, "fell behind"); got != want {
		t.Errorf("SweepLevelLine = %q; want %q", got, want)
	}
}
