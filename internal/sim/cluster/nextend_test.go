package cluster

import (
	"math"
	"testing"

	"github.com/goodput/goodput/internal/sim"
)

// TestGatewayNextEnd: NextEnd reads, without delivering, the moment the
// next Step delivers, over pools. Two pools of one replica each, class 0
// to pool 0 and class 1 to pool 1: a 2000-token prompt on pool 0 and a
// 10-token one on pool 1, started at 0 (Step to 1 ns delivers nothing);
// NextEnd is then the short prefill's end, which the next Step returns
// with pool 1's batch, and is unchanged by reading. Idle: MaxInt64.
func TestGatewayNextEnd(t *testing.T) {
	cfg := Config{Replicas: Copies(sim.DefaultConfig(), 2), Gateway: &GatewayConfig{
		Pools:      []Pool{{Name: "a", Replicas: []int{0}}, {Name: "b", Replicas: []int{1}}},
		ClassPools: []int{0, 1},
	}}
	g, err := NewGateway(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.NextEnd(); got != math.MaxInt64 {
		t.Fatalf("idle NextEnd = %d; want MaxInt64", got)
	}
	for _, r := range []Request{
		{Request: sim.Request{ID: "long", PromptTokens: 2000, OutputTokens: 2}},
		{Request: sim.Request{ID: "short", PromptTokens: 10, OutputTokens: 2, Priority: 1}},
	} {
		if _, err := g.Add(0, r); err != nil {
			t.Fatal(err)
		}
	}
	if at, bs := g.Step(0, 1); at != 1 || len(bs) != 0 {
		t.Fatalf("Step(0, 1) = %d, %d batches; want 1, none", at, len(bs))
	}
	next := g.NextEnd()
	if next <= 1 || next == math.MaxInt64 || g.NextEnd() != next {
		t.Fatalf("NextEnd = %d; want one end in flight, read twice alike", next)
	}
	at, bs := g.Step(1, math.MaxInt64)
	if at != next || len(bs) != 1 || bs[0].Replica != 1 {
		t.Fatalf("Step = %d, %+v; want %d with replica 1's batch", at, bs, next)
	}
	// The long prefill ends later.
	if after := g.NextEnd(); after <= next {
		t.Errorf("NextEnd after the short prefill = %d; want past %d", after, next)
	}
}

// TestDisaggNextEnd: a split's NextEnd includes the transfers' arrivals,
// which its Step passes through without returning. 1 prefill + 1 decode
// replica, one request of 500 prompt tokens and 3 output: after its first
// token (the prefill's end, NextEnd before it), NextEnd is its KV's
// arrival, later; stepping to it delivers nothing and returns it, and
// the decode replica's first step ends after it.
func TestDisaggNextEnd(t *testing.T) {
	d, err := NewDisagg(Config{Replicas: Copies(sim.DefaultConfig(), 2), Disagg: &Disaggregation{Prefill: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.NextEnd(); got != math.MaxInt64 {
		t.Fatalf("idle NextEnd = %d; want MaxInt64", got)
	}
	if _, err := d.Add(0, Request{Request: sim.Request{ID: "a", PromptTokens: 500, OutputTokens: 3}}); err != nil {
		t.Fatal(err)
	}
	d.Step(0, 1)
	prefillEnd := d.NextEnd()
	at, bs := d.Step(1, math.MaxInt64)
	if at != prefillEnd || len(bs) != 1 || bs[0].Replica != 0 {
		t.Fatalf("Step = %d, %+v; want the prefill's end %d on replica 0", at, bs, prefillEnd)
	}
	arrive := d.NextEnd()
	if arrive <= prefillEnd || arrive == math.MaxInt64 {
		t.Fatalf("NextEnd after the first token = %d; want the transfer's arrival after %d", arrive, prefillEnd)
	}
	if at, bs := d.Step(prefillEnd, arrive); at != arrive || len(bs) != 0 {
		t.Fatalf("Step to the arrival = %d, %d batches; want %d, none", at, len(bs), arrive)
	}
	// Returning until, it consumed nothing: the transfer lands at the
	// next Step, from which the decode replica's first step ends later.
	if next := d.NextEnd(); next != arrive {
		t.Errorf("NextEnd after stepping to the arrival = %d; want it still %d", next, arrive)
	}
	if at, bs := d.Step(arrive, math.MaxInt64); at <= arrive || len(bs) != 1 || bs[0].Replica != 1 {
		t.Errorf("Step from the arrival = %d, %+v; want decode replica 1's batch after %d", at, bs, arrive)
	}
}
