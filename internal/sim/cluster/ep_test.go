package cluster

import (
	"errors"
	"math"
	"testing"

	"github.com/goodput/goodput/internal/sim"
)

func epConfig() sim.Config {
	c := sim.DefaultConfig()
	c.Model, c.GPU = "qwen3-30b-a3b", "h100-sxm"
	return c
}

// TestLockstep works the lockstep rule by hand: rank 1 prefills a heavy
// prompt, rank 2 is idle. The step lasts as long as rank 1's step alone
// (an engine of its own, measured here) with its expert GEMMs recosted for
// EP (half its tokens' expert work now runs on rank 2's experts), plus the
// all-to-all of its tokens over the 2 GPUs; a request reaching rank 2
// during the step waits for its end rather than starting at once.
func TestLockstep(t *testing.T) {
	cfg := epConfig()
	heavy := sim.Request{ID: "heavy", PromptTokens: 4000, OutputTokens: 4}
	alone, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := alone.Add(0, heavy); err != nil {
		t.Fatal(err)
	}
	solo, _ := alone.Step(0)
	tokens := alone.StepTokens()
	dep := alone.Deployment()
	comm := int64(math.Round(dep.EPCommSeconds(tokens, 2) * 1e9))
	delta := int64(math.Round(dep.EPExpertDeltaSeconds(tokens, tokens, 2) * 1e9))
	if delta >= 0 {
		t.Fatalf("EP expert delta = %d ns; want < 0 (the heavy rank hands half its expert work to rank 2)", delta)
	}
	// The idle rank's dummy forward runs the other half of the experts'
	// work; it must still be the shorter, or the test checks nothing.
	if idle := dep.DummyStepNs() + int64(math.Round(dep.EPExpertDeltaSeconds(1, tokens, 2)*1e9)); idle >= solo+delta {
		t.Fatalf("idle rank %d ns ≥ heavy rank %d ns: the test needs the heavy rank to be the slowest", idle, solo+delta)
	}

	c, err := New(Config{Replicas: replicas(2, cfg), Router: Router{Policy: PolicyDPBalance}, ExpertParallel: true})
	if err != nil {
		t.Fatal(err)
	}
	if i, err := c.Add(0, Request{Request: heavy}); i != 0 || err != nil {
		t.Fatalf("Add(heavy) = %d, %v; want 0, nil", i, err)
	}
	end, bs := c.Step(0, 1000)
	if end != 1000 || len(bs) != 0 {
		t.Fatalf("Step(0, 1000) = %d, %d batches; want 1000, none (the step is in flight)", end, len(bs))
	}
	// Rank 1 now runs 1 (score 1), rank 2 nothing: light goes to rank 2,
	// idle, but must wait for the step in flight.
	if i, err := c.Add(1000, Request{Request: sim.Request{ID: "light", PromptTokens: 10, OutputTokens: 4}}); i != 1 || err != nil {
		t.Fatalf("Add(light) = %d, %v; want 1, nil", i, err)
	}
	end, bs = c.Step(1000, math.MaxInt64)
	if want := solo + delta + comm; end != want {
		t.Errorf("lockstep end = %d ns; want the heavy step %d + EP expert delta %d + all-to-all %d = %d", end, solo, delta, comm, want)
	}
	if len(bs) != 1 || bs[0].Replica != 0 {
		t.Fatalf("batches at the first end = %+v; want rank 1's only (rank 2 held light back)", bs)
	}
	if st := c.Stats(); st[1].Steps != 0 || st[1].Engine.Waiting != 1 {
		t.Errorf("rank 2 after the first step: %d steps, %d waiting; want 0, 1", st[1].Steps, st[1].Engine.Waiting)
	}
	// The next step starts both ranks together, at the first one's end,
	// and ends for both at once.
	first := end
	end, bs = c.Step(first, math.MaxInt64)
	if len(bs) != 2 || bs[0].Replica != 0 || bs[1].Replica != 1 {
		t.Fatalf("second step's batches = %+v; want ranks 1 and 2 together", bs)
	}
	if end <= first {
		t.Errorf("second step ends at %d ns; want after %d", end, first)
	}
}

// TestLockstepDeterministic runs the same EP cluster twice: same steps,
// same end.
func TestLockstepDeterministic(t *testing.T) {
	run := func() (int64, int64) {
		c, err := New(Config{Replicas: replicas(2, epConfig()), Router: Router{Policy: PolicyDPBalance}, ExpertParallel: true})
		if err != nil {
			t.Fatal(err)
		}
		now := int64(0)
		for k := 0; k < 20 || c.Busy(); {
			due := int64(k) * 1_000_000
			for ; k < 20 && due <= now; k, due = k+1, int64(k+1)*1_000_000 {
				id := string(rune('a' + k))
				if _, err := c.Add(now, Request{Request: sim.Request{ID: id, PromptTokens: 100 + 37*k, OutputTokens: 10 + k}}); err != nil {
					t.Fatal(err)
				}
			}
			until := int64(math.MaxInt64)
			if k < 20 {
				until = due
			}
			end, _ := c.Step(now, until)
			if end == now && k < 20 {
				end = due
			}
			now = end
		}
		return now, c.Steps()
	}
	e1, s1 := run()
	e2, s2 := run()
	if e1 != e2 || s1 != s2 || s1 == 0 {
		t.Errorf("two runs ended at %d, %d ns after %d, %d steps; want the same, > 0 steps", e1, e2, s1, s2)
	}
}

func TestExpertParallelDense(t *testing.T) {
	_, err := New(Config{Replicas: replicas(2, sim.DefaultConfig()), ExpertParallel: true})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "ExpertParallel" {
		t.Errorf("New(dense, ExpertParallel) = %v; want a *ConfigError on ExpertParallel", err)
	}
}
