// Package runlogtest holds the hand-made run the tests of several packages
// work out their expected values on. Tests only.
package runlogtest

import (
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
