package simrun

import (
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// The engine is sampled every SampleEvery of virtual time from 0 and once
// at the end: the first sample sees the engine before anything arrived,
// one during the run sees the request running, the last its totals.
func TestSampleEvery(t *testing.T) {
	type sample struct {
		at int64
		s  sim.Snapshot
	}
	var got []sample
	every := 5 * time.Millisecond
	_, res := collect(t, newEngine(t, nil), shapes{{PromptTokens: 100, OutputTokens: 40}}, Load{
		SampleEvery: every,
		Sample:      func(at int64, s sim.Snapshot) { got = append(got, sample{at, s}) },
	})
	if len(got) < 3 {
		t.Fatalf("%d samples over %v; want one every %v", len(got), time.Duration(res.End), every)
	}
	for i, g := range got[:len(got)-1] {
		if g.at != int64(i)*int64(every) {
			t.Errorf("sample %d at %v; want %v", i, time.Duration(g.at), time.Duration(i)*every)
		}
	}
	first, mid, last := got[0].s, got[1].s, got[len(got)-1]
	if first.Running != 0 || first.Waiting != 0 || first.GenerationTokens != 0 {
		t.Errorf("sample at 0 = %+v; want the empty engine", first)
	}
	if mid.Running != 1 {
		t.Errorf("sample at %v = %+v; want the request running", every, mid)
	}
	if last.at != res.End || last.s.Finished != 1 || last.s.GenerationTokens != 40 || last.s.PromptTokens != 100 || last.s.Running != 0 {
		t.Errorf("last sample at %v = %+v; want at the end (%v) with 1 finished, 40 generated, 100 prompt tokens", time.Duration(last.at), last.s, time.Duration(res.End))
	}
	// Without SampleEvery nothing is sampled.
	n := len(got)
	collect(t, newEngine(t, nil), shapes{{PromptTokens: 100, OutputTokens: 40}}, Load{Sample: func(int64, sim.Snapshot) { got = append(got, sample{}) }})
	if len(got) != n {
		t.Errorf("sampled %d times without SampleEvery", len(got)-n)
	}
}

// Sessions in virtual time are sampled alike.
func TestSessionsSampleEvery(t *testing.T) {
	set, err := workload.NewSessions("s", []workload.Session{{ID: "a", Turns: []workload.Turn{
		{InputTokens: 100, OutputTokens: 20}, {InputTokens: 30, OutputTokens: 10, ThinkTime: 50 * time.Millisecond}}}})
	if err != nil {
		t.Fatal(err)
	}
	var last sim.Snapshot
	var n int
	res, err := RunSessions(t.Context(), newEngine(t, nil), SessionLoad{Sessions: set, SampleEvery: 10 * time.Millisecond,
		Sample: func(_ int64, s sim.Snapshot) { last, n = s, n+1 }}, func(*runlog.Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := int(res.End/int64(10*time.Millisecond)) + 1; n < want || last.Finished != 2 || last.GenerationTokens != 30 {
		t.Errorf("%d samples (want ≥ %d), last %+v; want 2 finished, 30 generated", n, want, last)
	}
}
