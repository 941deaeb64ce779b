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
