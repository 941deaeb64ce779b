package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/workload"
)

// A streamed answer with two parallel calls, their arguments in fragments
// (OpenAI's shape: id, type and name once, then arguments under the same
// index), becomes two calls on the record, hidden tokens only.
func TestStreamedToolCalls(t *testing.T) {
	srv := scripted(t, 200,
		data(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search","arguments":""}}]}}]}`),
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\":"}}]}}]}`),
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"kv\"}"}}]}}]}`),
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read","arguments":"{}"}}]}}]}`),
		// A server that repeats the id and name in every fragment is not doubled.
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"read","arguments":""}}]},"finish_reason":"tool_calls"}]}`),
		data(`{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":4}}}`),
		data(`[DONE]`),
	)
	c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
	rec := run(t, c, &wire.Request{ID: "r1", Messages: []wire.Message{{Role: "user", Content: "hi"}}, Tools: []string{"search", "read"}})
	if !rec.OK() {
		t.Fatalf("record failed: %s %s", rec.ErrorClass, rec.Error)
	}
	want := []runlog.ToolCall{{ID: "call_a", Name: "search", Arguments: `{"query":"kv"}`}, {ID: "call_b", Name: "read", Arguments: "{}"}}
	if diff := cmp.Diff(want, rec.ToolCalls); diff != "" {
		t.Errorf("ToolCalls (-want +got):\n%s", diff)
	}
	if rec.FinishReason != "tool_calls" {
		t.Errorf("FinishReason = %q; want tool_calls", rec.FinishReason)
	}
	for _, ch := range rec.Chunks {
		if ch.Visible {
			t.Errorf("chunk %+v visible; tool-call tokens are hidden", ch)
		}
	}
	// The next request on the same (pooled) meter carries no calls.
	srv2 := scripted(t, 200, data(`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`), data(`[DONE]`))
	c2 := newTestClient(t, srv2.URL, "/v1/chat/completions", nil)
	if rec := run(t, c2, &wire.Request{ID: "r2", Prompt: "x"}); rec.ToolCalls != nil {
		t.Errorf("plain answer ToolCalls = %v; want nil", rec.ToolCalls)
	}
}

// A call streamed without an id still gets one a result can name.
func TestToolCallWithoutID(t *testing.T) {
	var m wire.StreamMeter
	m.SetDecoder(&ChunkDecoder{})
	rec := &runlog.Record{}
	m.Reset(rec)
	m.Event([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`), 1, false)
	m.Event([]byte("[DONE]"), 2, false)
	m.Close(0)
	if want := []runlog.ToolCall{{ID: "call_3", Name: "f", Arguments: "{}"}}; !cmp.Equal(want, rec.ToolCalls) {
		t.Errorf("ToolCalls = %v; want %v", rec.ToolCalls, want)
	}
}

// A non-streamed answer's message.tool_calls are read whole.
func TestWholeAnswerToolCalls(t *testing.T) {
	rec := &runlog.Record{}
	body := `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`
	wire.MeasureWhole(&ChunkDecoder{}, rec, []byte(body), 10, 0)
	if want := []runlog.ToolCall{{ID: "c1", Name: "search", Arguments: `{"query":"x"}`}}; !cmp.Equal(want, rec.ToolCalls) {
		t.Errorf("ToolCalls = %v; want %v", rec.ToolCalls, want)
	}
}

// The request declares the tools as functions, resends the assistant's
// calls and the tool results under their ids, and carries the expected
// calls in the simulator's header.
func TestToolRequestBody(t *testing.T) {
	var got struct {
		body   map[string]any
		header string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		got.header = r.Header.Get(wire.HeaderToolCalls)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
	call, err := c.Prepare("t1", workload.Request{
		Messages: []workload.Message{
			{Role: "user", Content: "find it"},
			{Role: "assistant", ToolCalls: []workload.MessageToolCall{{ID: "call_9", Name: "search", Arguments: `{"query":"it"}`}}},
			{Role: "tool", ToolCallID: "call_9", Content: "found"},
		},
		Tools:             []string{"search"},
		ExpectedToolCalls: []string{"search", "search"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rec runlog.Record
	call(context.Background(), &rec)
	if !rec.OK() {
		t.Fatalf("record failed: %s", rec.Error)
	}
	if got.header != "search,search" {
		t.Errorf("%s = %q; want search,search", wire.HeaderToolCalls, got.header)
	}
	tools, _ := got.body["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools = %v; want one declaration", got.body["tools"])
	}
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "search" || tools[0].(map[string]any)["type"] != "function" {
		t.Errorf("tool declaration = %v", tools[0])
	}
	if _, ok := fn["parameters"].(map[string]any); !ok {
		t.Errorf("tool declaration has no parameters schema: %v", fn)
	}
	msgs := got.body["messages"].([]any)
	asst := msgs[1].(map[string]any)
	calls := asst["tool_calls"].([]any)
	c0 := calls[0].(map[string]any)
	if c0["id"] != "call_9" || c0["type"] != "function" || c0["function"].(map[string]any)["name"] != "search" ||
		c0["function"].(map[string]any)["arguments"] != `{"query":"it"}` {
		t.Errorf("assistant tool call = %v", c0)
	}
	if tool := msgs[2].(map[string]any); tool["role"] != "tool" || tool["tool_call_id"] != "call_9" || tool["content"] != "found" {
		t.Errorf("tool message = %v", tool)
	}
	if _, has := msgs[0].(map[string]any)["tool_call_id"]; has {
		t.Errorf("user message carries tool_call_id: %v", msgs[0])
	}
}
