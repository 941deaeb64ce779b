package report

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gonum.org/v1/plot/plotter"

	"github.com/goodput/goodput/internal/breakdown"
	sm "github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// vllmSnapshots are five scrapes of a vLLM-like server, one a second, with
// a restart before the fourth (both token counters fall).
func vllmSnapshots() []sm.Snapshot {
	type v struct{ running, waiting, kv, prompt, gen float64 }
	vals := []v{
		{0, 0, 0, 0, 0},
		{4, 2, 0.25, 1000, 200},
		{8, 5, 0.6, 3000, 700},
		{2, 0, 0.05, 500, 50},
		{6, 1, 0.4, 2500, 450},
	}
	var out []sm.Snapshot
	for i, x := range vals {
		out = append(out, sm.Snapshot{TimeNS: int64(i) * 1e9, Kind: sm.KindVLLM, Values: map[sm.Name]float64{
			sm.Running: x.running, sm.Waiting: x.waiting, sm.KVUsage: x.kv,
			sm.PromptTokens: x.prompt, sm.GenerationTokens: x.gen,
		}})
	}
	return out
}

// dcgmSnapshots are three scrapes of a DCGM exporter with two GPUs.
func dcgmSnapshots() []sm.Snapshot {
	gpu := func(id string, util, watts float64) sm.GPU {
		return sm.GPU{ID: id, Model: "NVIDIA H100", Values: map[sm.Name]float64{sm.GPUUtil: util, sm.GPUPowerWatts: watts}}
	}
	var out []sm.Snapshot
	for i, load := range []float64{0.1, 0.9, 0.5} {
		out = append(out, sm.Snapshot{TimeNS: int64(i)*2e9 + 5e8, Kind: sm.KindDCGM,
			Values: map[sm.Name]float64{sm.GPUUtil: load, sm.GPUPowerWatts: 2 * (100 + 500*load)},
			GPUs:   []sm.GPU{gpu("0", load, 100+500*load), gpu("1", load*0.8, 90+450*load)}})
	}
	return out
}

func serverPage(t *testing.T, server []breakdown.ServerSeries) []byte {
	t.Helper()
	meta := handMeta()
	levels := breakdown.SummarizeLevels(meta, handRecords(), stats.Options{})
	return renderHTML(t, HTMLInput{Meta: meta, Levels: levels, Records: Records(handRecords()), Server: server})
}

// TestHTMLServerGolden: a vLLM server's and a DCGM exporter's scrapes draw
// the section's five charts.
func TestHTMLServerGolden(t *testing.T) {
	page := serverPage(t, []breakdown.ServerSeries{
		{Target: "server", Snapshots: vllmSnapshots()},
		{Target: "dcgm", Snapshots: dcgmSnapshots()},
	})
	sec := section(t, page, "Server side")
	for _, title := range []string{
		"Requests running and waiting (server)", "KV cache usage (server)", "Server token throughput (server)",
		"GPU power (dcgm)", "GPU utilisation (dcgm)",
	} {
		if !strings.Contains(string(sec), `aria-label="`+title+`"`) {
			t.Errorf("server section lacks the chart %q", title)
		}
	}
	if got := strings.Count(string(sec), "<figure>"); got != 5 {
		t.Errorf("server section has %d charts; want 5", got)
	}
	golden(t, "html_server.golden", sec)
}

// TestHTMLServerAbsent: without snapshots, or with too few to draw a line,
// there is no server section.
func TestHTMLServerAbsent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server []breakdown.ServerSeries
	}{
		{"nil", nil},
		{"no snapshots", []breakdown.ServerSeries{{Target: "server"}, {Target: "dcgm"}}},
		{"one snapshot", []breakdown.ServerSeries{{Target: "server", Snapshots: vllmSnapshots()[:1]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if page := string(serverPage(t, tc.server)); strings.Contains(page, "<h2>Server side</h2>") {
				t.Error("page has a server section")
			}
		})
	}
}

// TestHTMLServerOnlyWithData: a DCGM exporter alone draws the GPU charts
// only, titled without the target's name.
func TestHTMLServerOnlyWithData(t *testing.T) {
	sec := string(section(t, serverPage(t, []breakdown.ServerSeries{{Target: "dcgm", Snapshots: dcgmSnapshots()}}), "Server side"))
	if got := strings.Count(sec, "<figure>"); got != 2 {
		t.Errorf("DCGM alone: %d charts; want 2", got)
	}
	for _, title := range []string{"GPU power", "GPU utilisation"} {
		if !strings.Contains(sec, `aria-label="`+title+`"`) {
			t.Errorf("DCGM alone lacks the chart %q", title)
		}
	}
}

func TestCounterRate(t *testing.T) {
	snap := func(sec float64, v ...float64) sm.Snapshot {
		s := sm.Snapshot{TimeNS: int64(sec * 1e9), Values: map[sm.Name]float64{}}
		if len(v) > 0 {
			s.Values[sm.PromptTokens] = v[0]
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		snaps []sm.Snapshot
		want  plotter.XYs
	}{
		{"by hand", []sm.Snapshot{snap(0, 0), snap(1, 1000), snap(2, 3000)},
			plotter.XYs{{X: 1, Y: 1000}, {X: 2, Y: 2000}}},
		{"restart skipped", []sm.Snapshot{snap(0, 0), snap(1, 1000), snap(2, 3000), snap(3, 200), snap(5, 1200)},
			plotter.XYs{{X: 1, Y: 1000}, {X: 2, Y: 2000}, {X: 3, Y: math.NaN()}, {X: 5, Y: 500}}},
		{"missing value bridged", []sm.Snapshot{snap(0, 0), snap(1), snap(2, 3000)},
			plotter.XYs{{X: 2, Y: 1500}}},
		{"no time passed", []sm.Snapshot{snap(1, 0), snap(1, 10), snap(2, 30)},
			plotter.XYs{{X: 2, Y: 20}}},
		{"one snapshot", []sm.Snapshot{snap(0, 5)}, nil},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, counterRate(tc.snaps, sm.PromptTokens), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("counterRate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDownsample(t *testing.T) {
	pts := func(n int) plotter.XYs {
		xys := make(plotter.XYs, n)
		for i := range xys {
			xys[i] = plotter.XY{X: float64(i), Y: float64(i * i)}
		}
		return xys
	}
	for _, tc := range []struct{ n, max int }{
		{0, 600}, {1, 600}, {600, 600}, {601, 600}, {1199, 600}, {1200, 600}, {10_000, 600}, {86_401, 600}, {7, 2}, {7, 3},
	} {
		in := pts(tc.n)
		got := downsample(in, tc.max)
		if len(got) > tc.max {
			t.Errorf("downsample(%d points, %d) has %d points; want at most %d", tc.n, tc.max, len(got), tc.max)
		}
		if tc.n <= tc.max {
			if len(got) != tc.n {
				t.Errorf("downsample(%d points, %d) has %d points; want all %d", tc.n, tc.max, len(got), tc.n)
			}
			continue
		}
		if got[0] != in[0] || got[len(got)-1] != in[tc.n-1] {
			t.Errorf("downsample(%d points, %d) = %v … %v; want the first and last kept", tc.n, tc.max, got[0], got[len(got)-1])
		}
		if len(got) < tc.max/2 {
			t.Errorf("downsample(%d points, %d) has %d points; want at least %d", tc.n, tc.max, len(got), tc.max/2)
		}
		// Every point is one of the input's, at a fixed stride.
		k := got[1].X - got[0].X
		for i := 1; i < len(got)-1; i++ {
			if d := got[i].X - got[i-1].X; d != k || got[i].Y != got[i].X*got[i].X {
				t.Fatalf("downsample(%d points, %d): point %d is %v; want every %gth input point", tc.n, tc.max, i, got[i], k)
			}
		}
	}
}

// TestHTMLServerCap: a day of one-second scrapes stays at most
// maxServerPoints points a series.
func TestHTMLServerCap(t *testing.T) {
	snaps := make([]sm.Snapshot, 86_400)
	for i := range snaps {
		snaps[i] = sm.Snapshot{TimeNS: int64(i) * 1e9, Values: map[sm.Name]float64{
			sm.Running: float64(i % 7), sm.PromptTokens: float64(100 * i),
		}}
	}
	if got := len(gaugePoints(snaps, sm.Running, 1)); got > maxServerPoints {
		t.Errorf("gaugePoints(86400 scrapes) has %d points; want at most %d", got, maxServerPoints)
	}
	small := serverPage(t, []breakdown.ServerSeries{{Target: "server", Snapshots: snaps[:maxServerPoints]}})
	big := serverPage(t, []breakdown.ServerSeries{{Target: "server", Snapshots: snaps}})
	// The day-long page is about the size of one at the cap, not 144 times it.
	if len(big) > 2*len(small) {
		t.Errorf("page with 86400 scrapes is %d bytes; want at most twice the %d of one with %d", len(big), len(small), maxServerPoints)
	}
}
