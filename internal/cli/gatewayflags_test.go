package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// The flags build the gateway: class pools in order, the small-model
// replicas a pool after them running --small-model, the rest of the
// replicas pool 0 when there are no class pools.
func TestGatewayApply(t *testing.T) {
	eng := sim.DefaultConfig()
	cc := &cluster.Config{Replicas: []sim.Config{eng, eng, eng, eng}}
	g := gatewayFlags{pools: "interactive=1-2,batch=3", degrade: "small-model:4", degradeAbove: "3/replica", smallModel: "qwen2.5-7b"}
	if err := g.apply(&cc, eng); err != nil {
		t.Fatal(err)
	}
	gc := cc.Gateway
	names := []string{}
	for _, p := range gc.Pools {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"interactive", "batch", "small"}) || !slices.Equal(gc.Pools[0].Replicas, []int{0, 1}) ||
		!slices.Equal(gc.ClassPools, []int{0, 1}) || gc.Degrade.Pool != 2 || gc.Degrade.Above != 3 || !gc.Degrade.PerReplica || cc.Replicas[3].Model != "qwen2.5-7b" || cc.Replicas[2].Model != eng.Model {
		t.Errorf("gateway %+v, degrade %+v", gc, gc.Degrade)
	}
	var one *cluster.Config
	if err := (&gatewayFlags{degrade: "small-model:2"}).apply(&one, eng); err == nil || !strings.Contains(err.Error(), "replicas \"2\": want 1 ≤ A ≤ B ≤ 1") {
		t.Errorf("small-model of one replica: %v", err)
	}
	one = nil
	if err := (&gatewayFlags{rateLimit: "5/s"}).apply(&one, eng); err != nil || one == nil || len(one.Replicas) != 1 || one.Gateway.Requests.Rate != 5 {
		t.Errorf("a gateway in front of one engine: %+v, %v", one, err)
	}
}
