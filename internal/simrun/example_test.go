package simrun_test

import (
	"context"
	"fmt"
	"time"

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

// RunSessions runs conversations in virtual time: each turn's prompt
// carries the earlier turns, and the engine's prefix cache finds them,
// answers included. Turn 1 is 512 + 64 = 576 tokens; its 32-token answer
// ends the sequence at 608, 607 of them computed (the last token's KV never
// is), so turn 2, 576 + 32 + 64 = 672 tokens, finds ⌊607/16⌋·16 = 592; turn
// 3, 768 tokens, finds ⌊(672 + 32 − 1)/16⌋·16 = 688.
func ExampleRunSessions() {
	eng, err := sim.New(sim.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	chat := workload.Session{ID: "chat", SystemTokens: 512, Turns: []workload.Turn{
		{InputTokens: 64, OutputTokens: 32},
		{InputTokens: 64, OutputTokens: 32, ThinkTime: 5 * time.Second},
		{InputTokens: 64, OutputTokens: 32, ThinkTime: 5 * time.Second},
	}}
	set, err := workload.NewSessions("chats", []workload.Session{chat})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := simrun.RunSessions(context.Background(), eng, simrun.SessionLoad{Sessions: set},
		func(r *runlog.Record) error {
			fmt.Printf("%s: %d prompt tokens, %d cached\n", r.ID, r.PromptTokens, r.CachedTokens)
			return nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.SessionsCompleted, "session,", res.Completed, "requests")
	// Output:
	// s0-t1: 576 prompt tokens, 0 cached
	// s0-t2: 672 prompt tokens, 592 cached
	// s0-t3: 768 prompt tokens, 688 cached
	// 1 session, 3 requests
}
