package cluster_test

import (
	"fmt"
	"math"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// A gateway of 1 request/s (burst 1) in front of one replica: a is
// admitted, b at the same moment is refused with the exact wait, a 429
// no replica saw.
func ExampleGateway() {
	g, err := cluster.NewGateway(cluster.Config{
		Replicas: []sim.Config{sim.DefaultConfig()},
		Gateway:  &cluster.GatewayConfig{Requests: &cluster.Bucket{Rate: 1, Burst: 1}},
	})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"a", "b"} {
		r, err := g.Add(0, cluster.Request{Request: sim.Request{ID: id, PromptTokens: 100, OutputTokens: 2}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s → replica %d\n", id, r+1)
	}
	var now int64
	for g.Busy() {
		end, batches := g.Step(now, math.MaxInt64)
		for _, b := range batches {
			for _, ev := range b.Events {
				switch ev.Kind {
				case sim.EventRejected:
					fmt.Printf("%s refused: retry after %d ms\n", ev.ID, ev.RetryAfterNs/1e6)
				case sim.EventFinished:
					fmt.Printf("%s done on replica %d\n", ev.ID, b.Replica+1)
				}
			}
		}
		now = end
	}
	// Output:
	// a → replica 1
	// b → replica 0
	// b refused: retry after 1000 ms
	// a done on replica 1
}
