package run

import (
	"runtime"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// soakRecord fills rec (its Chunks and Server allocated) as the i-th
// request of a long steady run: 1,000 requests/s, folded onto its first
// 200 s (the time-binned timelines, bounded by time on their own, then
// stop growing, so only what is kept per request can), 500-token prompts (one
// bucket, so its series pass their bound with the run's), 64 one-token
// chunks, a failure in 100, server timing.
func soakRecord(rec *runlog.Record, i int) {
	const ms = int64(1e6)
	sent := int64(i%200_000) * ms
	rec.Intended, rec.Sent = sent, sent+int64(i%7)*1000
	rec.PromptTokens = 500
	rec.Status, rec.ErrorClass = 200, ""
	if i%100 == 99 {
		rec.Status, rec.ErrorClass = 500, runlog.ErrHTTP5xx
	}
	t := rec.Sent + int64(100+(i*31)%400)*ms
	for j := range rec.Chunks {
		if j > 0 {
			t += int64(10+(i+j*13)%40) * ms / 2
		}
		rec.Chunks[j] = runlog.Chunk{T: t, Tokens: 1, Visible: true}
	}
	rec.CompletionTokens, rec.End = len(rec.Chunks), t+ms
	*rec.Server = runlog.ServerTiming{ArrivalNs: sent, QueueNs: int64(i%50) * ms, PrefillNs: 20 * ms, DecodeNs: 100 * ms}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCollectorSoakFlat feeds N and then N more records through a level's
// collector (everything a run keeps per request: the summary's series and
// buckets, the findings' tracker, the server's queue and TTFT split, the
// class counter), N past every exact
// bound, and checks the live heap hardly grows over the second N: a soak
// of any length runs in the memory of its first N requests.
func TestCollectorSoakFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("feeds 600,000 records")
	}
	// 64 chunks: N requests pass ExactGaps as well as ExactRequests.
	const n = stats.ExactRequests + stats.ExactRequests/8
	if n*63 <= stats.ExactGaps {
		t.Fatalf("N = %d requests of 63 gaps do not pass ExactGaps", n)
	}
	rec := runlog.Record{Chunks: make([]runlog.Chunk, 64), Server: &runlog.ServerTiming{}, TokenSource: runlog.TokensUsage}
	slo, err := stats.ParseSLO("ttft:300 tpot:30")
	if err != nil {
		t.Fatal(err)
	}
	so := stats.Options{SLO: slo}
	col := newCollector(so, false, nil, nil)
	var heap [2]uint64
	i := 0
	for k := range heap {
		for ; i < (k+1)*n; i++ {
			soakRecord(&rec, i)
			_ = col.Record(&rec)
		}
		heap[k] = liveHeap()
	}
	d := col.data(0, runlog.Level{})
	runtime.KeepAlive(col)
	perReq := (float64(heap[1]) - float64(heap[0])) / n
	t.Logf("live heap %.1f MiB after %d requests, %.1f MiB after %d: %.2f B/request", float64(heap[0])/(1<<20), n, float64(heap[1])/(1<<20), 2*n, perReq)
	if perReq > 2 {
		t.Errorf("live heap grew %.2f B a request from %d to %d requests; want ≤ 2", perReq, n, 2*n)
	}
	split := breakdown.Get[*breakdown.TTFTSplit](d.breakdowns)
	if !d.summary.Approx || split == nil || !split.Client.Approx || !split.RestE2E.Approx {
		t.Errorf("past the bounds: summary Approx %v, split %+v; want both, approximate", d.summary.Approx, split)
	}
}
