package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

func Example() {
	ms := int64(time.Millisecond)
	recs := []runlog.Record{
		{Sent: 0, End: 340 * ms, PromptTokens: 512, CompletionTokens: 3, Chunks: []runlog.Chunk{
			{T: 300 * ms, Tokens: 1, Visible: true}, {T: 320 * ms, Tokens: 1, Visible: true}, {T: 340 * ms, Tokens: 1, Visible: true}}},
	}
	s := stats.Summarize(recs, stats.Options{Percentiles: []float64{99}})
	var b bytes.Buffer
	if err := report.Terminal(&b, &s, nil, report.TermOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	// The first lines read like vllm bench serve's result block.
	fmt.Println(strings.Join(strings.Split(b.String(), "\n")[:5], "\n"))

	js, err := report.ResultJSON(&s, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := report.ParseResultJSON(js)
	if err != nil {
		fmt.Println(err)
		return
	}
	p99, _ := r.Metrics["ttft"].P(99)
	fmt.Printf("parsed back: %d completed, p99 TTFT %.2f ms\n", r.Completed, p99)
	// Output:
	// ============ Serving Benchmark Result ============
	// Successful requests:                     1
	// Failed requests:                         0
	// Benchmark duration (s):                  0.34
	// Total input tokens:                      512
	// parsed back: 1 completed, p99 TTFT 300.00 ms
}
