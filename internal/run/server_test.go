package run

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/scrape"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
	"github.com/goodput/goodput/internal/wire/openai"
)

// A virtual-time run sampled every second: the level's server side is the
// engine's own counters, and a report of the records file (its scrape
// lines) says the same.
func TestServerSideVirtual(t *testing.T) {
	cfg := simConfig(t, 400)
	cfg.Command, cfg.Load.RequestRate = "sim", 10
	cfg.Output.Records = ""
	cfg.Scrape = &ScrapeConfig{Interval: time.Second}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := res.Levels[0].Server
	if len(ws) != 1 || ws[0].Target != "server" {
		t.Fatalf("server windows %+v; want the engine's", ws)
	}
	w := ws[0].Window
	sum := res.Levels[0].Summary
	// Every request finished inside the window, and the engine's token
	// counters are the records' totals.
	if got, want := w.Increase[servermetrics.RequestsFinished], float64(sum.Completed); got != want {
		t.Errorf("requests finished %v; want the %v completed", got, want)
	}
	if got, want := w.Increase[servermetrics.GenerationTokens], float64(sum.OutputTokens); got != want {
		t.Errorf("generation tokens %v; want the records' %v", got, want)
	}
	if g := w.Gauges[servermetrics.Running]; g.Max <= 0 || w.Scrapes < 30 {
		t.Errorf("running %+v over %d scrapes; want requests running, a scrape a second", g, w.Scrapes)
	}
	// In virtual time the client is the engine: its TTFT is the server's
	// queue plus prefill exactly, nothing left for a network.
	sp := res.Levels[0].TTFTSplit()
	if sp == nil || sp.N != sum.Completed || !sp.QueueKnown || sp.Rest.Max != 0 || sp.Rest.N != sp.N || sp.RestE2E.N != sp.N || sp.RestE2E.Max != 0 {
		t.Errorf("TTFT split %+v; want every request, no remainder before the first token or after", sp)
	}
	sameVerdict(t, res, reanalyze(t, res))
}

// A metrics endpoint that hangs, or answers garbage, is a noted gap: the
// run neither waits on it nor loses a request.
func TestServerSideBadEndpoint(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hangs for two minutes: far past the sanity bound below, so a
		// run that waited on it cannot pass, however slow the machine.
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Minute):
		}
	}))
	t.Cleanup(hang.Close)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "this is { not metrics\n")
	}))
	t.Cleanup(garbage.Close)
	cfg := simConfig(t, 20)
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Output.Records = ""
	cfg.Load.MaxConcurrency = 4
	cfg.Workload.Options.RandomInputLen, cfg.Workload.Options.RandomOutputLen = 64, 16
	cfg.Target = Target{API: "openai", Endpoint: "/v1/completions",
		Open: func(base string, conns int, now func() int64) (Backend, error) {
			return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/completions", Model: "meta-llama/Llama-3.1-8B", MaxConns: conns, Now: now})
		}}
	var notes []string
	cfg.Hooks.Note = func(s string) { notes = append(notes, s) }
	cfg.Scrape = &ScrapeConfig{Auto: true, Interval: 50 * time.Millisecond, Targets: []scrape.Target{
		{Name: "hung", URL: hang.URL + "/metrics"}, {Name: "junk", URL: garbage.URL + "/metrics"}}}
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Levels[0].Summary.Completed != 20 {
		t.Errorf("%d completed; want all 20", res.Levels[0].Summary.Completed)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the run took %v: it waited on the hung endpoint (which hangs 2 minutes)", d)
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{`server metrics "hung"`, `server metrics "junk"`} {
		if !strings.Contains(all, want) {
			t.Errorf("notes %q lack %q", all, want)
		}
	}
	// Over loopback the remainder (network, HTTP, client) is never
	// negative and small beside the server's part.
	if sp := res.Levels[0].TTFTSplit(); sp == nil || sp.N != 20 || sp.Rest.N != 20 || sp.Rest.Median < 0 || sp.Rest.Median > sp.Client.Median {
		t.Errorf("TTFT split %+v; want 20 requests, a remainder in [0, client TTFT]", sp)
	}
	// The embedded simulator's own /metrics was scraped all the same.
	if ws := res.Levels[0].Server; len(ws) != 1 || ws[0].Target != "server" {
		t.Errorf("server windows %+v; want the embedded simulator's only", ws)
	}
}

// Against the embedded simulator over HTTP, the level's queue and prefill
// times from the server's scraped histograms (their exact means: sum over
// count) agree with the per-request timing the server returned with each
// answer: two views of the engine's truth.
func TestServerSideSplitMatchesEngine(t *testing.T) {
	cfg := simConfig(t, 60)
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Output.Records = "none"
	cfg.Load.RequestRate = 40
	cfg.Workload.Options.RandomInputLen, cfg.Workload.Options.RandomOutputLen = 256, 16
	cfg.Target = Target{API: "openai", Endpoint: "/v1/completions",
		Open: func(base string, conns int, now func() int64) (Backend, error) {
			return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/completions", Model: "meta-llama/Llama-3.1-8B", MaxConns: conns, Now: now})
		}}
	cfg.Scrape = &ScrapeConfig{Auto: true, Interval: 100 * time.Millisecond}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := res.Levels[0]
	if len(l.Server) != 1 || l.TTFTSplit() == nil || l.TTFTSplit().N != 60 {
		t.Fatalf("server windows %d, split %+v; want the scraped server and 60 timed requests", len(l.Server), l.TTFTSplit())
	}
	w := l.Server[0].Window
	for _, c := range []struct {
		name  string
		hist  servermetrics.Name
		split float64
	}{{"queue", servermetrics.QueueTime, l.TTFTSplit().Queue.Mean}, {"prefill", servermetrics.PrefillTime, l.TTFTSplit().Prefill.Mean}} {
		h, ok := w.Histograms[c.hist]
		if !ok || h.Count != 60 {
			t.Errorf("%s histogram %+v; want the 60 requests", c.name, h)
			continue
		}
		if got := 1000 * h.Mean; got < c.split-0.01 || got > c.split+0.01 {
			t.Errorf("%s mean from /metrics %.3f ms; the per-request timing says %.3f ms", c.name, got, c.split)
		}
	}
}

// levelCost by hand: 2 GPUs (the simulated engine's TP) at 3.00 an hour,
// 1,200 output tokens/s: 6.00 an hour buys 4,320,000 tokens, so 1M cost
// 1.3889; 800 W of DCGM power over 1,200 tok/s is 0.6667 J a token; no SLO,
// so goodput per GPU is the request throughput (10 req/s) over 2.
func TestLevelCostByHand(t *testing.T) {
	meta := &runlog.Meta{Simulated: runlog.Engine{TensorParallelSize: 2}, Analysis: &runlog.Analysis{GPUCostPerHour: 3}}
	s := &stats.Summary{OutputThroughput: 1200, RequestThroughput: 10}
	dcgm := ServerWindow{Target: "dcgm", Window: servermetrics.Window{Kind: servermetrics.KindDCGM,
		Gauges: map[servermetrics.Name]servermetrics.GaugeStats{servermetrics.GPUPowerWatts: {N: 5, Mean: 800}}}}
	c := levelCost(meta, s, []ServerWindow{dcgm})
	near := func(a, b float64) bool { return a > b-1e-4 && a < b+1e-4 }
	if c == nil || c.NumGPUs != 2 || !near(c.CostPerMOutput, 1.3889) || !near(c.JoulesPerOutput, 0.6667) || c.GoodputPerGPU != 5 || c.OutputPerGPU != 600 {
		t.Errorf("levelCost = %+v", c)
	}
	if c := levelCost(&runlog.Meta{Analysis: &runlog.Analysis{}}, s, nil); c != nil {
		t.Errorf("neither priced nor counted: %+v; want none", c)
	}
	if c := levelCost(&runlog.Meta{Analysis: &runlog.Analysis{NumGPUs: 4}}, s, nil); c == nil || c.NumGPUs != 4 || c.CostPerMOutput != 0 || c.OutputPerGPU != 300 {
		t.Errorf("counted, not priced: %+v", c)
	}
}

// A Pareto sweep: each level runs its own lengths, the points and the
// frontier come out of the analysis, and a report of the records reaches
// the same (result JSON, terminal and findings alike).
func TestParetoSweep(t *testing.T) {
	cfg := simConfig(t, 30)
	cfg.Output.Records = ""
	levels := []runlog.Level{}
	for _, pair := range [][2]int{{256, 32}, {1024, 128}} {
		for _, c := range []int{1, 8} {
			levels = append(levels, runlog.Level{MaxConcurrency: c, NumPrompts: 30, Burstiness: 1, InputLen: pair[0], OutputLen: pair[1],
				Label: fmt.Sprintf("c=%d in=%d out=%d", c, pair[0], pair[1])})
		}
	}
	cfg.Sweep = &SweepConfig{Axis: sweep.AxisConcurrency, Levels: levels, Pareto: true, Saturation: sweep.Saturation{Off: true},
		Criteria: sweep.Criteria{Attainment: 0.9}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pareto) != 4 || res.ParetoGPUs != 1 {
		t.Fatalf("pareto points %+v over %d GPUs; want 4 over 1", res.Pareto, res.ParetoGPUs)
	}
	for i, p := range res.Pareto {
		l := res.Levels[i]
		// The level sent its own lengths: the prompts are its input length.
		if in := l.Summary.InputLen.Median; in < float64(p.InputLen)*0.5 || in > float64(p.InputLen)*1.5 {
			t.Errorf("level %d: median input %v tokens; want about %d", i, in, p.InputLen)
		}
		if p.Interactivity <= 0 || p.ThroughputPerGPU <= 0 {
			t.Errorf("point %d = %+v", i, p)
		}
	}
	// More concurrency: more tokens per GPU, fewer per user, in each pair.
	for _, k := range []int{0, 2} {
		a, b := res.Pareto[k], res.Pareto[k+1]
		if !(b.ThroughputPerGPU > a.ThroughputPerGPU && b.Interactivity < a.Interactivity) {
			t.Errorf("pair at %d: c=1 %+v, c=8 %+v; want the trade-off", k, a, b)
		}
	}
	if res.Findings != nil {
		t.Errorf("a Pareto sweep's own findings %v; want none (each level keeps its own)", res.Findings)
	}
	again := reanalyze(t, res)
	again.RecordsPath = res.RecordsPath
	lj, err := res.JSON(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aj, err := again.JSON(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(lj) != string(aj) || !strings.Contains(string(lj), `"pareto"`) {
		t.Errorf("a report of the records judges the Pareto sweep otherwise:\nrun:    %.400s\nreport: %.400s", lj, aj)
	}
}
