// Package runlogtest holds the hand-made run the tests of several packages
// work out their expected values on. Tests only.
package runlogtest

import (
	"bytes"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

const ms = int64(time.Millisecond)

// Chunk is a chunk at tMs milliseconds.
func Chunk(tMs int64, tokens int32, visible bool) runlog.Chunk {
	return runlog.Chunk{T: tMs * ms, Tokens: tokens, Visible: visible}
}

// Records is a hand-made run (times in ms):
//
//	r1: sent 0; tokens at 100,110,120,130; end 135; prompt 100, 4 out, usage.
//	r2: intended 50, sent 60; 260 (1 hidden), 280 (2), 300 (1); end 310;
//	    prompt 2000 (asked 2010), 4 out, 1 reasoning, 5 cached, usage.
//	r3: sent 100; one token at 1100; prompt 10000, 1 out, counted.
//	r4: sent 150; http_5xx at 400; asked for 500 prompt tokens.
//	w:  a warm-up at -1 s, excluded.
func Records() []runlog.Record {
	return []runlog.Record{
		{ID: "w", Warmup: true, Sent: -1000 * ms, End: -500 * ms, Chunks: []runlog.Chunk{Chunk(-900, 1, true)},
			PromptTokens: 7, CompletionTokens: 1},
		{ID: "r1", End: 135 * ms,
			Chunks:       []runlog.Chunk{Chunk(100, 1, true), Chunk(110, 1, true), Chunk(120, 1, true), Chunk(130, 1, true)},
			PromptTokens: 100, CompletionTokens: 4, TokenSource: runlog.TokensUsage, Status: 200},
		{ID: "r2", Intended: 50 * ms, Sent: 60 * ms, End: 310 * ms,
			Chunks:       []runlog.Chunk{Chunk(260, 1, false), Chunk(280, 2, true), Chunk(300, 1, true)},
			PromptTokens: 2000, RequestedPromptTokens: 2010, CompletionTokens: 4, ReasoningTokens: 1, CachedTokens: 5,
			TokenSource: runlog.TokensUsage, Status: 200},
		{ID: "r3", Intended: 100 * ms, Sent: 100 * ms, End: 1100 * ms, Chunks: []runlog.Chunk{Chunk(1100, 1, true)},
			PromptTokens: 10000, CompletionTokens: 1, TokenSource: runlog.TokensCounted, Status: 200},
		{ID: "r4", Intended: 150 * ms, Sent: 150 * ms, End: 400 * ms, RequestedPromptTokens: 500,
			Status: 500, ErrorClass: runlog.ErrHTTP5xx, Error: "boom"},
	}
}

// Meta is the hand-made run's meta: one capped open-loop level.
func Meta() *runlog.Meta {
	return &runlog.Meta{
		Tool: "goodput", Command: "bench",
		Started: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
		Target:  "http://127.0.0.1:8000", Backend: "openai-chat", Endpoint: "/v1/chat/completions",
		Model: "llama-3-8b", Dataset: "random", Seed: 42,
		Levels:   []runlog.Level{{RequestRate: 2, Burstiness: 1, MaxConcurrency: 4, NumPrompts: 4, NumWarmups: 1}},
		Metadata: map[string]string{"tp": "1"},
	}
}

// Sessions are two sessions worked by hand (times in ms):
//
//	A turn 1: r1 sent 0, a hidden tool-call token at 100, ends 150 (prompt
//	          1000); the tool takes 200 ms; r2 (tool round 1) sent 350,
//	          visible tokens at 450 and 500, ends 500 (prompt 1100, 1000
//	          cached).
//	A turn 2: after 1000 ms of think time, r3 intended and sent 1500,
//	          visible at 1700 and 1750, ends 1750 (prompt 2000, 1100 cached).
//	B turn 1: r4 sent 200, fails with HTTP 500 at 250.
//
// A: turn TTFTs 100, 200 (P95 195); turn TTPs 450, 200; model 150+150+250 =
// 550, tool 200, think 1000; duration 1750. B failed. Over both: span 0 →
// 1750 ms; model time 550 + B's 50 = 600 of 1800 ms in all; turn 1 TTFT
// [100], turn 2 [200] at prompts 1000 and 2000: 100 ms of TTFT per 1K
// tokens of history.
func Sessions() []runlog.Record {
	c := func(t int64, visible bool) runlog.Chunk { return runlog.Chunk{T: t * ms, Tokens: 1, Visible: visible} }
	return []runlog.Record{
		{ID: "r1", SessionID: "A", Turn: 1, Sent: 0, End: 150 * ms, Chunks: []runlog.Chunk{c(100, false)}, PromptTokens: 1000, Status: 200},
		{ID: "r4", SessionID: "B", Turn: 1, Intended: 200 * ms, Sent: 200 * ms, End: 250 * ms, Status: 500, ErrorClass: runlog.ErrHTTP5xx},
		{ID: "r2", SessionID: "A", Turn: 1, ToolRound: 1, Intended: 350 * ms, Sent: 350 * ms, End: 500 * ms,
			Chunks: []runlog.Chunk{c(450, true), c(500, true)}, PromptTokens: 1100, CachedTokens: 1000, Status: 200},
		{ID: "r3", SessionID: "A", Turn: 2, Intended: 1500 * ms, Sent: 1500 * ms, End: 1750 * ms,
			Chunks: []runlog.Chunk{c(1700, true), c(1750, true)}, PromptTokens: 2000, CachedTokens: 1100, Status: 200},
		{ID: "plain", Sent: 0, End: 10 * ms, Status: 200}, // not in a session: ignored
	}
}

// File is a records file of meta and recs, as a run writes it.
func File(t testing.TB, meta *runlog.Meta, recs []runlog.Record) []byte {
	t.Helper()
	b, err := runlog.AppendMeta(nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		b = runlog.AppendRecord(b, &recs[i])
	}
	return b
}

// Concat joins records files as cat does.
func Concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
