package fit_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/costmodel"
	"github.com/goodput/goodput/internal/sim/fit"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/workload"
)

// level is one simulated bench level: closed loop at a concurrency.
type level struct {
	conc, in, out, n int
}

// simulate runs levels against the simulator with gpu (a name or .yaml
// path) and returns their records, one clock per level shifted apart so
// that levels never overlap.
func simulate(t *testing.T, gpu string, levels []level) []runlog.Record {
	t.Helper()
	var recs []runlog.Record
	var offset int64
	for i, l := range levels {
		cfg := sim.DefaultConfig()
		cfg.GPU = gpu
		cfg.EnablePrefixCaching = false
		eng, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := workload.NewRandom(workload.RandomConfig{InputLen: l.in, OutputLen: l.out, NumPrompts: l.n, Seed: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		var end int64
		_, err = simrun.Run(context.Background(), eng, ds, simrun.Load{Level: runlog.Level{MaxConcurrency: l.conc}, Seed: 1, Index: i},
			func(r *runlog.Record) error {
				c := *r
				c.Chunks = append([]runlog.Chunk(nil), r.Chunks...)
				if r.Server != nil {
					s := *r.Server
					c.Server = &s
				}
				c.Shift(offset)
				end = max(end, c.End)
				recs = append(recs, c)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		offset = end + 1e9
	}
	return recs
}

// trueProfile writes base with its sustained GEMM rate ×0.8 and bandwidth
// ×1.15 and the given fixed costs to a .yaml file and returns its path.
func trueProfile(t *testing.T, base costmodel.GPU, iterUs, reqUs float64) string {
	t.Helper()
	g := base
	s := g.Resolved()
	s.BF16TFLOPS *= 0.8
	s.FP8TFLOPS *= 0.8
	s.BandwidthGBs *= 1.15
	s.BF16Source, s.FP8Source, s.BandwidthSource = costmodel.SourceMeasured, costmodel.SourceMeasured, costmodel.SourceMeasured
	g.Sustained = s
	g.Name = "truth"
	g.Efficiency = &costmodel.Efficiency{IterationUs: iterUs, RequestUs: reqUs}
	b, err := fit.Profile(&fit.Result{GPU: g}, "test")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "truth.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func setup(t testing.TB) fit.Setup {
	t.Helper()
	m, err := costmodel.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := costmodel.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	// h100-sxm's engine defaults: 8192 tokens a step, graphs up to 512.
	return fit.Setup{Model: m, GPU: g, TP: 1, MaxBatchedTokens: 8192, GraphMaxTokens: 512}
}

func TestFitRecoversKnownProfile(t *testing.T) {
	s := setup(t)
	const iterUs, reqUs = 420, 20
	truth := trueProfile(t, s.GPU, iterUs, reqUs)
	var levels []level
	for _, in := range []int{128, 512, 1024, 2048, 4096, 8192} {
		levels = append(levels, level{conc: 1, in: in, out: 32, n: 3})
	}
	// Decode at three loads, with short and long contexts, so the KV
	// reads (bandwidth), the batch (per-request cost) and the fixed cost
	// each move the steps differently.
	levels = append(levels,
		level{conc: 8, in: 128, out: 128, n: 16}, level{conc: 8, in: 4096, out: 128, n: 16},
		level{conc: 32, in: 128, out: 128, n: 64}, level{conc: 32, in: 2048, out: 128, n: 64})
	recs := simulate(t, truth, levels)
	obs, err := fit.Observe(recs, fit.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fit.Fit(s, obs)
	if err != nil {
		t.Fatal(err)
	}
	base := s.GPU.Resolved()
	want := map[fit.Param]float64{
		fit.Compute:   base.BF16TFLOPS * 0.8,
		fit.Bandwidth: base.BandwidthGBs * 1.15,
		fit.Iteration: iterUs,
		fit.Request:   reqUs,
	}
	for _, e := range res.Estimates {
		rel := e.Value/want[e.Param] - 1
		t.Logf("%s = %.4g ± %.2g %% (truth %.4g, error %+.2f %%; base %.4g) identified=%v %s", e.Param, e.Value, 100*e.RelErr, want[e.Param], 100*rel, e.Base, e.Identified, e.Why)
		if !e.Identified {
			t.Errorf("%s not identified (%s); want it identified", e.Param, e.Why)
		}
		if math.Abs(rel) > 0.03 {
			t.Errorf("%s = %.4g; want %.4g within 3 %%", e.Param, e.Value, want[e.Param])
		}
	}
	for i, o := range obs {
		t.Logf("%-7s batch %3d prompt %6.0f ctx %6.0f: observed %.3f ms, fitted %.3f ms", o.Kind, o.Batch, o.Prompt, o.Context, o.Seconds*1e3, res.Modelled[i]*1e3)
	}
	if res.RMSRelErr > 0.02 {
		t.Errorf("RMS relative error %.3f; want ≤ 0.02", res.RMSRelErr)
	}
}

func TestFitShortPromptsLeaveComputeUnidentified(t *testing.T) {
	s := setup(t)
	truth := trueProfile(t, s.GPU, 300, 12)
	recs := simulate(t, truth, []level{{conc: 1, in: 128, out: 32, n: 4}, {conc: 1, in: 256, out: 32, n: 4}})
	obs, err := fit.Observe(recs, fit.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fit.Fit(s, obs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[fit.Param]fit.Estimate{}
	for _, e := range res.Estimates {
		got[e.Param] = e
	}
	for _, p := range []fit.Param{fit.Compute, fit.Request} {
		e := got[p]
		if e.Identified || e.Value != e.Base || e.Why == "" {
			t.Errorf("%s: identified=%v value %v base %v why %q; want not identified, kept from base, with a reason", p, e.Identified, e.Value, e.Base, e.Why)
		}
	}
	b, err := fit.Profile(res, "h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("not identified: kept from h100-sxm")) {
		t.Errorf("profile lacks the not-identified comment:\n%s", b)
	}
}

func TestObserveNoSuccess(t *testing.T) {
	recs := []runlog.Record{{ID: "a", ErrorClass: runlog.ErrorClass("http"), PromptTokens: 10}}
	if _, err := fit.Observe(recs, fit.ObserveOptions{}); err == nil {
		t.Errorf("Observe(failed records) = nil error; want one")
	}
}

// TestFitWithNoise jitters every measured time by 2 % (as a real server's
// timing varies) and checks the identified figures still land within 5 %:
// the fixed costs then drop out as unidentified, and the bandwidth takes
// up the base's fixed costs' error.
func TestFitWithNoise(t *testing.T) {
	s := setup(t)
	const iterUs, reqUs = 420, 20
	truth := trueProfile(t, s.GPU, iterUs, reqUs)
	var levels []level
	for _, in := range []int{128, 512, 1024, 2048, 4096, 8192} {
		levels = append(levels, level{conc: 1, in: in, out: 64, n: 5})
	}
	levels = append(levels,
		level{conc: 8, in: 128, out: 128, n: 16}, level{conc: 8, in: 4096, out: 128, n: 16},
		level{conc: 32, in: 128, out: 128, n: 64}, level{conc: 32, in: 2048, out: 128, n: 64})
	recs := simulate(t, truth, levels)
	rng := rand.New(rand.NewPCG(1, 2))
	jitter := func(d int64) int64 { return int64(float64(d) * (1 + 0.02*rng.NormFloat64())) }
	for i := range recs {
		r := &recs[i]
		if r.Server != nil {
			r.Server.PrefillNs = jitter(r.Server.PrefillNs)
		}
		prev, at := r.Sent, r.Sent
		for j := range r.Chunks {
			gap := r.Chunks[j].T - prev
			prev = r.Chunks[j].T
			at += jitter(gap)
			r.Chunks[j].T = at
		}
	}
	obs, err := fit.Observe(recs, fit.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fit.Fit(s, obs)
	if err != nil {
		t.Fatal(err)
	}
	base := s.GPU.Resolved()
	want := map[fit.Param]float64{fit.Compute: base.BF16TFLOPS * 0.8, fit.Bandwidth: base.BandwidthGBs * 1.15, fit.Iteration: iterUs, fit.Request: reqUs}
	for _, e := range res.Estimates {
		rel := e.Value/want[e.Param] - 1
		t.Logf("%s = %.4g ± %.2g %% (truth %.4g, error %+.2f %%) identified=%v %s", e.Param, e.Value, 100*e.RelErr, want[e.Param], 100*rel, e.Identified, e.Why)
		if (e.Param == fit.Compute || e.Param == fit.Bandwidth) && !e.Identified {
			t.Errorf("%s not identified (%s)", e.Param, e.Why)
		}
		if e.Identified && math.Abs(rel) > 0.05 {
			t.Errorf("%s = %.4g ± %.2g %%; want %.4g within 5 %%", e.Param, e.Value, 100*e.RelErr, want[e.Param])
		}
	}
}

// TestProfileLoadsBack writes a fitted profile and loads it as --gpu
// would: the fitted figures come back, and the efficiencies it does not
// set (the eager per-layer cost) keep their defaults.
func TestProfileLoadsBack(t *testing.T) {
	s := setup(t)
	path := trueProfile(t, s.GPU, 420, 20)
	g, err := costmodel.LookupGPU(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := costmodel.NewDeployment(s.Model, g, 1, "bf16", "auto")
	if err != nil {
		t.Fatal(err)
	}
	def := costmodel.DefaultEfficiency()
	if d.Eff.IterationUs != 420 || d.Eff.RequestUs != 20 || d.Eff.EagerLayerUs != def.EagerLayerUs {
		t.Errorf("loaded efficiency %+v; want iteration 420, request 20, eager_layer %v", d.Eff, def.EagerLayerUs)
	}
	if want := s.GPU.Resolved().BandwidthGBs * 1.15; math.Abs(d.Sustained.BandwidthGBs/want-1) > 1e-4 {
		t.Errorf("loaded bandwidth %v; want %v", d.Sustained.BandwidthGBs, want)
	}
}

// TestObserveWithoutServerArrival: a server that reports no arrival time
// (llama.cpp: queue unknown) leaves arrival_ns 0. The lone prefills of a
// concurrency-1 run are still observed, from the client's send times; the
// server's arrival taken as the send made every request overlap.
func TestObserveWithoutServerArrival(t *testing.T) {
	recs := simulate(t, "h100-sxm", []level{{conc: 1, in: 1024, out: 32, n: 4}})
	for i := range recs {
		if recs[i].Server == nil {
			t.Fatalf("record %d has no server timing", i)
		}
		recs[i].Server.ArrivalNs, recs[i].Server.QueueUnknown = 0, true
	}
	obs, err := fit.Observe(recs, fit.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prefills := 0
	for _, o := range obs {
		if o.Kind == fit.Prefill {
			prefills += o.Requests
		}
	}
	if prefills != len(recs) {
		t.Errorf("observed %d lone prefills among %d requests at concurrency 1; want all", prefills, len(recs))
	}
}

func TestRelErrText(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{
		{0.12, "±12 %"}, {5, "±500 %"}, {19470203821.66, "not identified"}, {math.Inf(1), "not identified"}, {math.NaN(), "not identified"},
	} {
		if got := fit.RelErrText(tt.in); got != tt.want {
			t.Errorf("RelErrText(%g) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
