package simrun

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

func runJobsTest(t *testing.T, cfg sim.Config, load JobLoad) ([]*runlog.Record, SessionResult) {
	t.Helper()
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*runlog.Record
	res, err := RunJobs(context.Background(), eng, load, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("RunJobs: %v", err)
	}
	if res.Sent != len(recs) || res.Completed+res.Failed != res.Sent {
		t.Fatalf("result %+v with %d records; want every sent request recorded", res.Result, len(recs))
	}
	return recs, res
}

// TestRunJobsTwoSubAgentsJoined: a main request launches two sub-agents
// of unequal length, joined by a last request. Every request is sent
// exactly when the last of what it waits for ended plus its gap, and the
// job's time is the critical path through the longer sub-agent, worked
// out by hand from the measured durations — and jobgraph.Plan over the
// same durations agrees.
func TestRunJobsTwoSubAgentsJoined(t *testing.T) {
	job := jobgraph.Job{ID: "job", Nodes: []jobgraph.Node{
		{ID: "0", In: 400, Out: 20},
		{ID: "a0", After: []string{"0"}, Gap: time.Second, In: 300, Out: 40},
		{ID: "a1", After: []string{"a0"}, Gap: 2 * time.Second, Context: jobgraph.Fork, From: "a0", In: 500, Out: 40},
		{ID: "b0", After: []string{"0"}, Gap: 500 * time.Millisecond, In: 200, Out: 10},
		{ID: "2", After: []string{"a1", "b0"}, Gap: time.Second, Context: jobgraph.Fork, From: "0", In: 600, Out: 30},
	}}
	start := 3 * time.Second
	job.Start = start
	recs, res := runJobsTest(t, sim.DefaultConfig(), JobLoad{Jobs: []jobgraph.Job{job}})
	if res.Sessions != 1 || res.SessionsCompleted != 1 || len(recs) != 5 {
		t.Fatalf("jobs %d, completed %d, records %d; want 1, 1, 5", res.Sessions, res.SessionsCompleted, len(recs))
	}
	by := map[string]*runlog.Record{}
	for _, r := range recs {
		if !r.OK() || r.SessionID != "job" || r.ID != "j0-"+r.JobNode {
			t.Fatalf("record %+v; want a successful request of job \"job\"", r)
		}
		by[r.JobNode] = r
	}
	// Each send is the latest predecessor's end plus the gap.
	for _, nd := range job.Nodes {
		r := by[nd.ID]
		ready := int64(start)
		for _, a := range nd.After {
			ready = max(ready, by[a].End)
		}
		if want := ready + int64(nd.Gap); r.Sent != want || r.Intended != want {
			t.Errorf("%s sent at %v (intended %v); want %v", nd.ID, time.Duration(r.Sent), time.Duration(r.Intended), time.Duration(want))
		}
		if r.PromptTokens != nd.In || r.CompletionTokens != nd.Out {
			t.Errorf("%s: %d prompt, %d completion tokens; want %d, %d", nd.ID, r.PromptTokens, r.CompletionTokens, nd.In, nd.Out)
		}
		if !cmp.Equal(r.JobAfter, nd.After) || r.JobGapNs != int64(nd.Gap) {
			t.Errorf("%s: after %v gap %d; want %v, %d", nd.ID, r.JobAfter, r.JobGapNs, nd.After, nd.Gap)
		}
	}
	d := func(id string) time.Duration { return time.Duration(by[id].End - by[id].Sent) }
	// Sub-agent a (1 s + a0 + 2 s + a1) is longer than b (0.5 s + b0)
	// whatever the model times here (each well under a second).
	if long, short := time.Second+d("a0")+2*time.Second+d("a1"), 500*time.Millisecond+d("b0"); long <= short {
		t.Fatalf("sub-agent a %v not longer than b %v", long, short)
	}
	byHand := d("0") + time.Second + d("a0") + 2*time.Second + d("a1") + time.Second + d("2")
	if got := time.Duration(by["2"].End) - start; got != byHand {
		t.Errorf("job time %v; want the critical path 0 → a0 → a1 → 2 by hand, %v", got, byHand)
	}
	s, err := job.Plan(func(i int) time.Duration { return d(job.Nodes[i].ID) })
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, i := range s.Critical {
		path = append(path, job.Nodes[i].ID)
	}
	if s.End != byHand || !cmp.Equal(path, []string{"0", "a0", "a1", "2"}) {
		t.Errorf("Plan: end %v, critical path %v; want %v, [0 a0 a1 2]", s.End, path, byHand)
	}
}

// TestRunJobsCacheHitsAsTraceImplies: with a cache that never evicts, the
// prefix cache's measured hit share over a Weka job (a main agent whose
// prompt grows block by block, and a sub-agent forked from a shared
// prefix) is within a point of what the trace's hash ids imply.
func TestRunJobsCacheHitsAsTraceImplies(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id": "grow", "block_size": 16, "requests": [`)
	ids := func(lo, n int) string {
		s := make([]string, n)
		for k := range s {
			s[k] = fmt.Sprint(lo + k)
		}
		return strings.Join(s, ",")
	}
	for k := range 12 {
		blocks := 20 + 6*k
		if k > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"t": %d, "type": "n", "in": %d, "out": 24, "hash_ids": [%s], "api_time": 1, "think_time": 0.2}`,
			3*k, 16*blocks+5, ids(1, blocks))
		if k == 5 {
			// A sub-agent sharing the first 10 blocks, then its own.
			fmt.Fprintf(&b, `,{"t": %d, "type": "subagent", "agent_id": "sub", "requests": [
			  {"t": %d, "type": "s", "in": %d, "out": 16, "hash_ids": [%s,%s], "api_time": 1},
			  {"t": %d, "type": "s", "in": %d, "out": 16, "hash_ids": [%s,%s], "api_time": 1}]}`,
				3*k+1, 3*k+1, 16*30, ids(1, 10), ids(1000, 20), 3*k+2, 16*40+3, ids(1, 10), ids(1000, 30))
		}
	}
	b.WriteString("]}")
	jobs, err := jobgraph.LoadWeka("grow.json", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	_, implied, err := jobs[0].CacheHits()
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.NumGPUBlocksOverride = 1 << 20 // nothing is ever evicted
	recs, _ := runJobsTest(t, cfg, JobLoad{Jobs: jobs})
	var cached, prompt, impliedSum int
	for _, r := range recs {
		cached += r.CachedTokens
		prompt += r.PromptTokens
		impliedSum += *r.JobImpliedCached
	}
	measured := float64(cached) / float64(prompt)
	if impliedSum != implied.HitTokens || prompt != implied.Tokens {
		t.Errorf("records imply %d of %d tokens; CacheHits %d of %d", impliedSum, prompt, implied.HitTokens, implied.Tokens)
	}
	if math.Abs(measured-implied.Share()) > 0.01 || implied.Share() < 0.5 {
		t.Errorf("measured hit share %.4f, implied %.4f; want within 1 point (and the job mostly cached)", measured, implied.Share())
	}
	t.Logf("measured %.4f (%d of %d), implied %.4f", measured, cached, prompt, implied.Share())
}

// TestRunJobsForkFindsParentWithoutHashIDs: a job whose trace has no hash
// ids (OpenTelemetry) gets prompts built from its context rules, so a
// fork finds its parent's prompt and answer in the cache and a spawn
// finds nothing.
func TestRunJobsForkFindsParentWithoutHashIDs(t *testing.T) {
	job := jobgraph.Job{ID: "otel", Nodes: []jobgraph.Node{
		{ID: "p", In: 640, Out: 64},
		{ID: "f", After: []string{"p"}, Context: jobgraph.Fork, From: "p", In: 640 + 64 + 96, Out: 8},
		{ID: "s", After: []string{"p"}, Context: jobgraph.Spawn, In: 320, Out: 8},
	}}
	recs, _ := runJobsTest(t, sim.DefaultConfig(), JobLoad{Jobs: []jobgraph.Job{job}})
	by := map[string]*runlog.Record{}
	for _, r := range recs {
		by[r.JobNode] = r
		if r.JobImpliedCached != nil {
			t.Errorf("%s: implied cache hits %d from a trace with no hash ids", r.JobNode, *r.JobImpliedCached)
		}
	}
	// The parent's 704 tokens of prompt and answer, in 16-token blocks,
	// but the answer's last token, whose KV is never computed: 688.
	if got := by["f"].CachedTokens; got != 688 {
		t.Errorf("fork cached %d tokens; want 688", got)
	}
	if got := by["s"].CachedTokens; got != 0 {
		t.Errorf("spawn cached %d tokens; want 0", got)
	}
}

// TestRunJobsFailureEndsJob: a request that fails (here, a prompt longer
// than the engine's context) ends its job: nothing waiting on it is sent.
func TestRunJobsFailureEndsJob(t *testing.T) {
	job := jobgraph.Job{ID: "bad", Nodes: []jobgraph.Node{
		{ID: "0", In: 100, Out: 4},
		{ID: "big", After: []string{"0"}, In: 10_000_000, Out: 4},
		{ID: "next", After: []string{"big"}, In: 100, Out: 4},
	}}
	recs, res := runJobsTest(t, sim.DefaultConfig(), JobLoad{Jobs: []jobgraph.Job{job}})
	if len(recs) != 2 || res.SessionsFailed != 1 || recs[1].OK() {
		t.Errorf("%d records, %d jobs failed; want 2 (the second failed), 1", len(recs), res.SessionsFailed)
	}
}

// TestRunJobsBadGraph: a job whose graph does not check (a cycle, a
// dependency on an unknown request) runs nothing: RunJobs returns the
// graph's one-line error naming file:line and emits no record.
func TestRunJobsBadGraph(t *testing.T) {
	src := func(line int) jobgraph.Source { return jobgraph.Source{File: "bad.json", Line: line} }
	tests := []struct {
		name  string
		nodes []jobgraph.Node
		want  string
	}{
		{"cycle", []jobgraph.Node{
			{ID: "a", After: []string{"b"}, In: 1, Out: 1, Source: src(2)},
			{ID: "b", After: []string{"a"}, In: 1, Out: 1, Source: src(3)},
		}, `bad.json:2: job "j": request "a": dependency cycle: "a" -> "b" -> "a"`},
		{"unknown dependency", []jobgraph.Node{
			{ID: "a", In: 1, Out: 1, Source: src(2)},
			{ID: "b", After: []string{"x"}, In: 1, Out: 1, Source: src(3)},
		}, `bad.json:3: job "j": request "b": waits for unknown request "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := sim.New(sim.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			emitted := 0
			_, err = RunJobs(context.Background(), eng, JobLoad{Jobs: []jobgraph.Job{{ID: "j", Nodes: tt.nodes}}},
				func(*runlog.Record) error { emitted++; return nil })
			if err == nil || err.Error() != tt.want || emitted != 0 {
				t.Errorf("RunJobs = %v with %d records; want %q and none", err, emitted, tt.want)
			}
		})
	}
}

// agentJob is a job of an orchestrator that plans, fans out to two
// sub-agents of three tool rounds each (each round forks its history),
// and joins them in a final answer: 8 requests, 1–3 s tool gaps.
func agentJob(i int) jobgraph.Job {
	id := "job" + strconv.Itoa(i)
	nodes := []jobgraph.Node{{ID: "plan", New: 800 + 10*(i%7), Out: 120}}
	for _, sub := range []string{"a", "b"} {
		prev := "plan"
		for r := range 3 {
			n := jobgraph.Node{ID: sub + strconv.Itoa(r), After: []string{prev}, Gap: time.Duration(1+r) * time.Second,
				New: 300 + 50*r, Out: 60 + 20*(i%3)}
			if r > 0 {
				n.Context, n.From = jobgraph.Fork, prev
			}
			nodes = append(nodes, n)
			prev = n.ID
		}
	}
	nodes = append(nodes, jobgraph.Node{ID: "answer", After: []string{"a2", "b2"}, Gap: 500 * time.Millisecond,
		Context: jobgraph.Fork, From: "plan", New: 400, Out: 300})
	return jobgraph.Job{ID: id, Nodes: nodes}
}

// BenchmarkAgentJobs10k is 10,000 agent jobs (80,000 requests with their
// forks and joins) arriving at 20 jobs/s on one engine: RunJobs' graph
// walk, prompt segments and block hashing on top of the engine.
func BenchmarkAgentJobs10k(b *testing.B) {
	jobs := make([]jobgraph.Job, 100)
	for i := range jobs {
		jobs[i] = agentJob(i)
	}
	n := perfgoal.Size(10_000, 100)
	for b.Loop() {
		eng, err := sim.New(sim.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		res, err := RunJobs(context.Background(), eng, JobLoad{Jobs: jobs, NumJobs: n, Rate: 20, Burstiness: 1, Seed: 1},
			func(*runlog.Record) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if res.SessionsCompleted != n {
			b.Fatalf("completed %d of %d jobs (failed %d)", res.SessionsCompleted, n, res.SessionsFailed)
		}
		b.ReportMetric(float64(res.Completed), "requests")
		b.ReportMetric(res.Duration().Seconds(), "virtual-s")
	}
}
