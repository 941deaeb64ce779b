package stats

import (
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

// BenchmarkAddConfidence is the cost of one record through Add, and of the
// Summary after 5,000 of them, without intervals (the default: the hot
// path pays one nil test per sample) and with them (each sample also goes
// into its batch: an addition and a histogram count; the intervals
// themselves are computed in Summary, never per event).
func BenchmarkAddConfidence(b *testing.B) {
	const n, tokens = 5_000, 100
	recs := make([]runlog.Record, n)
	for i := range recs {
		sent := int64(i) * 10 * ms
		r := runlog.Record{Intended: sent, Sent: sent + int64(i%7)*ms/10, PromptTokens: 100 + (i*37)%9000,
			CompletionTokens: tokens, TokenSource: runlog.TokensUsage, Status: 200, Chunks: make([]runlog.Chunk, tokens)}
		first := r.Sent + int64(100+i%300)*ms
		for j := range r.Chunks {
			r.Chunks[j] = runlog.Chunk{T: first + int64(j)*20*ms + int64((i+j)%5)*ms, Tokens: 1, Visible: true}
		}
		r.End = r.Chunks[tokens-1].T + ms
		recs[i] = r
	}
	for _, c := range []struct {
		name string
		conf float64
	}{{"off", 0}, {"on", DefaultConfidence}} {
		o := Options{SLO: SLO{TTFT: 300 * 1e6, TPOT: 25 * 1e6}, Confidence: c.conf}
		b.Run("add/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a := NewAccumulator(o)
				for i := range recs {
					a.Add(&recs[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
		b.Run("summary/"+c.name, func(b *testing.B) {
			a := NewAccumulator(o)
			for i := range recs {
				a.Add(&recs[i])
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Summary()
			}
		})
	}
}
