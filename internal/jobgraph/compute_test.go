package jobgraph

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// twoAgents is the hand-worked DAG: a main agent's request m0 launches
// two sub-agents, a long one (a0 -> a1 -> a2) and a short one (b0), and
// its next request m1 joins both.
//
//	node  waits for     gap  duration  start  finish
//	m0    -             1s   2s        1      3
//	a0    m0            0s   4s        3      7
//	a1    a0            1s   3s        8      11
//	a2    a1            0s   2s        11     13
//	b0    m0            2s   5s        5      10
//	m1    m0, a2, b0    1s   3s        14     17   (max(3, 13, 10) + 1)
//
// The job takes 17s, and its time depended on m0, a0, a1, a2, m1: the
// short sub-agent b0 is off the critical path.
func twoAgents() *Job {
	return &Job{ID: "two", Nodes: []Node{
		{ID: "m0", Gap: time.Second, New: 100, Out: 10},
		{ID: "a0", After: []string{"m0"}, New: 20, Out: 5, Depth: 1, Agent: "long"},
		{ID: "a1", After: []string{"a0"}, From: "a0", Context: Fork, Gap: time.Second, New: 7, Out: 6, Depth: 1, Agent: "long"},
		{ID: "a2", After: []string{"a1"}, From: "a1", Context: Fork, New: 3, Out: 4, Depth: 1, Agent: "long"},
		{ID: "b0", After: []string{"m0"}, Gap: 2 * time.Second, New: 30, Out: 8, Depth: 1, Agent: "short"},
		{ID: "m1", After: []string{"m0", "a2", "b0"}, From: "m0", Context: Fork, Gap: time.Second, New: 2, Out: 1},
	}}
}

var twoAgentsDur = map[string]time.Duration{"m0": 2, "a0": 4, "a1": 3, "a2": 2, "b0": 5, "m1": 3}

func TestPlanTwoSubAgents(t *testing.T) {
	j := twoAgents()
	s, err := j.Plan(func(i int) time.Duration { return twoAgentsDur[j.Nodes[i].ID] * time.Second })
	if err != nil {
		t.Fatal(err)
	}
	sec := func(ds []time.Duration) []float64 {
		var out []float64
		for _, d := range ds {
			out = append(out, d.Seconds())
		}
		return out
	}
	if diff := cmp.Diff([]float64{1, 3, 8, 11, 5, 14}, sec(s.Start)); diff != "" {
		t.Errorf("Start (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{3, 7, 11, 13, 10, 17}, sec(s.Finish)); diff != "" {
		t.Errorf("Finish (-want +got):\n%s", diff)
	}
	if s.End != 17*time.Second {
		t.Errorf("End = %v; want 17s", s.End)
	}
	var path []string
	for _, x := range s.Critical {
		path = append(path, j.Nodes[x].ID)
	}
	if diff := cmp.Diff([]string{"m0", "a0", "a1", "a2", "m1"}, path); diff != "" {
		t.Errorf("Critical (-want +got):\n%s", diff)
	}
	// The short sub-agent made long enough to finish last (b0 12s:
	// finishes at 17) takes over the critical path: 17 + 1 + 3 = 21.
	twoAgentsDur["b0"] = 12
	defer func() { twoAgentsDur["b0"] = 5 }()
	s, _ = j.Plan(func(i int) time.Duration { return twoAgentsDur[j.Nodes[i].ID] * time.Second })
	path = path[:0]
	for _, x := range s.Critical {
		path = append(path, j.Nodes[x].ID)
	}
	if s.End != 21*time.Second || len(path) != 3 || path[1] != "b0" {
		t.Errorf("with b0 12s: End = %v, Critical = %v; want 21s, [m0 b0 m1]", s.End, path)
	}
}

func TestPlanEmptyAndUnchecked(t *testing.T) {
	s, err := (&Job{}).Plan(func(int) time.Duration { return time.Second })
	if err != nil || s.End != 0 || len(s.Critical) != 0 {
		t.Errorf("empty job: Plan = %+v, %v; want End 0, no path", s, err)
	}
	bad := &Job{ID: "j", Nodes: []Node{{ID: "a", After: []string{"a"}}}}
	if _, err := bad.Plan(func(int) time.Duration { return 0 }); err == nil {
		t.Error("Plan on a cyclic job = nil error")
	}
	if _, err := bad.Prompts(); err == nil {
		t.Error("Prompts on a cyclic job = nil error")
	}
	if _, _, err := bad.CacheHits(); err == nil {
		t.Error("CacheHits on a cyclic job = nil error")
	}
}

// TestPromptsForkSpawnLast works out the prompt lengths of the two
// sub-agent DAG by hand under each context for sub-agent a0 and b0.
//
//	m0 = 100 (New, root)
//	a1 = fork of a0: a0 + 5 + 7;  a2 = fork of a1: a1 + 6 + 3
//	m1 = fork of m0: 100 + 10 + answers of a2 (4) and b0 (8) + 2 = 124
//
//	sub-agents   a0                     b0                a1   a2
//	spawn        20                     30                32   41
//	fork (m0)    100+10+20 = 130        100+10+30 = 140   142  151
//	last (m0)    10+20 = 30             10+30 = 40        42   51
func TestPromptsForkSpawnLast(t *testing.T) {
	tests := []struct {
		ctx  Context
		want []int // m0 a0 a1 a2 b0 m1
	}{
		{Spawn, []int{100, 20, 32, 41, 30, 124}},
		{Fork, []int{100, 130, 142, 151, 140, 124}},
		{Last, []int{100, 30, 42, 51, 40, 124}},
	}
	for _, tt := range tests {
		t.Run(tt.ctx.String(), func(t *testing.T) {
			j := twoAgents()
			for _, i := range []int{1, 4} {
				j.Nodes[i].Context = tt.ctx
				if tt.ctx != Spawn {
					j.Nodes[i].From = "m0"
				}
			}
			got, err := j.Prompts()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Prompts() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPromptsLastJoin: a Last node carries the answers of From and of
// everything else it waits for, once each.
func TestPromptsLastJoin(t *testing.T) {
	j := &Job{ID: "j", Nodes: []Node{
		{ID: "a", New: 50, Out: 7},
		{ID: "b", New: 60, Out: 9},
		{ID: "c", After: []string{"a", "b"}, From: "a", Context: Last, New: 1},
	}}
	got, err := j.Prompts()
	if err != nil {
		t.Fatal(err)
	}
	if got[2] != 7+9+1 {
		t.Errorf("Prompts()[c] = %d; want 17", got[2])
	}
}

// TestCacheHits works the unbounded prefix cache by hand on four prompts
// of block size 10:
//
//	node  ids          seen before        hit blocks  tokens  hit tokens
//	p     1 2 3        -                  0           30      0
//	q     1 2 4 5      1 2                2           35      20  (In 35: last block partial)
//	r     1 2 3 6      1 2 3              3           40      30
//	s     7 1 2        - (7 is new)       0           30      0   (a hit after a miss is no prefix hit)
//
// Overall 5 of 14 blocks, 50 of 135 tokens.
func TestCacheHits(t *testing.T) {
	j := &Job{ID: "j", BlockSize: 10, Nodes: []Node{
		{ID: "p", HashIDs: []int64{1, 2, 3}},
		{ID: "q", After: []string{"p"}, In: 35, HashIDs: []int64{1, 2, 4, 5}},
		{ID: "r", After: []string{"q"}, HashIDs: []int64{1, 2, 3, 6}},
		{ID: "s", HashIDs: []int64{7, 1, 2}},
	}}
	per, all, err := j.CacheHits()
	if err != nil {
		t.Fatal(err)
	}
	want := []CacheHit{
		{Blocks: 3, HitBlocks: 0, Tokens: 30, HitTokens: 0},
		{Blocks: 4, HitBlocks: 2, Tokens: 35, HitTokens: 20},
		{Blocks: 4, HitBlocks: 3, Tokens: 40, HitTokens: 30},
		{Blocks: 3, HitBlocks: 0, Tokens: 30, HitTokens: 0},
	}
	if diff := cmp.Diff(want, per); diff != "" {
		t.Errorf("CacheHits per node (-want +got):\n%s", diff)
	}
	if wantAll := (CacheHit{Blocks: 14, HitBlocks: 5, Tokens: 135, HitTokens: 50}); all != wantAll {
		t.Errorf("CacheHits overall = %+v; want %+v", all, wantAll)
	}
	if got, want := all.Share(), 50.0/135; got != want {
		t.Errorf("Share() = %v; want %v", got, want)
	}
	if got := (CacheHit{}).Share(); got != 0 {
		t.Errorf("empty Share() = %v; want 0", got)
	}
}
