package promexport

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// BenchmarkObserve is the metrics' work per finished request of 200
// tokens.
func BenchmarkObserve(b *testing.B) {
	m, err := NewMetrics(MetricsOptions{Registerer: prometheus.NewRegistry(), SLO: stats.SLO{TTFT: time.Second, TPOT: 50 * time.Millisecond}})
	if err != nil {
		b.Fatal(err)
	}
	rec := runlog.Record{Status: 200, PromptTokens: 500, CompletionTokens: 200}
	for i := range 200 {
		rec.Chunks = append(rec.Chunks, runlog.Chunk{T: int64(i) * 20e6, Tokens: 1, Visible: true})
	}
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveLabeled(&rec, "m", RouteChat)
	}
}
