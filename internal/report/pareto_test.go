package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
)

// The frontier by hand: within one length pair, a point is on it unless
// another point within SLO is at least as interactive and as productive
// and better in one; points that miss the SLO never are; pairs are not
// compared with each other.
func TestParetoFrontier(t *testing.T) {
	ps := []breakdown.ParetoPoint{
		{Index: 0, InputLen: 1024, OutputLen: 128, Interactivity: 100, GoodputPerGPU: 5, WithinSLO: true},  // frontier
		{Index: 1, InputLen: 1024, OutputLen: 128, Interactivity: 80, GoodputPerGPU: 9, WithinSLO: true},   // frontier
		{Index: 2, InputLen: 1024, OutputLen: 128, Interactivity: 70, GoodputPerGPU: 8, WithinSLO: true},   // dominated by 1
		{Index: 3, InputLen: 1024, OutputLen: 128, Interactivity: 50, GoodputPerGPU: 20, WithinSLO: false}, // misses the SLO
		{Index: 4, InputLen: 4096, OutputLen: 512, Interactivity: 60, GoodputPerGPU: 3, WithinSLO: true},   // its pair's only point
		{Index: 5, InputLen: 1024, OutputLen: 128, Interactivity: 80, GoodputPerGPU: 9, WithinSLO: true},   // equal to 1: neither dominates
	}
	breakdown.ParetoFrontier(ps)
	want := []bool{true, true, false, false, true, true}
	for i, p := range ps {
		if p.Frontier != want[i] {
			t.Errorf("point %d frontier %v; want %v", i, p.Frontier, want[i])
		}
	}
	var b bytes.Buffer
	for i := range ps {
		ps[i].Concurrency, ps[i].SLOSet, ps[i].Attainment = 1<<i, true, 0.995
	}
	ps[3].Attainment = 0.5
	if err := ParetoTerminal(&b, ps, 2); err != nil {
		t.Fatal(err)
	}
	golden(t, "pareto.golden", b.Bytes())
	m := ParetoJSON(ps, 2)
	pts := m["points"].([]map[string]any)
	if m["num_gpus"] != 2 || len(pts) != 6 || pts[2]["frontier"] != false || pts[1]["tokens_per_s_per_user"] != 80.0 {
		t.Errorf("ParetoJSON = %v", m)
	}
}

// The Pareto chart draws a frontier line per pair and the other levels as
// points; no points, no chart.
func TestParetoChart(t *testing.T) {
	ps := []breakdown.ParetoPoint{
		{InputLen: 1024, OutputLen: 128, Interactivity: 100, GoodputPerGPU: 5, Frontier: true},
		{InputLen: 1024, OutputLen: 128, Interactivity: 80, GoodputPerGPU: 9, Frontier: true},
		{InputLen: 1024, OutputLen: 128, Interactivity: 50, GoodputPerGPU: 20},
		{InputLen: 4096, OutputLen: 512, Interactivity: 60, GoodputPerGPU: 3, Frontier: true},
	}
	svg, err := paretoChart(ps)
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("paretoChart: %v, %.80q", err, svg)
	}
	for _, want := range []string{"1024:128 frontier", "1024:128 other", "4096:512 frontier"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("chart lacks the legend entry %q", want)
		}
	}
	if svg, err := paretoChart(nil); err != nil || svg != "" {
		t.Errorf("no points: %q, %v; want no chart", svg, err)
	}
}
