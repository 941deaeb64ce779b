package openai_test

import (
	"context"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestResponsesSimulator runs a chained tool-calling session over the
// Responses API against goodput's simulator, which keeps responses for
// previous_response_id and checks that a function_call_output answers a
// call of the chain: turn 2 sends only the tool's output.
func TestResponsesSimulator(t *testing.T) {
	srv, err := simserve.New(sim.DefaultConfig(), simserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, stop, err := srv.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	start := time.Now()
	c, err := openai.NewClient(wire.Config{BaseURL: url, Protocol: openai.Responses, Model: srv.Model(), KeepText: true,
		Timeout: 30 * time.Second, Now: func() int64 { return int64(time.Since(start)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(req *wire.Request) runlog.Record {
		t.Helper()
		b, err := c.Body(req)
		if err != nil {
			t.Fatal(err)
		}
		var rec runlog.Record
		c.Stream(ctx, req, b, &rec)
		if !rec.OK() {
			t.Fatalf("request %s: %s: %s", req.ID, rec.ErrorClass, rec.Error)
		}
		return rec
	}
	first := send(&wire.Request{ID: "turn-1", MaxTokens: 128, Tools: []string{"search"}, ExpectedToolCalls: []string{"search"},
		Messages: []wire.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Find the answer."}}})
	if first.FinishReason != "tool_calls" || len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "search" || first.ResponseID == "" {
		t.Fatalf("turn 1: finish %q, calls %+v, response id %q; want one search call and an id", first.FinishReason, first.ToolCalls, first.ResponseID)
	}
	if _, ok := first.TTFT(); !ok || first.CompletionTokens == 0 || first.PromptTokens == 0 {
		t.Errorf("turn 1: no TTFT or counts (%d prompt, %d completion)", first.PromptTokens, first.CompletionTokens)
	}
	second := send(&wire.Request{ID: "turn-2", MaxTokens: 8, Tools: []string{"search"}, PreviousResponseID: first.ResponseID,
		Messages: []wire.Message{{Role: "tool", ToolCallID: first.ToolCalls[0].ID, Content: "42"}}})
	if second.FinishReason == "" || second.FinishReason == "tool_calls" || second.GeneratedText == "" || second.ResponseID == first.ResponseID {
		t.Errorf("turn 2: finish %q, text %q, id %q; want a text answer with an id of its own", second.FinishReason, second.GeneratedText, second.ResponseID)
	}
	if second.PromptTokens <= first.PromptTokens {
		t.Errorf("turn 2 prompt %d tokens; want more than turn 1's %d (the chain's history is prepended)", second.PromptTokens, first.PromptTokens)
	}
}
