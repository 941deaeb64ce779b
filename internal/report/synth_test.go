package report

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// synthRun makes a deterministic run of n requests per level at the given
// offered rates (req/s), with server-side timing when server is set, some
// failures and a reasoning prefix on every 7th request. Latency grows with
// the rate so sweep curves bend. Output lengths are 2 to maxOut+1 tokens.
func synthRun(n int, rates []float64, server bool, maxOut int) (*runlog.Meta, []runlog.Record) {
	rng := rand.New(rand.NewPCG(7, 11))
	meta := &runlog.Meta{
		Tool: "goodput", Command: "sweep", Started: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
		Target: "embedded-sim", Backend: "openai", Endpoint: "/v1/completions", Model: "sim-llama-8b",
		Dataset: "random", Seed: 1,
	}
	var recs []runlog.Record
	t := int64(0)
	for lvl, rate := range rates {
		meta.Levels = append(meta.Levels, runlog.Level{RequestRate: rate, Burstiness: 1, NumPrompts: n})
		for i := range n {
			t += int64(rng.ExpFloat64() / rate * 1e9)
			queue := int64(rng.ExpFloat64() * rate * 20e6)
			prefill := int64(30e6 + rng.Float64()*40e6)
			tpot := int64((8 + rate*2 + rng.Float64()*6) * 1e6)
			out := 2 + rng.IntN(maxOut)
			r := runlog.Record{
				ID: fmt.Sprintf("l%d-r%d", lvl, i), Level: lvl, Intended: t, Sent: t + 50_000,
				PromptTokens: 200 + rng.IntN(3000), CompletionTokens: out, TokenSource: runlog.TokensUsage, Status: 200,
			}
			first := r.Sent + 1e6 + queue + prefill
			for k := range out {
				r.Chunks = append(r.Chunks, runlog.Chunk{T: first + int64(k)*tpot, Tokens: 1, Visible: i%7 != 0 || k > 10})
			}
			r.End = r.Chunks[len(r.Chunks)-1].T + 1e5
			if server {
				r.Server = &runlog.ServerTiming{ArrivalNs: r.Sent + 1e6, QueueNs: queue, PrefillNs: prefill, DecodeNs: int64(out-1) * tpot}
			}
			if i%97 == 13 {
				r.Chunks, r.CompletionTokens, r.Status, r.ErrorClass, r.Error = nil, 0, 503, runlog.ErrHTTP5xx, "overloaded"
				r.End = r.Sent + 2e6
				r.Server = nil
			}
			recs = append(recs, r)
		}
	}
	return meta, recs
}
