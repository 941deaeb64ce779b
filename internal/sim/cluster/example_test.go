package cluster_test

import (
	"fmt"
	"math"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// A minimal virtual-time driver of two replicas behind a
// least-outstanding router: b goes to the idle replica and runs beside a.
func Example() {
	cfg := cluster.Config{
		Replicas: []sim.Config{sim.DefaultConfig(), sim.DefaultConfig()},
		Router:   cluster.Router{Policy: cluster.PolicyLeastOutstanding},
	}
	c, err := cluster.New(cfg)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"a", "b"} {
		r, err := c.Add(0, cluster.Request{Request: sim.Request{ID: id, PromptTokens: 1000, OutputTokens: 2}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s → replica %d\n", id, r+1)
	}
	var now int64
	done := map[string]int64{}
	for c.Busy() {
		end, batches := c.Step(now, math.MaxInt64) // no more arrivals
		for _, b := range batches {
			for _, ev := range b.Events {
				if ev.Kind == sim.EventFinished {
					fmt.Printf("%s done on replica %d\n", ev.ID, b.Replica+1)
					done[ev.ID] = end
				}
			}
		}
		now = end
	}
	fmt.Println("side by side:", done["a"] == done["b"])
	// Output:
	// a → replica 1
	// b → replica 2
	// a done on replica 1
	// b done on replica 2
	// side by side: true
}
