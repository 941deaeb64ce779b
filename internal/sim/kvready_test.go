package sim

import (
	"errors"
	"testing"

	"github.com/goodput/goodput/internal/sim/costmodel"
)

// TestKVReady: a request whose prompt KV arrives computed holds its
// prompt's blocks from admission and spends no prefill: with 1000 prompt
// tokens and 3 output (the first already made elsewhere), it runs two
// decode steps, of 1000 then 1001 cached tokens, and emits tokens 2 and 3
// only. ceil(1001/16) = 63 blocks are held after the first step.
func TestKVReady(t *testing.T) {
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Add(0, Request{ID: "one", PromptTokens: 10, OutputTokens: 1, KVReady: true}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("Add(KVReady, 1 output token) = %v; want ErrInvalidRequest", err)
	}
	if err := e.Add(0, Request{ID: "a", PromptTokens: 1000, OutputTokens: 3, KVReady: true}); err != nil {
		t.Fatal(err)
	}
	cost := func(cached int) int64 {
		var b costmodel.Batch
		b.Add(1, cached, false)
		return e.Deployment().IterationNs(&b)
	}
	end1, evs := e.Step(0)
	if end1 != cost(1000) || len(evs) != 1 || evs[0].Kind != EventTokens || evs[0].Tokens != 1 || evs[0].Cached != 0 {
		t.Fatalf("step 1 = %d %+v; want %d and one token", end1, evs, cost(1000))
	}
	blocks := e.Describe().NumGPUBlocks
	if got, want := e.Snapshot().KVUsage, 63/float64(blocks); got != want {
		t.Errorf("KV usage %v; want 63/%d = %v", got, blocks, want)
	}
	end2, evs := e.Step(end1)
	if end2 != end1+cost(1001) || len(evs) != 2 || evs[1].Kind != EventFinished {
		t.Fatalf("step 2 = %d %+v; want %d, a token and finished", end2, evs, end1+cost(1001))
	}
	if tm := evs[1].Timing; tm.QueueNs != 0 || tm.PrefillNs != 0 || tm.DecodeNs != end2 {
		t.Errorf("timing %+v; want no queue, no prefill, decode %d", tm, end2)
	}
	if s := e.Snapshot(); s.PromptTokens != 0 || s.GenerationTokens != 2 || s.Finished != 1 || s.KVUsage != 0 {
		t.Errorf("snapshot %+v; want 0 prompt tokens, 2 generated, 1 finished, KV free", s)
	}
}
