package anthropic_test

// An external test: the simulator serves every protocol of the
// protocols table, which imports this package.

import (
	"context"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/anthropic"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestSimulator runs a tool-calling session over the Messages API against
// goodput's simulator, which validates requests as the API does: the
// first answer's tool_use goes back as a tool_result the second request
// must pair with it.
func TestSimulator(t *testing.T) {
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
	c, err := openai.NewClient(wire.Config{BaseURL: url, Protocol: anthropic.Messages, Model: srv.Model(), KeepText: true,
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
	msgs := []wire.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Find the answer."}}
	first := send(&wire.Request{ID: "turn-1", Messages: msgs, MaxTokens: 128, Tools: []string{"search"}, ExpectedToolCalls: []string{"search"}})
	if first.FinishReason != "tool_calls" || len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "search" || first.ToolCalls[0].ID == "" {
		t.Fatalf("turn 1: finish %q, calls %+v; want one search call", first.FinishReason, first.ToolCalls)
	}
	if _, ok := first.TTFT(); !ok || first.CompletionTokens == 0 || first.PromptTokens == 0 {
		t.Errorf("turn 1: no TTFT or counts (%d prompt, %d completion)", first.PromptTokens, first.CompletionTokens)
	}
	tc := first.ToolCalls[0]
	msgs = append(msgs,
		wire.Message{Role: "assistant", Content: first.GeneratedText, ToolCalls: []wire.ToolCall{{ID: tc.ID, Type: "function", Function: wire.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}}}},
		wire.Message{Role: "tool", ToolCallID: tc.ID, Content: "42"},
	)
	second := send(&wire.Request{ID: "turn-2", Messages: msgs, MaxTokens: 8, Tools: []string{"search"}})
	if second.FinishReason == "" || second.FinishReason == "tool_calls" || second.GeneratedText == "" {
		t.Errorf("turn 2: finish %q, text %q; want a text answer", second.FinishReason, second.GeneratedText)
	}
	if _, ok := second.TTP(); !ok {
		t.Error("turn 2: no visible token (TTP)")
	}
}
