package sim_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/sim"
)

// A minimal virtual-time driver: one request on Llama-3.1-8B / H100.
func Example() {
	e, err := sim.New(sim.DefaultConfig())
	if err != nil {
		panic(err)
	}
	if err := e.Add(0, sim.Request{ID: "a", PromptTokens: 1000, OutputTokens: 3}); err != nil {
		panic(err)
	}
	var now int64
	for e.Busy() {
		end, events := e.Step(now)
		for _, ev := range events {
			switch ev.Kind {
			case sim.EventTokens:
				fmt.Printf("%s: token at %.1f ms\n", ev.ID, float64(end)/1e6)
			case sim.EventFinished:
				fmt.Printf("%s: done, prefill %.1f ms\n", ev.ID, float64(ev.Timing.PrefillNs)/1e6)
			}
		}
		now = end
	}
	// Output:
	// a: token at 33.6 ms
	// a: token at 40.6 ms
	// a: token at 47.5 ms
	// a: done, prefill 33.6 ms
}
