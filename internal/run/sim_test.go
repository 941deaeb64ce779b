package run

import (
	"context"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
	"github.com/goodput/goodput/internal/workload"
)

// simConfig is Llama-3.1-8B on the default GPU in virtual time, prompts of
// 512–1536 tokens and 64–192 output tokens, n per level, SLO TTFT 2 s and
// TPOT 50 ms, no files. Its capacity is about 25 req/s.
func simConfig(t testing.TB, n int) Config {
	t.Helper()
	slo, err := stats.ParseSLO("ttft:2000 tpot:50")
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Command: "sweep", Virtual: true, Engine: sim.DefaultConfig(), Seed: 7,
		Workload: Workload{Options: workload.Options{DatasetName: "random", RandomInputLen: 1024, RandomOutputLen: 128, RandomRangeRatio: 0.5}},
		Load:     runlog.Level{NumPrompts: n, Burstiness: 1}, Stats: stats.Options{SLO: slo},
		Output: Output{Dir: t.TempDir(), ResultName: "r.json", Records: "none"},
	}
}

// simSweep runs a virtual-time sweep of cfg over the rates.
func simSweep(t testing.TB, cfg Config, rates []float64, sat sweep.Saturation) *Result {
	t.Helper()
	cfg.Sweep = &SweepConfig{Axis: sweep.AxisRate, Levels: sweep.Levels(sweep.AxisRate, rates, cfg.Load), Saturation: sat}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var simLevels = []float64{3, 6, 9, 12, 15, 18, 21, 24, 27, 30}

// sweepSim runs the 10-level virtual-time sweep and checks a knee, and a
// goodput peak at a lower load than the throughput peak. The saturation
// stop is off so that all ten levels run to the end, overloaded ones
// included (the slowest case).
func sweepSim(t testing.TB, n int) *Result {
	res := simSweep(t, simConfig(t, n), simLevels, sweep.Saturation{Off: true})
	s := res.Sweep
	if len(s.Points) != len(simLevels) {
		t.Fatalf("ran %d levels (%s); want %d", len(s.Points), s.Stopped, len(simLevels))
	}
	if s.Knee == nil {
		t.Fatalf("no knee: %s", s.KneeNote)
	}
	if s.GoodputPeak == nil || s.ThroughputPeak == nil || !(s.GoodputPeak.Load < s.ThroughputPeak.Load) {
		t.Fatalf("goodput peak %+v, throughput peak %+v; want the goodput peak at a lower load", s.GoodputPeak, s.ThroughputPeak)
	}
	if s.Violation == nil || s.Violation.ViolatingShare <= 0 {
		t.Fatalf("Violation = %+v; want the throughput peak inside SLO violation", s.Violation)
	}
	return res
}

func TestSimSweep(t *testing.T) {
	start := time.Now()
	res := sweepSim(t, 500)
	s := res.Sweep
	for _, p := range s.Points {
		m, _ := p.Summary.Metric(stats.MetricTTFT)
		p99, _ := m.P(99)
		t.Logf("%-8s %6.2f req/s  goodput %6.2f  attainment %5.1f %%  P99 TTFT %8.1f ms  queue %6.1f ms  %s",
			p.Level.Label, p.Summary.RequestThroughput, p.Summary.SLO.Goodput, 100*p.Summary.SLO.Attainment, p99, p.MedianQueueMs, p.Stopped)
	}
	t.Logf("knee at %g req/s (P99 TTFT %.0f ms), goodput peak %g, throughput peak %g; %v",
		s.Knee.Load, s.Knee.P99TTFTMs, s.GoodputPeak.Load, s.ThroughputPeak.Load, time.Since(start))
	// The knee is where the curve turns, so it lies at or below the
	// throughput peak's load, and the goodput peak is within SLO.
	if s.Knee.Load > s.ThroughputPeak.Load {
		t.Errorf("knee %g above the throughput peak %g", s.Knee.Load, s.ThroughputPeak.Load)
	}
	for i, p := range s.Points {
		if !p.QueueFromServer {
			t.Errorf("level %d: queue not from the engine's timing", i)
		}
	}
}

// TestSimSaturationStop overloads the engine 3× with the stop on: the level
// ends early and says so, and the sweep goes no further.
func TestSimSaturationStop(t *testing.T) {
	res := simSweep(t, simConfig(t, 3000), []float64{10, 75, 100}, sweep.Saturation{})
	s := res.Sweep
	if len(s.Points) != 2 || s.Skipped != 1 {
		t.Fatalf("ran %d levels, skipped %d; want 2 and 1 (%s)", len(s.Points), s.Skipped, s.Stopped)
	}
	p := s.Points[1]
	if p.Stopped == "" || p.Summary.Completed >= 3000 {
		t.Fatalf("overloaded level: stopped %q after %d completions; want an early stop", p.Stopped, p.Summary.Completed)
	}
	t.Logf("%s: %s (%d completed, %d cancelled); sweep: %s", p.Level.Label, p.Stopped, p.Summary.Completed,
		p.Summary.Failed, s.Stopped)
	if s.Points[0].Stopped != "" {
		t.Errorf("level at 10 req/s stopped: %s", s.Points[0].Stopped)
	}
}

// TestSimSearchMatchesBruteForce bisects for capacity on the simulator and
// checks it lies within one precision step of a scan of every step.
func TestSimSearchMatchesBruteForce(t *testing.T) {
	const lo, hi, prec = 4.0, 36.0, 2.0
	crit := sweep.Criteria{Attainment: 0.99}
	cfg := simConfig(t, 400)
	cfg.Sweep = &SweepConfig{Axis: sweep.AxisRate, Levels: sweep.Levels(sweep.AxisRate, []float64{lo, hi}, cfg.Load),
		Criteria: crit, Search: true, Precision: prec}
	out, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := out.Sweep.Search
	if res == nil || !res.Found || !res.Converged {
		t.Fatalf("Search = %+v; want a converged capacity", res)
	}
	// Brute force: the highest step of the grid below which every step
	// passes.
	var grid []float64
	for x := lo; x <= hi; x += prec {
		grid = append(grid, x)
	}
	scan := simSweep(t, simConfig(t, 400), grid, sweep.Saturation{Off: true})
	brute := 0.0
	for _, p := range scan.Sweep.Points {
		if ok, _ := crit.Meets(p); !ok {
			break
		}
		brute = p.Level.RequestRate
	}
	t.Logf("bisection: %.3f req/s in %d runs (bracket [%.3f, %.3f]); brute force: %g req/s", res.Capacity, len(res.Points), res.Lo, res.Hi, brute)
	if d := res.Capacity - brute; d > prec || d < -prec {
		t.Errorf("Search capacity %.3f is %.3f from the brute-force %g; want within %g", res.Capacity, d, brute, prec)
	}
}

// BenchmarkSimSweep is the yardstick of a virtual-time sweep: 10 levels ×
// 5,000 requests (the target is under 10 s per sweep).
func BenchmarkSimSweep(b *testing.B) {
	for b.Loop() {
		start := time.Now()
		n := perfgoal.Size(5000, 1000) // fewer and the smoke's sweep has no knee
		res := sweepSim(b, n)
		s := res.Sweep
		b.Logf("10 levels × %d requests in %v: knee %g req/s, goodput peak %g, throughput peak %g",
			n, time.Since(start), s.Knee.Load, s.GoodputPeak.Load, s.ThroughputPeak.Load)
	}
}

// TestSimSweepInterrupted: a level the user cuts short is stored as
// interrupted and left out of the verdicts, not taken for a level that
// ran (its few requests would look like a fast, uncontended load).
func TestSimSweepInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Long levels: the simulator checks for cancellation every 256 steps.
	cfg := simConfig(t, 1500)
	cfg.Sweep = &SweepConfig{Axis: sweep.AxisRate, Levels: sweep.Levels(sweep.AxisRate, []float64{5, 10, 40}, cfg.Load), Saturation: sweep.Saturation{Off: true}}
	seen := 0
	cfg.Hooks.Start = func(*runlog.Meta) ([]Sink, error) {
		return []Sink{SinkFunc(func(r *runlog.Record) error {
			if r.Level == 2 {
				if seen++; seen == 20 {
					cancel() // Ctrl-C early in the last level
				}
			}
			return nil
		})}, nil
	}
	res, err := Run(ctx, cfg)
	if res == nil {
		t.Fatalf("Run: %v", err)
	}
	s := res.Sweep
	if len(s.Points) != 3 || s.Points[2].Stopped != sweep.Interrupted || res.Meta.Levels[2].Stopped != sweep.Interrupted {
		t.Fatalf("points %d, last stopped %q; want 3 with the last interrupted (err %v)", len(s.Points), s.Points[len(s.Points)-1].Stopped, err)
	}
	if len(s.Partial) != 1 || s.Partial[0] != 2 {
		t.Errorf("Partial = %v; want [2]", s.Partial)
	}
	for name, p := range map[string]*sweep.Peak{"throughput peak": s.ThroughputPeak, "goodput peak": s.GoodputPeak, "recommendation": s.Recommended} {
		if p != nil && p.Index == 2 {
			t.Errorf("%s = the interrupted level", name)
		}
	}
	if s.Saturated[2] != "" {
		t.Errorf("Saturated[2] = %q; an interruption is not saturation", s.Saturated[2])
	}
}
