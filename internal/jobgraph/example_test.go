package jobgraph_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/jobgraph"
)

// A main agent launches a sub-agent with a fresh context and joins it:
// the job's time, its critical path, the prompts and the implied cache
// hits, from a three-request Weka trace.
func Example() {
	trace := `{"id": "demo", "block_size": 4, "requests": [
  {"t": 0, "type": "n", "in": 8, "out": 2, "hash_ids": [1, 2], "api_time": 1},
  {"t": 1, "type": "subagent", "agent_id": "helper", "requests": [
    {"t": 1.5, "type": "n", "in": 4, "out": 2, "hash_ids": [1], "api_time": 2}]},
  {"t": 4, "type": "n", "in": 16, "out": 2, "hash_ids": [1, 2, 3, 4], "api_time": 1}]}`
	jobs, err := jobgraph.LoadWeka("demo.json", strings.NewReader(trace))
	if err != nil {
		fmt.Println(err)
		return
	}
	j := &jobs[0]
	for _, n := range j.Nodes {
		fmt.Printf("%s waits for %v, gap %v, %s, depth %d\n", n.ID, n.After, n.Gap, n.Context, n.Depth)
	}
	api := []time.Duration{time.Second, 2 * time.Second, time.Second}
	s, _ := j.Plan(func(i int) time.Duration { return api[i] })
	fmt.Println("job time", s.End, "critical path", s.Critical)
	prompts, _ := j.Prompts()
	_, hits, _ := j.CacheHits()
	fmt.Printf("prompts %v, implied cache hits %d of %d tokens\n", prompts, hits.HitTokens, hits.Tokens)
	// Output:
	// 0 waits for [], gap 0s, spawn, depth 0
	// 1/0 waits for [0], gap 500ms, spawn, depth 1
	// 2 waits for [0 1/0], gap 500ms, fork, depth 0
	// job time 5s critical path [0 1 2]
	// prompts [8 4 16], implied cache hits 12 of 28 tokens
}
