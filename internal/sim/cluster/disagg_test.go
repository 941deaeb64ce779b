package cluster

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/costmodel"
)

// pdConfig is p prefill and d decode replicas of the default engine over
// link.
func pdConfig(p, d int, link string) Config {
	reps := make([]sim.Config, p+d)
	for i := range reps {
		reps[i] = sim.DefaultConfig()
	}
	return Config{Replicas: reps, Disagg: &Disaggregation{Prefill: p, Link: link}}
}

func TestTransferNsByHand(t *testing.T) {
	// Llama-3.1-8B in bf16 at TP 1: 32 layers × 8 KV heads × 128 dims ×
	// (K, V) × 2 bytes = 131072 B a token. 1000 tokens over nvlink4 (α 8
	// µs, β 300 GB/s): 8 µs + 131.072 MB / 300 GB/s = 8 + 436.907 µs =
	// 444907 ns.
	nv, err := LinkByName("NVLink4")
	if err != nil {
		t.Fatal(err)
	}
	if got := TransferNs(nv.AllReduceFigures, 1000, 131072); got != 444907 {
		t.Errorf("TransferNs(nvlink4, 1000 tokens) = %d; want 444907", got)
	}
	// pcie4-nop2p (α 39 µs, β 13 GB/s): 39 + 131072000/13e9 s = 39 +
	// 10082.462 µs = 10121462 ns.
	pc, _ := LinkByName("pcie4-nop2p")
	if got := TransferNs(pc.AllReduceFigures, 1000, 131072); got != 10121462 {
		t.Errorf("TransferNs(pcie4-nop2p, 1000 tokens) = %d; want 10121462", got)
	}
	if _, err := LinkByName("infiniband"); err == nil || !strings.Contains(err.Error(), "(want "+strings.Join(LinkNames(), ", ")+")") {
		t.Errorf("LinkByName(infiniband) = %v; want unknown, listing LinkNames", err)
	}
	for _, n := range LinkNames() {
		if _, err := LinkByName(n); err != nil {
			t.Errorf("LinkByName(%s) = %v", n, err)
		}
	}
	// The engine's cost model agrees on the bytes a token.
	g, err := NewDisagg(pdConfig(1, 1, "nvlink4"))
	if err != nil {
		t.Fatal(err)
	}
	if g.kvBytes[0] != 131072 {
		t.Errorf("KV bytes a token = %v; want 131072", g.kvBytes[0])
	}
}

// pdDrive runs reqs (arriving at at[i]) through f as simrun does, returning
// each request's events by kind with their time and replica.
type pdEvent struct {
	t       int64
	replica int
	ev      sim.Event
}

func pdDrive(t *testing.T, f pdFleet, reqs []Request, at []int64) map[string][]pdEvent {
	t.Helper()
	out := map[string][]pdEvent{}
	now, next := int64(0), 0
	for steps := 0; ; steps++ {
		if steps > 10_000_000 {
			t.Fatal("the loop does not end")
		}
		for next < len(reqs) && at[next] <= now {
			if _, err := f.Add(now, reqs[next]); err != nil {
				t.Fatal(err)
			}
			next++
		}
		until := int64(math.MaxInt64)
		if next < len(reqs) {
			until = at[next]
		}
		if !f.Busy() {
			if next == len(reqs) {
				return out
			}
			now = until
			continue
		}
		end, bs := f.Step(now, until)
		for _, b := range bs {
			for _, ev := range b.Events {
				out[ev.ID] = append(out[ev.ID], pdEvent{end, b.Replica, ev})
			}
		}
		if end == now && len(bs) == 0 {
			if next == len(reqs) {
				t.Fatalf("stalled at %d", now)
			}
			now = until
			continue
		}
		now = end
	}
}

func req(id string, prompt, output int) Request {
	return Request{Request: sim.Request{ID: id, PromptTokens: prompt, OutputTokens: output}}
}

// TestDisaggScenario follows one request through a 1:1 split by hand,
// each iteration's time being the cost model's for its batch:
//
//	prefill replica 1: 0 → T1 = prefill(1000 tokens); first token at T1
//	link:              T1 → T2 = T1 + 444907 (TestTransferNsByHand)
//	decode replica 2:  T2 → T3 = T2 + decode(1 token, 1000 cached): token 2
//	                   T3 → T4 = T3 + decode(1 token, 1001 cached): token 3, finished
func TestDisaggScenario(t *testing.T) {
	g, err := NewDisagg(pdConfig(1, 1, "nvlink4"))
	if err != nil {
		t.Fatal(err)
	}
	dep := g.prefill.reps[0].eng.Deployment()
	cost := func(tokens, cached int, prefill bool) int64 {
		var b costmodel.Batch
		b.Add(tokens, cached, prefill)
		return dep.IterationNs(&b)
	}
	t1 := cost(1000, 0, true)
	t2 := t1 + 444907
	t3 := t2 + cost(1, 1000, false)
	t4 := t3 + cost(1, 1001, false)
	got := pdDrive(t, g, []Request{req("a", 1000, 3)}, []int64{0})["a"]
	want := []pdEvent{
		{t1, 0, sim.Event{ID: "a", Kind: sim.EventTokens, Tokens: 1}},
		{t3, 1, sim.Event{ID: "a", Kind: sim.EventTokens, Tokens: 1}},
		{t4, 1, sim.Event{ID: "a", Kind: sim.EventTokens, Tokens: 1}},
		{t4, 1, sim.Event{ID: "a", Kind: sim.EventFinished, Timing: &runlog.ServerTiming{
			PrefillNs: t1, DecodeNs: t4 - t1, KVTransferNs: 444907, DecodeReplica: 2}}},
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v; want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.t != w.t || g.replica != w.replica || g.ev.Kind != w.ev.Kind || g.ev.Tokens != w.ev.Tokens {
			t.Errorf("event %d = %d %d %v %d; want %d %d %v %d", i, g.t, g.replica, g.ev.Kind, g.ev.Tokens, w.t, w.replica, w.ev.Kind, w.ev.Tokens)
		}
		if w.ev.Timing != nil && (g.ev.Timing == nil || *g.ev.Timing != *w.ev.Timing) {
			t.Errorf("timing = %+v; want %+v", g.ev.Timing, w.ev.Timing)
		}
	}
	// The split's counters: one request finished once, 1000 prompt tokens
	// counted once (on the prefill side), 3 generated.
	s := g.Snapshot()
	if s.Finished != 1 || s.PromptTokens != 1000 || s.GenerationTokens != 3 {
		t.Errorf("snapshot finished %d prompt %d generated %d; want 1, 1000, 3", s.Finished, s.PromptTokens, s.GenerationTokens)
	}
	st := g.Stats()
	if len(st) != 2 || st[0].Routed != 1 || st[1].Routed != 1 || st[0].Steps != 1 || st[1].Steps != 2 {
		t.Errorf("stats %+v; want each replica routed 1, steps 1 and 2", st)
	}
	if g.Role(0) != RolePrefill || g.Role(1) != RoleDecode {
		t.Errorf("roles %s %s; want prefill decode", g.Role(0), g.Role(1))
	}
}

// TestDisaggLinkContention: two requests prefilled in one iteration of the
// same prefill replica queue on its link: the second's KV waits for the
// first's, so its transfer time is twice one (2 × 444907 ns), and it
// reaches the decode side that much later. A request of one output token
// ends on the prefill side.
func TestDisaggLinkContention(t *testing.T) {
	g, err := NewDisagg(pdConfig(1, 2, "nvlink4"))
	if err != nil {
		t.Fatal(err)
	}
	evs := pdDrive(t, g, []Request{req("a", 1000, 2), req("b", 1000, 2), req("c", 10, 1)}, []int64{0, 0, 0})
	fin := func(id string) *runlog.ServerTiming {
		for _, e := range evs[id] {
			if e.ev.Kind == sim.EventFinished {
				return e.ev.Timing
			}
		}
		t.Fatalf("%s did not finish: %+v", id, evs[id])
		return nil
	}
	a, b, c := fin("a"), fin("b"), fin("c")
	if a.KVTransferNs != 444907 || b.KVTransferNs != 2*444907 {
		t.Errorf("transfers %d, %d; want 444907, 889814", a.KVTransferNs, b.KVTransferNs)
	}
	if a.DecodeReplica == b.DecodeReplica || a.DecodeReplica < 2 || b.DecodeReplica < 2 {
		t.Errorf("decode replicas %d, %d; want 2 and 3 (round-robin)", a.DecodeReplica, b.DecodeReplica)
	}
	if c.KVTransferNs != 0 || c.DecodeReplica != 0 || len(evs["c"]) != 2 || evs["c"][1].replica != 0 {
		t.Errorf("one-token request: %+v %+v; want it to end on prefill replica 1", c, evs["c"])
	}
	if s := g.Snapshot(); s.Finished != 3 {
		t.Errorf("finished %d; want 3", s.Finished)
	}
}

// TestDisaggTTFTOnPrefill: a request's first token is the prefill
// replica's, before any decode replica runs, and the rest are the decode
// replica's; reasoning hides the same tokens as on one engine.
func TestDisaggTTFTOnPrefill(t *testing.T) {
	g, err := NewDisagg(pdConfig(2, 2, ""))
	if err != nil {
		t.Fatal(err)
	}
	r := req("a", 512, 4)
	r.ReasoningTokens = 2
	evs := pdDrive(t, g, []Request{req("x", 64, 2), r}, []int64{0, 0})["a"]
	if len(evs) < 2 || evs[0].ev.Kind != sim.EventTokens || evs[0].replica != 1 || !evs[0].ev.Hidden {
		t.Fatalf("first event %+v; want a hidden token from prefill replica 2", evs)
	}
	hidden := 0
	for _, e := range evs[1:] {
		if e.replica < 2 {
			t.Errorf("event %+v after the first token from a prefill replica", e)
		}
		if e.ev.Kind == sim.EventTokens && e.ev.Hidden {
			hidden += e.ev.Tokens
		}
	}
	if hidden != 1 {
		t.Errorf("hidden tokens on the decode side %d; want 1 (2 reasoning, the first on prefill)", hidden)
	}
}

func TestDisaggConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{pdConfig(0, 2, ""), "Disagg.Prefill"},
		{Config{Replicas: []sim.Config{sim.DefaultConfig(), sim.DefaultConfig()}, Disagg: &Disaggregation{Prefill: 2}}, "Disagg.Prefill"},
		{pdConfig(1, 1, "carrier-pigeon"), "Disagg.Link"},
		{Config{Replicas: pdConfig(1, 1, "").Replicas, Disagg: &Disaggregation{Prefill: 1}, ExpertParallel: true}, "Disagg"},
		{Config{Replicas: pdConfig(1, 1, "").Replicas, Disagg: &Disaggregation{Prefill: 1}, Router: Router{Policy: "random"}}, "Policy"},
		{Config{Replicas: pdConfig(1, 1, "").Replicas, Disagg: &Disaggregation{Prefill: 1}, Autoscale: &Autoscale{}}, "Disagg"},
	} {
		_, err := NewDisagg(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("NewDisagg(%+v) = %v; want a ConfigError of %s", c.cfg.Disagg, err, c.field)
		}
	}
	// A decode replica's engine error names the replica across the pools.
	cfg := pdConfig(2, 1, "")
	cfg.Replicas[2].Model = "no-such-model"
	_, err := NewDisagg(cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Replica != 2 {
		t.Errorf("NewDisagg(bad decode model) = %v; want replica 3's error", err)
	}
}

func TestDisaggAddRefuses(t *testing.T) {
	cfg := pdConfig(1, 1, "")
	cfg.Replicas[1].MaxModelLen = 2048
	g, err := NewDisagg(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(0, req("a", 2000, 100)); !errors.Is(err, sim.ErrInvalidRequest) {
		t.Errorf("Add(longer than the decode pool's max length) = %v; want ErrInvalidRequest", err)
	}
	if _, err := g.Add(0, req("b", 100, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(0, req("b", 100, 10)); !errors.Is(err, sim.ErrInvalidRequest) {
		t.Errorf("Add(duplicate) = %v; want ErrInvalidRequest", err)
	}
}

// TestDisaggAbort: a request aborted on the link never reaches the decode
// pool; the split ends idle.
func TestDisaggAbort(t *testing.T) {
	g, err := NewDisagg(pdConfig(1, 1, "pcie4-nop2p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(0, req("a", 1000, 8)); err != nil {
		t.Fatal(err)
	}
	t1, bs := g.Step(0, 0)
	if len(bs) != 1 || bs[0].Replica != 0 {
		t.Fatalf("first step %d %+v; want the first token on replica 1", t1, bs)
	}
	g.Abort(t1, "a")
	for now := t1; g.Busy(); {
		var bs []Batch
		now, bs = g.Step(now, 0)
		for _, b := range bs {
			if b.Replica != 0 {
				t.Errorf("decode events %+v for an aborted request", b)
			}
		}
	}
	if st := g.Stats(); st[1].Routed != 0 {
		t.Errorf("decode replica routed %d; want 0", st[1].Routed)
	}
}

// pdFleet is what the tests drive: a Cluster or a Disagg.
type pdFleet interface {
	Add(int64, Request) (int, error)
	Step(int64, int64) (int64, []Batch)
	Busy() bool
}

// sloRun is one run of n requests of prompt and output tokens arriving as
// a Poisson process of rate per second (seed 1) on f: the share of them
// meeting TTFT ≤ ttft and TPOT ≤ tpot (ms).
func sloRun(t *testing.T, f pdFleet, n, prompt, output int, rate, ttft, tpot float64) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([]Request, n)
	at := make([]int64, n)
	var now float64
	for i := range reqs {
		now += rng.ExpFloat64() / rate
		at[i] = int64(now * 1e9)
		reqs[i] = req(strconv.Itoa(i), prompt, output)
	}
	evs := pdDrive(t, f, reqs, at)
	ok := 0
	for i, r := range reqs {
		first, end := int64(-1), int64(-1)
		for _, e := range evs[r.ID] {
			if e.ev.Kind == sim.EventTokens && first < 0 {
				first = e.t
			}
			if e.ev.Kind == sim.EventFinished {
				end = e.t
			}
		}
		if first < 0 || end < 0 {
			continue
		}
		tt := float64(first-at[i]) / 1e6
		tp := float64(end-first) / 1e6 / float64(output-1)
		if tt <= ttft && tp <= tpot {
			ok++
		}
	}
	return float64(ok) / float64(n)
}

// TestDistServeDirection is DistServe's result in direction, on two
// H100s serving Llama-3.1-8B (vLLM V1 defaults, chunked prefill) under one
// SLO, TTFT ≤ 1 s and TPOT ≤ 10 ms (about twice an unloaded decode step)
// for 90 % of the requests, Poisson arrivals of seed 1:
//
//   - long prompts, short outputs (4096 → 64): at 2 requests/s per GPU the
//     colocated pair misses the SLO (each 4096-token prefill chunk
//     stretches the steps of the decodes sharing it past 10 ms) while a
//     1:1 split meets it: the split's per-GPU goodput is higher.
//   - short prompts (32 → 128): at 60 requests/s per GPU the colocated
//     pair meets it and the split does not (its one decode GPU carries
//     what two share colocated, while its prefill GPU idles): the split's
//     per-GPU goodput is lower.
//
// A goodput is the highest rate meeting the SLO, attainment falling with
// the rate, so one rate where only one side meets it orders them.
// docs/simulator.md has the whole curves.
func TestDistServeDirection(t *testing.T) {
	colocated := func() pdFleet {
		c, err := New(Config{Replicas: []sim.Config{sim.DefaultConfig(), sim.DefaultConfig()}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	split := func() pdFleet {
		g, err := NewDisagg(pdConfig(1, 1, ""))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, c := range []struct {
		name                 string
		n, prompt, output    int
		perGPU               float64
		colocatedOK, splitOK bool
	}{
		{"long prompts", 200, 4096, 64, 2, false, true},
		{"short prompts", 500, 32, 128, 60, true, false},
	} {
		co := sloRun(t, colocated(), c.n, c.prompt, c.output, 2*c.perGPU, 1000, 10)
		sp := sloRun(t, split(), c.n, c.prompt, c.output, 2*c.perGPU, 1000, 10)
		if co >= 0.9 != c.colocatedOK || sp >= 0.9 != c.splitOK {
			t.Errorf("%s at %v/s per GPU: SLO met by %.2f colocated, %.2f split; want colocated ≥ 0.9 %v, split %v",
				c.name, c.perGPU, co, sp, c.colocatedOK, c.splitOK)
		}
	}
}
