package simrun_test

import (
	"context"
	"fmt"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/workload"
)

// Run replays a workload in virtual time and hands over one Record per
// request, as the HTTP benchmark would measure it.
func ExampleRun() {
	eng, err := sim.New(sim.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	ds, err := workload.NewRandom(workload.RandomConfig{InputLen: 1000, OutputLen: 100, NumPrompts: 50, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	tokens := 0
	res, err := simrun.Run(context.Background(), eng, ds, simrun.Load{Level: runlog.Level{RequestRate: 10}, Seed: 1},
		func(r *runlog.Record) error {
			tokens += r.CompletionTokens
			return nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Completed, "requests,", tokens, "tokens")
	// Output: 50 requests, 5000 tokens
}
