package simvalidate

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/shareddata"
	"github.com/goodput/goodput/internal/sim"
)

// measured is each figure's signed error on the shared runs as measured
// when the gate was set (2026-12-05, docs/simulator.md's accuracy table),
// keyed "run/figure".
var measured = map[string]float64{
	"RTXPRO6000_Llama-3.1-8B/TTFT mean":          0.0269,
	"RTXPRO6000_Llama-3.1-8B/TTFT P50":           -0.0313,
	"RTXPRO6000_Llama-3.1-8B/TTFT P90":           0.0296,
	"RTXPRO6000_Llama-3.1-8B/TTFT P99":           0.0441,
	"RTXPRO6000_Llama-3.1-8B/TPOT mean":          0.0064,
	"RTXPRO6000_Llama-3.1-8B/TPOT P50":           0.0172,
	"RTXPRO6000_Llama-3.1-8B/TPOT P90":           0.0418,
	"RTXPRO6000_Llama-3.1-8B/TPOT P99":           0.0477,
	"RTXPRO6000_Llama-3.1-8B/E2E mean":           0.0113,
	"RTXPRO6000_Llama-3.1-8B/E2E P50":            0.0241,
	"RTXPRO6000_Llama-3.1-8B/E2E P90":            0.0056,
	"RTXPRO6000_Llama-3.1-8B/E2E P99":            0.0142,
	"RTXPRO6000_Llama-3.1-8B/output throughput":  0.0158,
	"RTXPRO6000_Llama-3.1-8B/request throughput": 0.0158,
	"fig8_SD_latency/TTFT mean":                  0.0246,
	"fig8_SD_latency/TPOT mean":                  -0.0911,
	"fig8_SD_latency/output throughput":          0.0608,
	"fig8_MD_latency/TTFT mean":                  -0.0656,
	"fig8_MD_latency/TPOT mean":                  -0.1323,
	"fig8_MD_latency/output throughput":          0.0570,
	"fig8_PDD_latency/TTFT mean":                 -0.6556,
	"fig8_PDD_latency/TPOT mean":                 -0.3161,
	"fig8_PDD_latency/output throughput":         0.0859,
}

// TestAccuracyGate replays every shared real run through the simulator
// (scripts/sim-accuracy/runs.txt, the inputs of scripts/sim-accuracy.sh) and fails when a figure's
// error has grown past its bound: today's |error| plus max(2 points, 20 %
// of it).
//
// It is a regression gate, not an accuracy claim: the bounds are what the
// simulator measures today, so a change that moves it further from the
// real runs fails here and must either be fixed or shown (in
// docs/simulator.md's table, regenerated) to be worth it. A figure that
// got better passes; lower its entry to hold the gain. The matrix's shape
// is checked too, so a figure cannot drop out unnoticed.
func TestAccuracyGate(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The shared runs and their deployments, as scripts/sim-accuracy.sh
	// reads them: one list for the published table and the gate.
	list, err := os.ReadFile(filepath.Join(root, "scripts", "sim-accuracy", "runs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Base: sim.DefaultConfig()}
	for i, l := range strings.Split(string(list), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("runs.txt:%d: want TRUTH DEPLOYMENT", i+1)
		}
		s.Inputs = append(s.Inputs, Input{Truth: shareddata.Path(t, f[0]), Deployment: filepath.Join(root, filepath.FromSlash(f[1]))})
	}
	m, err := Validate(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	m.WriteText(&text)
	t.Logf("accuracy matrix:\n%s", text.String())
	got := map[string]float64{}
	var table strings.Builder
	for _, c := range m.Sections[0].Cells {
		key := c.Run + "/" + c.Label()
		got[key] = c.Error
		fmt.Fprintf(&table, "\t%q: %.4f,\n", key, c.Error)
	}
	var bad []string
	for key, e := range got {
		today, ok := measured[key]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: a figure the gate does not know (error %+.1f%%)", key, 100*e))
			continue
		}
		if bound := Bound(today); math.IsNaN(e) || math.Abs(e) > bound {
			bad = append(bad, fmt.Sprintf("%s: error %+.1f%% is past its bound ±%.1f%% (measured %+.1f%% when the gate was set)", key, 100*e, 100*bound, 100*today))
		}
	}
	for key := range measured {
		if _, ok := got[key]; !ok {
			bad = append(bad, key+": the matrix no longer has this figure")
		}
	}
	if len(bad) > 0 {
		t.Errorf("the simulator moved away from the shared real runs:\n%s\n\nToday's errors, to paste into measured once the change is shown worth it:\n%s", strings.Join(bad, "\n"), table.String())
	}
}

// Bound is the gate's limit on a figure's |error| given the error
// measured when the gate was set: that plus max(2 points, 20 % of it).
func Bound(today float64) float64 {
	a := math.Abs(today)
	return a + math.Max(0.02, 0.2*a)
}
