package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
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
	for _, c := range []struct{ n, tokens int }{{1000, 100}, {perfgoal.Size(100_000, 1000), 10}, {perfgoal.Size(100_000, 1000), 500}} {
		b.Run(fmt.Sprintf("records=%d/tokens=%d", c.n, c.tokens), func(b *testing.B) { benchAdd(b, c.n, c.tokens) })
	}
}

// soakRecord fills rec as the i-th record of a synthetic soak at 1,000 req/s:
// TTFT lognormal (median 200 ms, σ 0.8, p99 ~1.3 s), four chunks of one
// token 15 ms apart (lognormal σ 0.5), every eighth record's last chunk
// carrying two tokens, prompt lengths across the default buckets, one in a
// hundred failed.
func soakRecord(rec *runlog.Record, r *rand.Rand, i int) {
	sent := int64(i) * ms
	rec.Intended, rec.Sent = sent, sent+int64(r.IntN(100))*1000
	rec.PromptTokens = 100 + r.IntN(12000)
	rec.Status, rec.ErrorClass = 200, ""
	if i%100 == 99 {
		rec.Status, rec.ErrorClass = 500, runlog.ErrHTTP5xx
	}
	t := rec.Sent + int64(200*math.Exp(0.8*r.NormFloat64())*float64(ms))
	tokens := 0
	for j := range rec.Chunks {
		if j > 0 {
			t += int64(15 * math.Exp(0.5*r.NormFloat64()) * float64(ms))
		}
		k := int32(1)
		if j == len(rec.Chunks)-1 && i%8 == 0 {
			k = 2
		}
		rec.Chunks[j] = runlog.Chunk{T: t, Tokens: k, Visible: true}
		tokens += int(k)
	}
	rec.CompletionTokens, rec.End = tokens, t+ms
}

// BenchmarkSoak10M feeds 10,000,000 synthetic records (4 chunks each, ~2.8 h
// at 1,000 req/s) through Accumulator.Add and reports the heap the
// Accumulator retains at the end (B/record, MiB), the cost of one Add
// (ns/record, record synthesis subtracted), the time of the final Summary,
// and the relative error of P99 TTFT, E2E and ITL against the exact
// percentile of the same values. "bounded" is NewAccumulator; "exact" is
// NewExactAccumulator, what every Accumulator kept before the bound (needs
// ~4 GB). Run with
//
//	go test -run '^$' -bench Soak10M -benchtime 1x -timeout 30m ./internal/stats
func BenchmarkSoak10M(b *testing.B) {
	for _, c := range []struct {
		name string
		acc  func(Options) *Accumulator
	}{{"bounded", NewAccumulator}, {"exact", NewExactAccumulator}} {
		b.Run(c.name, func(b *testing.B) { benchSoak(b, perfgoal.Size(10_000_000, 10_000), c.acc) })
	}
}

func benchSoak(b *testing.B, n int, newAcc func(Options) *Accumulator) {
	const seed = 42
	rec := runlog.Record{Chunks: make([]runlog.Chunk, 4), TokenSource: runlog.TokensUsage}
	o := Options{SLO: SLO{TTFT: 500 * time.Millisecond, TPOT: 25 * time.Millisecond}}
	for b.Loop() {
		// Synthesis alone, to subtract from the Add loop's time.
		r := rand.New(rand.NewPCG(seed, 0))
		start := time.Now()
		for i := range n {
			soakRecord(&rec, r, i)
		}
		gen := time.Since(start)

		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		a := newAcc(o)
		r = rand.New(rand.NewPCG(seed, 0))
		start = time.Now()
		for i := range n {
			soakRecord(&rec, r, i)
			a.Add(&rec)
		}
		add := time.Since(start)
		start = time.Now()
		s := a.Summary()
		sum := time.Since(start)
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(a)
		retained := float64(after.HeapInuse) - float64(before.HeapInuse)
		a = nil

		b.StopTimer()
		// The exact percentiles of the same values, regenerated.
		ttft, e2e := make([]float64, 0, n), make([]float64, 0, n)
		itl := make([]float64, 0, 3*n)
		var gaps []time.Duration
		r = rand.New(rand.NewPCG(seed, 0))
		for i := range n {
			soakRecord(&rec, r, i)
			if !rec.OK() {
				continue
			}
			d, _ := rec.TTFT()
			ttft = append(ttft, float64(d)*nsPerMs)
			d, _ = rec.E2E()
			e2e = append(e2e, float64(d)*nsPerMs)
			gaps = rec.ITLs(gaps[:0])
			for _, g := range gaps {
				itl = append(itl, float64(float32(float64(g)*nsPerMs)))
			}
		}
		relErr := func(name string, xs []float64) float64 {
			slices.Sort(xs)
			exact := Percentile(xs, 99)
			got, _ := s.MetricP(name, 99)
			return math.Abs(got-exact) / exact
		}
		b.ReportMetric(relErr(MetricTTFT, ttft), "p99_ttft_relerr")
		b.ReportMetric(relErr(MetricE2E, e2e), "p99_e2el_relerr")
		b.ReportMetric(relErr(MetricITL, itl), "p99_itl_relerr")
		b.ReportMetric(retained/float64(n), "B/record")
		b.ReportMetric(retained/(1<<20), "MiB_retained")
		b.ReportMetric(float64(add-gen)/float64(n), "ns/record")
		b.ReportMetric(float64(sum)/1e6, "summary_ms")
		if s.Completed != n-n/100 {
			b.Fatalf("Completed = %d; want %d", s.Completed, n-n/100)
		}
		b.StartTimer()
	}
}
