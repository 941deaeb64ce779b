package simrun

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/shareddata"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// dataDir is the shared data folder (../shared/data beside the
// repository, or $GOODPUT_DATA).
func dataDir(t testing.TB) string {
	t.Helper()
	return shareddata.Dir(t)
}

// percentile is numpy's default: linear interpolation between closest
// ranks of the sorted xs.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := (float64(len(sorted)) - 1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

func TestPercentile(t *testing.T) {
	// numpy.percentile([1,2,3,4], 50) = 2.5; 99 → 3 + 0.97·1 = 3.97.
	xs := []float64{1, 2, 3, 4}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {50, 2.5}, {99, 3.97}, {100, 4}} {
		if got := percentile(xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("percentile(%v, %v) = %v; want %v", xs, c.p, got, c.want)
		}
	}
}

type dist struct{ mean, p50, p99 float64 }

func summarizeMs(xs []float64) dist {
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return dist{sum / float64(len(s)), percentile(s, 50), percentile(s, 99)}
}

// TestCalibrationRunRegression replays the real vLLM 0.19 run in
// llmservingsim-vllm-validation/RTXPRO6000_Llama-3.1-8B (300 ShareGPT
// requests, arrivals and lengths as recorded) through simrun with that
// run's engine configuration and compares TTFT, TPOT and E2E (mean, P50,
// P99) with the real ones: within 10 % (TPOT and E2E within 5 %).
//
// It is a regression check on the calibration run, not a measure of
// accuracy: this run was beside the cost model while it was built
// (docs/simulator.md), so agreement here says the simulator has not moved
// off it, nothing about runs it never saw. (It was once also replayed
// straight through the engine in package sim; one replay is enough.)
func TestCalibrationRunRegression(t *testing.T) {
	path := shareddata.Path(t, "llmservingsim-vllm-validation/RTXPRO6000_Llama-3.1-8B/requests.jsonl")
	real := readRealRun(t, path)
	ds, err := workload.LoadTrace(path, workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Model = "meta-llama/Llama-3.1-8B"
	cfg.GPU = "rtx-pro-6000"
	cfg.TP = 1
	cfg.DType = "bf16"
	cfg.MaxNumSeqs = 128
	cfg.MaxNumBatchedTokens = 2048
	cfg.BlockSize = 16
	cfg.GPUMemoryUtilization = 0.9
	cfg.EnablePrefixCaching = true
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ttft, tpot, e2e []float64
	res, err := Run(context.Background(), eng, ds, Load{}, func(r *runlog.Record) error {
		if !r.OK() {
			return fmt.Errorf("request %s failed: %s", r.ID, r.Error)
		}
		d, _ := r.TTFT()
		ttft = append(ttft, ms(d))
		d, _ = r.E2E()
		e2e = append(e2e, ms(d))
		if d, ok := r.TPOT(); ok {
			tpot = append(tpot, ms(d))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != len(real.ttft) {
		t.Fatalf("completed %d of %d", res.Completed, len(real.ttft))
	}
	rows := []struct {
		name      string
		sim, real dist
		tol       float64
	}{
		{"TTFT", summarizeMs(ttft), summarizeMs(real.ttft), 0.10},
		{"TPOT", summarizeMs(tpot), summarizeMs(real.tpot), 0.05},
		{"E2E", summarizeMs(e2e), summarizeMs(real.e2e), 0.05},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %-5s %10s %10s %8s\n", "", "", "sim ms", "vLLM ms", "diff")
	var bad []string
	for _, r := range rows {
		for _, s := range []struct {
			stat      string
			sim, real float64
		}{{"mean", r.sim.mean, r.real.mean}, {"P50", r.sim.p50, r.real.p50}, {"P99", r.sim.p99, r.real.p99}} {
			diff := (s.sim - s.real) / s.real
			fmt.Fprintf(&b, "%-5s %-5s %10.1f %10.1f %+7.1f%%\n", r.name, s.stat, s.sim, s.real, 100*diff)
			if math.Abs(diff) > r.tol {
				bad = append(bad, fmt.Sprintf("%s %s off by %+.1f%% (tolerance %.0f%%)", r.name, s.stat, 100*diff, 100*r.tol))
			}
		}
	}
	t.Logf("replay of %s (%d requests, sim %v virtual):\n%s", filepath.Base(filepath.Dir(path)), res.Completed, res.Duration().Round(time.Millisecond), b.String())
	if len(bad) > 0 {
		t.Errorf("simulated latencies outside the issue's tolerance:\n%s", strings.Join(bad, "\n"))
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

type realRun struct{ ttft, tpot, e2e []float64 }

// readRealRun computes the real run's metrics as the data README defines
// them (engine-side timestamps): TTFT = first_token_ts − queued_ts, TPOT =
// (last_token_ts − first_token_ts)/(output_toks − 1), E2E = last_token_ts −
// queued_ts.
func readRealRun(t *testing.T, path string) realRun {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rr realRun
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var r struct {
			OutputToks int     `json:"output_toks"`
			Queued     float64 `json:"queued_ts"`
			First      float64 `json:"first_token_ts"`
			Last       float64 `json:"last_token_ts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		rr.ttft = append(rr.ttft, 1000*(r.First-r.Queued))
		rr.e2e = append(rr.e2e, 1000*(r.Last-r.Queued))
		if r.OutputToks > 1 {
			rr.tpot = append(rr.tpot, 1000*(r.Last-r.First)/float64(r.OutputToks-1))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rr
}

// BenchmarkShareGPT100k is the speed check: 100,000 ShareGPT-length
// requests (../shared/data/sharegpt-lengths), Poisson arrivals at 7 req/s,
// Llama-3.1-8B on one H100 with vLLM V1 defaults, in virtual time. It
// reports the wall time per run (goal < 10 s on one core: run with
// -cpu 1), the virtual time simulated, engine iterations, and the peak live
// heap, which must not grow with the request count (the records are
// dropped as emitted).
func BenchmarkShareGPT100k(b *testing.B) {
	path := filepath.Join(dataDir(b), "sharegpt-lengths", "sharegpt_8k_filtered_stats_llama2_tokenizer.csv")
	ds, err := workload.LoadLengths(path, workload.LengthsConfig{NumPrompts: perfgoal.Size(100_000, 1000), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	n := perfgoal.Size(100_000, 1000)
	for b.Loop() {
		eng, err := sim.New(sim.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		// The live heap after a forced GC every 20,000 records: it must stay
		// flat as the run goes on (GC time is excluded from the timing).
		var live []float64
		res, err := Run(context.Background(), eng, ds, Load{Level: runlog.Level{RequestRate: 7, Burstiness: 1, NumPrompts: n}, Seed: 1}, liveHeap(b, 20_000, &live))
		if err != nil {
			b.Fatal(err)
		}
		if res.Completed != n {
			b.Fatalf("completed %d of %d (failed %d)", res.Completed, n, res.Failed)
		}
		b.ReportMetric(res.Duration().Seconds(), "virtual-s")
		b.ReportMetric(float64(res.Steps), "steps")
		if len(live) > 0 { // none under -short: too few requests to sample
			b.ReportMetric(live[0], "live-MiB@20k")
			b.ReportMetric(live[len(live)-1], "live-MiB@100k")
		}
	}
}

// liveHeap is a benchmark's emit that samples the live heap (MiB) into
// *live after a forced GC every every records, the timer stopped so the
// GC is not timed: a run's memory must stay flat as it goes on.
func liveHeap(b *testing.B, every int, live *[]float64) func(*runlog.Record) error {
	emitted := 0
	return func(*runlog.Record) error {
		if emitted++; emitted%every == 0 {
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			*live = append(*live, float64(ms.HeapAlloc)/(1<<20))
			b.StartTimer()
		}
		return nil
	}
}
