package simserve_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestSpecDecodeChunks serves a speculative-decoding engine to goodput's
// own client: each step's accepted drafts + 1 arrive as one chunk, whose
// continuous usage gives the client exact token counts, so the record adds
// up to max_tokens, its chunks carry several tokens, and the per-token ITL
// is the chunk gap spread over the chunk's tokens (close to TPOT) while
// the per-chunk ITL is about E times longer.
func TestSpecDecodeChunks(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.SpecTokens, cfg.SpecAcceptance = 4, 0.7
	const maxTokens = 300
	for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
		t.Run(endpoint, func(t *testing.T) {
			url, stop, err := simserve.Start(context.Background(), "127.0.0.1:0", cfg, simserve.Options{Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			c, err := openai.NewClient(wire.Config{BaseURL: url, Endpoint: endpoint, IgnoreEOS: true, ContinuousUsage: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := &wire.Request{ID: "s", MaxTokens: maxTokens}
			if strings.Contains(endpoint, "chat") {
				req.Messages = []wire.Message{{Role: "user", Content: "speculate about the weather"}}
			} else {
				req.Prompt = "speculate about the weather"
			}
			body, err := c.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			var rec runlog.Record
			c.Stream(context.Background(), req, body, &rec)
			if !rec.OK() {
				t.Fatalf("request failed: %s %s", rec.ErrorClass, rec.Error)
			}
			if rec.CompletionTokens != maxTokens {
				t.Errorf("CompletionTokens = %d; want max_tokens %d", rec.CompletionTokens, maxTokens)
			}
			sum, multi, chunks, first := 0, 0, 0, 0
			for _, ch := range rec.Chunks {
				if ch.Tokens <= 0 {
					continue
				}
				if chunks == 0 {
					first = int(ch.Tokens)
				}
				chunks++
				sum += int(ch.Tokens)
				if ch.Tokens > 1 {
					multi++
				}
			}
			if sum != maxTokens || multi == 0 {
				t.Errorf("chunks carry %d tokens, %d of %d chunks more than one; want %d tokens in multi-token chunks", sum, multi, chunks, maxTokens)
			}
			s := stats.Summarize([]runlog.Record{rec}, stats.Options{Metrics: []string{stats.MetricTPOT, stats.MetricITL}})
			m := map[string]stats.MetricSummary{}
			for _, ms := range s.Metrics {
				m[ms.Name] = ms
			}
			tpot, itl, tok := m[stats.MetricTPOT], m[stats.MetricITL], m[stats.MetricITLToken]
			// The first chunk's tokens have no gap before them: one, unless a
			// busy host let the server's writes of several steps coalesce.
			if tok.N != maxTokens-first || itl.N != chunks-1 {
				t.Errorf("per-token ITL samples %d, per-chunk %d; want %d and %d", tok.N, itl.N, maxTokens-first, chunks-1)
			}
			if math.Abs(tok.Mean/tpot.Mean-1) > 0.05 {
				t.Errorf("mean per-token ITL %.3f ms; want about TPOT %.3f ms", tok.Mean, tpot.Mean)
			}
			if itl.Mean < 1.5*tok.Mean {
				t.Errorf("mean per-chunk ITL %.3f ms; want well above the per-token %.3f ms (E ≈ 2.8 tokens a chunk)", itl.Mean, tok.Mean)
			}
		})
	}
}
