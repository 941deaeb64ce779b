package simrun

import (
	"context"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// A run through a gateway: every request carries the class the mix gave
// its index (the same as cluster.ClassOf says), a request the gateway
// refused is a 429 saying "rate limited" that no replica served, and a
// degraded request says how, its output capped. 200 requests due at once
// (closed loop) against a burst of 50: exactly 150 refused.
func TestRunThroughGateway(t *testing.T) {
	ds := sharedPrefixes(t, 200, 128, 64, 0, 0)
	g, err := cluster.NewGateway(cluster.Config{Replicas: []sim.Config{sim.DefaultConfig(), sim.DefaultConfig()}, Gateway: &cluster.GatewayConfig{
		Requests: &cluster.Bucket{Rate: 10, Burst: 50},
		Degrade:  &cluster.Degrade{Above: 10, Action: cluster.DegradeMaxTokens, Value: 8},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mix := []float64{0.7, 0.3}
	var recs []*runlog.Record
	_, err = RunCluster(context.Background(), g, ds, Load{Level: runlog.Level{NumPrompts: 200}, Seed: 4, PriorityMix: mix}, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var limited, degraded, served, classed int
	for _, r := range recs {
		idx := 0
		for _, c := range r.ID {
			idx = idx*10 + int(c-'0')
		}
		if r.Priority != cluster.ClassOf(mix, 4, idx) {
			t.Fatalf("%s: priority %d; want %d", r.ID, r.Priority, cluster.ClassOf(mix, 4, idx))
		}
		classed += r.Priority
		switch {
		case r.Status == 429:
			limited++
			if !strings.HasPrefix(r.Error, "rate limited") || r.Replica != 0 {
				t.Errorf("%s: 429 %q on replica %d; want rate limited, no replica", r.ID, r.Error, r.Replica)
			}
		case r.Degraded == cluster.DegradeMaxTokens:
			degraded++
			if r.CompletionTokens > 8 {
				t.Errorf("%s: degraded to 8 tokens but generated %d", r.ID, r.CompletionTokens)
			}
		case r.OK():
			served++
		}
	}
	// 50 admitted, all at 0 before any step, so admitted request k finds
	// k-1 waiting over both replicas (the threshold is the pool's sum):
	// degraded from the 12th (11 > 10), 39 of them; 11 served whole.
	if limited != 150 || degraded != 39 || served != 11 || classed == 0 {
		t.Errorf("limited %d, degraded %d, served undegraded %d, class-1 %d; want 150, 39, 11, > 0", limited, degraded, served, classed)
	}
}
