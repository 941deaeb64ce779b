package stats

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

// benchAdd feeds n synthetic records of tokens chunks each (one token per
// chunk, 20 ms apart, after a 100–400 ms TTFT) into an Accumulator, reusing
// one Record so the benchmark measures the aggregation, not record building.
func benchAdd(b *testing.B, n, tokens int) {
	b.ReportAllocs()
	var live float64
	rec := runlog.Record{Chunks: make([]runlog.Chunk, tokens), CompletionTokens: tokens, TokenSource: runlog.TokensUsage, Status: 200}
	for b.Loop() {
		a := NewAccumulator(Options{SLO: SLO{TTFT: 300 * 1e6, TPOT: 25 * 1e6}})
		for i := range n {
			sent := int64(i) * 10 * ms // 100 req/s
			rec.Intended, rec.Sent = sent, sent+int64(i%7)*ms/10
			rec.PromptTokens = 100 + (i*37)%9000
			first := rec.Sent + int64(100+i%300)*ms
			for j := range rec.Chunks {
				rec.Chunks[j] = runlog.Chunk{T: first + int64(j)*20*ms + int64((i+j)%5)*ms, Tokens: 1, Visible: true}
			}
			rec.End = rec.Chunks[tokens-1].T + ms
			a.Add(&rec)
		}
		s := a.Summary()
		if s.Completed != n {
			b.Fatalf("Completed = %d; want %d", s.Completed, n)
		}
		live = liveMiB()
		runtime.KeepAlive(a)
	}
	// Memory the Accumulator holds once everything is added: what a long
	// run costs, beyond the records themselves.
	b.ReportMetric(live, "MiB-live")
}

func liveMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

func BenchmarkAddSummary(b *testing.B) {
	for _, c := range []struct{ n, tokens int }{{1000, 100}, {100_000, 10}, {100_000, 500}} {
		b.Run(fmt.Sprintf("records=%d/tokens=%d", c.n, c.tokens), func(b *testing.B) { benchAdd(b, c.n, c.tokens) })
	}
}
