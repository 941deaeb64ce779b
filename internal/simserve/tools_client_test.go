package simserve_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestToolCallsMeasuredByClient sends an agent's tool round through
// goodput's own OpenAI client (which names the expected calls in
// simserve.ToolCallsHeader) and checks the record it makes: the calls with
// their ids and JSON arguments, every token hidden and counted, one chunk
// per token with continuous usage, finish_reason tool_calls.
func TestToolCallsMeasuredByClient(t *testing.T) {
	if wire.HeaderToolCalls != simserve.ToolCallsHeader {
		t.Fatalf("the client sends %q, the server reads %q", wire.HeaderToolCalls, simserve.ToolCallsHeader)
	}
	const perCall = 6
	cfg := sim.DefaultConfig()
	cfg.ToolCallTokens = perCall
	url, stop, err := simserve.Start(context.Background(), "127.0.0.1:0", cfg, simserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, cont := range []bool{false, true} {
		c, err := openai.NewClient(wire.Config{BaseURL: url, Endpoint: "/v1/chat/completions", ContinuousUsage: cont})
		if err != nil {
			t.Fatal(err)
		}
		req := &wire.Request{ID: "s1-t1", Messages: []wire.Message{{Role: "user", Content: "look both up"}},
			MaxTokens: 256, Tools: []string{"search", "read"}, ExpectedToolCalls: []string{"read", "search"}}
		body, err := c.Body(req)
		if err != nil {
			t.Fatal(err)
		}
		var rec runlog.Record
		c.Stream(context.Background(), req, body, &rec)
		c.Close()
		if !rec.OK() {
			t.Fatalf("continuous usage %v: record failed: %s %s", cont, rec.ErrorClass, rec.Error)
		}
		if len(rec.ToolCalls) != 2 || rec.ToolCalls[0].Name != "read" || rec.ToolCalls[1].Name != "search" {
			t.Fatalf("continuous usage %v: tool calls = %+v; want read, then search", cont, rec.ToolCalls)
		}
		for i, tc := range rec.ToolCalls {
			var args map[string]string
			if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil || args["query"] == "" || tc.ID == "" {
				t.Errorf("call %d = %+v (%v); want an id and arguments {\"query\": ...}", i, tc, err)
			}
		}
		tokens := 0
		for _, ch := range rec.Chunks {
			if ch.Visible {
				t.Errorf("a visible chunk in a tool-call answer: %+v", ch)
			}
			tokens += int(ch.Tokens)
		}
		const want = 2 * perCall
		if rec.CompletionTokens != want || rec.ReasoningTokens != want || rec.FinishReason != "tool_calls" {
			t.Errorf("continuous usage %v: completion %d, reasoning %d, finish %q; want %d, %d (all hidden), tool_calls",
				cont, rec.CompletionTokens, rec.ReasoningTokens, rec.FinishReason, want, want)
		}
		// With continuous usage the chunks' counts are exact. Without it
		// the client counts a token a chunk: the server sends one chunk per
		// token unless a starved handler fell an iteration behind.
		if cont && tokens != want || !cont && (tokens < 1 || tokens > want) {
			t.Errorf("continuous usage %v: the chunks carry %d tokens; want %d", cont, tokens, want)
		}
	}
}
