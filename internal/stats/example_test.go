package stats_test

import (
	"fmt"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

func Example() {
	ms := int64(time.Millisecond)
	// Two requests sent at 0 and 100 ms, each streaming three tokens.
	recs := []runlog.Record{
		{Sent: 0, End: 340 * ms, PromptTokens: 512, CompletionTokens: 3, Chunks: []runlog.Chunk{
			{T: 300 * ms, Tokens: 1, Visible: true}, {T: 320 * ms, Tokens: 1, Visible: true}, {T: 340 * ms, Tokens: 1, Visible: true}}},
		{Sent: 100 * ms, End: 700 * ms, PromptTokens: 2048, CompletionTokens: 3, Chunks: []runlog.Chunk{
			{T: 600 * ms, Tokens: 1, Visible: true}, {T: 650 * ms, Tokens: 1, Visible: true}, {T: 700 * ms, Tokens: 1, Visible: true}}},
	}
	slo, err := stats.ParseSLO("ttft:400 tpot:30")
	if err != nil {
		fmt.Println(err)
		return
	}
	s := stats.Summarize(recs, stats.Options{Percentiles: []float64{50, 99}, SLO: slo})
	ttft, _ := s.Metric(stats.MetricTTFT)
	p99, _ := ttft.P(99)
	fmt.Printf("duration %.2f s, %.2f req/s, goodput %.2f req/s (%.0f%% met)\n",
		s.DurationS, s.RequestThroughput, s.SLO.Goodput, 100*s.SLO.Attainment)
	fmt.Printf("TTFT mean %.2f ms, P99 %.2f ms\n", ttft.Mean, p99)
	// Output:
	// duration 0.70 s, 2.86 req/s, goodput 1.43 req/s (50% met)
	// TTFT mean 400.00 ms, P99 498.00 ms
}
