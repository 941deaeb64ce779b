package findings_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Analyze explains a run; here 100 identical requests at concurrency 1.
func Example() {
	const ms = 1_000_000
	recs := make([]runlog.Record, 100)
	for i := range recs {
		t0 := int64(i) * 1000 * ms
		r := runlog.Record{ID: fmt.Sprint(i), Intended: t0, Sent: t0, PromptTokens: 2048, CompletionTokens: 11, Status: 200}
		for k := range 11 {
			r.Chunks = append(r.Chunks, runlog.Chunk{T: t0 + int64(300+40*k)*ms, Tokens: 1, Visible: true})
		}
		r.End = r.Chunks[10].T
		recs[i] = r
	}
	slo, _ := stats.ParseSLO("ttft:2000")
	s := stats.Summarize(recs, stats.Options{SLO: slo})
	fs := findings.Analyze(findings.Input{Summary: &s, Level: &runlog.Level{MaxConcurrency: 1}})
	for _, f := range fs {
		fmt.Println(f.ID)
	}
	fmt.Println(findings.SLASentence(findings.Input{Summary: &s, Level: &runlog.Level{MaxConcurrency: 1}}))
	// Output:
	// tpot-below-reading-speed
	// uniform-lengths
	// concurrency-one
	// sla
	// TTFT P50 300 ms, P99 300 ms; TPOT P99 40 ms; input P95 2K tokens, concurrency 1; SLO per request TTFT <= 2 s: met by 100 % of requests, P99 headroom ~85 %
}
