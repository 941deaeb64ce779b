package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// simRunner is Llama-3.1-8B on the default GPU, prompts of 512–1536
// tokens and 64–192 output tokens, SLO TTFT 2 s and TPOT 50 ms. Its
// capacity is about 25 req/s.
func simRunner(t testing.TB, n int) *SimRunner {
	t.Helper()
	ds, err := workload.NewRandom(workload.RandomConfig{InputLen: 1024, OutputLen: 128, RangeRatio: 0.5, NumPrompts: n, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	slo, err := stats.ParseSLO("ttft:2000 tpot:50")
	if err != nil {
		t.Fatal(err)
	}
	return &SimRunner{Engine: sim.DefaultConfig(), Dataset: ds, NumPrompts: n, Seed: 7, Stats: stats.Options{SLO: slo}}
}

var simLevels = []float64{3, 6, 9, 12, 15, 18, 21, 24, 27, 30}

// sweepSim runs the 10-level virtual-time sweep and checks what the issue
// asks of it: a knee, and a goodput peak at a lower load than the
// throughput peak. The saturation stop is off so that all ten levels run
// to the end, overloaded ones included (the slowest case).
func sweepSim(t testing.TB, n int) Result {
	r := simRunner(t, n)
	r.Track = true
	r.Saturation.Off = true
	res, err := Run(context.Background(), r, Levels(AxisRate, simLevels, Level{}), Config{Axis: AxisRate, Saturation: r.Saturation})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != len(simLevels) {
		t.Fatalf("ran %d levels (%s); want %d", len(res.Points), res.Stopped, len(simLevels))
	}
	if res.Knee == nil {
		t.Fatalf("no knee: %s", res.KneeNote)
	}
	if res.GoodputPeak == nil || res.ThroughputPeak == nil || !(res.GoodputPeak.Load < res.ThroughputPeak.Load) {
		t.Fatalf("goodput peak %+v, throughput peak %+v; want the goodput peak at a lower load", res.GoodputPeak, res.ThroughputPeak)
	}
	if res.Violation == nil || res.Violation.ViolatingShare <= 0 {
		t.Fatalf("Violation = %+v; want the throughput peak inside SLO violation", res.Violation)
	}
	return res
}

func TestSimSweep(t *testing.T) {
	start := time.Now()
	res := sweepSim(t, 500)
	for _, p := range res.Points {
		m, _ := p.Summary.Metric(stats.MetricTTFT)
		p99, _ := m.P(99)
		t.Logf("%-8s %6.2f req/s  goodput %6.2f  attainment %5.1f %%  P99 TTFT %8.1f ms  queue %6.1f ms  %s",
			p.Level.Label, p.Summary.RequestThroughput, p.Summary.SLO.Goodput, 100*p.Summary.SLO.Attainment, p99, p.MedianQueueMs, p.Stopped)
	}
	t.Logf("knee at %g req/s (P99 TTFT %.0f ms), goodput peak %g, throughput peak %g; %v",
		res.Knee.Load, res.Knee.P99TTFTMs, res.GoodputPeak.Load, res.ThroughputPeak.Load, time.Since(start))
	// The knee is where the curve turns, so it lies at or below the
	// throughput peak's load, and the goodput peak is within SLO.
	if res.Knee.Load > res.ThroughputPeak.Load {
		t.Errorf("knee %g above the throughput peak %g", res.Knee.Load, res.ThroughputPeak.Load)
	}
	for i, p := range res.Points {
		if !p.QueueFromServer {
			t.Errorf("level %d: queue not from the engine's timing", i)
		}
	}
}

// TestSimSaturationStop overloads the engine 3× with the stop on: the level
// ends early and says so, and the sweep goes no further.
func TestSimSaturationStop(t *testing.T) {
	r := simRunner(t, 3000)
	res, err := Run(context.Background(), r, Levels(AxisRate, []float64{10, 75, 100}, Level{}), Config{Axis: AxisRate})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Skipped != 1 {
		t.Fatalf("ran %d levels, skipped %d; want 2 and 1 (%s)", len(res.Points), res.Skipped, res.Stopped)
	}
	p := res.Points[1]
	if p.Stopped == "" || p.Summary.Completed >= 3000 {
		t.Fatalf("overloaded level: stopped %q after %d completions; want an early stop", p.Stopped, p.Summary.Completed)
	}
	t.Logf("%s: %s (%d completed, %d cancelled); sweep: %s", p.Level.Label, p.Stopped, p.Summary.Completed,
		p.Summary.Failed, res.Stopped)
	if res.Points[0].Stopped != "" {
		t.Errorf("level at 10 req/s stopped: %s", res.Points[0].Stopped)
	}
}

// TestSimSearchMatchesBruteForce bisects for capacity on the simulator and
// checks it lies within one precision step of a scan of every step.
func TestSimSearchMatchesBruteForce(t *testing.T) {
	const lo, hi, prec = 4.0, 36.0, 2.0
	crit := Criteria{Attainment: 0.99}
	r := simRunner(t, 400)
	res, err := Search(context.Background(), r, SearchConfig{Axis: AxisRate, Lo: lo, Hi: hi, Precision: prec, Criteria: crit})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found || !res.Converged {
		t.Fatalf("Search = %+v; want a converged capacity", res)
	}
	// Brute force: the highest step of the grid below which every step
	// passes.
	brute := 0.0
	for x := lo; x <= hi; x += prec {
		p, err := r.RunLevel(context.Background(), 0, AxisRate.At(Level{}, x))
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := crit.Meets(p); !ok {
			break
		}
		brute = x
	}
	t.Logf("bisection: %.3f req/s in %d runs (bracket [%.3f, %.3f]); brute force: %g req/s", res.Capacity, len(res.Points), res.Lo, res.Hi, brute)
	if d := res.Capacity - brute; d > prec || d < -prec {
		t.Errorf("Search capacity %.3f is %.3f from the brute-force %g; want within %g", res.Capacity, d, brute, prec)
	}
}

// BenchmarkSimSweep is the yardstick: 10 levels × 5,000 requests in
// virtual time (the target is under 10 s per sweep).
func BenchmarkSimSweep(b *testing.B) {
	for b.Loop() {
		start := time.Now()
		res := sweepSim(b, 5000)
		b.Logf("10 levels × 5000 requests in %v: knee %g req/s, goodput peak %g, throughput peak %g",
			time.Since(start), res.Knee.Load, res.GoodputPeak.Load, res.ThroughputPeak.Load)
	}
}
