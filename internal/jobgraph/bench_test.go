package jobgraph

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// syntheticWeka writes a Weka trace of about n requests: a main agent
// whose every tenth request launches a two-request sub-agent that the
// next main request joins, each prompt growing by two 64-token blocks.
func syntheticWeka(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id": "big", "block_size": 64, "hash_id_scope": "local", "requests": [` + "\n")
	ids := func(k int) string {
		var s bytes.Buffer
		for i := range k {
			if i > 0 {
				s.WriteByte(',')
			}
			fmt.Fprint(&s, 1000+i)
		}
		return s.String()
	}
	t := 0.0
	blocks := 4
	for i := 0; i < n; {
		if i > 0 {
			b.WriteString(",\n")
		}
		if i%10 == 9 {
			fmt.Fprintf(&b, `{"t": %.3f, "type": "subagent", "agent_id": "a%d", "duration_ms": 2000, "requests": [`, t, i)
			fmt.Fprintf(&b, `{"t": %.3f, "type": "s", "in": 256, "out": 32, "hash_ids": [%s], "api_time": 0.5, "think_time": 0.1},`, t, ids(4))
			fmt.Fprintf(&b, `{"t": %.3f, "type": "s", "in": 384, "out": 32, "hash_ids": [%s], "api_time": 0.5, "think_time": 0.1}]}`, t+0.6, ids(6))
			i += 2
			continue
		}
		blocks = min(blocks+2, 2000) // a 128k-token context at most
		fmt.Fprintf(&b, `{"t": %.3f, "type": "n", "in": %d, "out": 64, "hash_ids": [%s], "api_time": 1.0, "think_time": 0.5}`, t, blocks*64, ids(blocks))
		t += 1.5
		i++
	}
	b.WriteString("\n]}\n")
	return b.Bytes()
}

// BenchmarkLoadWeka states the load cost of a large Weka trace (about
// 20,000 requests, most with hundreds to 2,000 hash ids): the bytes per
// second a loader reads and the allocations per trace.
func BenchmarkLoadWeka(b *testing.B) {
	data := syntheticWeka(20000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var nodes int
	for b.Loop() {
		jobs, err := LoadWeka("big.json", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		nodes = len(jobs[0].Nodes)
	}
	b.ReportMetric(float64(nodes), "requests")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/request")
}

// BenchmarkLoadTraceLab states the load cost of 100,000 TraceLab rounds
// in 1,000 sessions.
func BenchmarkLoadTraceLab(b *testing.B) {
	var buf bytes.Buffer
	const sessions, rounds = 1000, 100
	for r := range rounds {
		for s := range sessions {
			prefix := r * 600
			fmt.Fprintf(&buf, `{"session_id":"claude:%d","round_index":%d,"model":"m","input_tokens_total":%d,"prefix_tokens":%d,"newly_append_tokens":500,"output_tokens":100,"tools":[{"tool_name":"Bash","tool_wall_latency_ms":1200}]}`+"\n",
				s, r, prefix+500, prefix)
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		jobs, err := LoadTraceLab("big.jsonl", bytes.NewReader(data))
		if err != nil || len(jobs) != sessions {
			b.Fatal(len(jobs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sessions*rounds), "ns/request")
}

// BenchmarkComputations states the cost of the three computations on the
// large Weka trace once loaded.
func BenchmarkComputations(b *testing.B) {
	jobs, err := LoadWeka("big.json", bytes.NewReader(syntheticWeka(20000)))
	if err != nil {
		b.Fatal(err)
	}
	j := &jobs[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Plan(func(int) time.Duration { return time.Second }); err != nil {
			b.Fatal(err)
		}
		if _, err := j.Prompts(); err != nil {
			b.Fatal(err)
		}
		if _, _, err := j.CacheHits(); err != nil {
			b.Fatal(err)
		}
	}
}
