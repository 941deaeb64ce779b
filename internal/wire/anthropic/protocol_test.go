package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

func TestProtocol(t *testing.T) {
	p := Messages
	if p.Name() != "anthropic-messages" || p.Path() != "/v1/messages" || !p.Chat() || !p.Streams() {
		t.Errorf("Messages = %q %q chat %v streams %v; want anthropic-messages /v1/messages true true", p.Name(), p.Path(), p.Chat(), p.Streams())
	}
	if _, ok := p.NewDecoder().(*Decoder); !ok {
		t.Errorf("NewDecoder() = %T; want *Decoder", p.NewDecoder())
	}
}

func TestAuth(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want http.Header
	}{
		{"sk-ant-1", http.Header{"X-Api-Key": {"sk-ant-1"}, "Anthropic-Version": {"2023-06-01"}}},
		{"", http.Header{"Anthropic-Version": {"2023-06-01"}}},
	} {
		h := http.Header{}
		Messages.Auth(h, tt.key)
		if diff := cmp.Diff(tt.want, h); diff != "" {
			t.Errorf("Auth(%q) mismatch (-want +got):\n%s", tt.key, diff)
		}
	}
}

// body is the JSON Body makes, decoded for comparing.
func body(t *testing.T, r *wire.Request, o wire.BodyOptions) any {
	t.Helper()
	m := map[string]any{}
	if err := Messages.Body(m, r, o); err != nil {
		t.Fatalf("Body = %v", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func parse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("expected JSON: %v", err)
	}
	return v
}

func toolCall(id, name, args string) wire.ToolCall {
	return wire.ToolCall{ID: id, Type: "function", Function: wire.FunctionCall{Name: name, Arguments: args}}
}

func TestBody(t *testing.T) {
	conversation := &wire.Request{
		MaxTokens: 256,
		Tools:     []string{"search", "calculator"},
		Messages: []wire.Message{
			{Role: "system", Content: "Be brief."},
			{Role: "system", Content: "Cite sources."},
			{Role: "user", Content: "Why do queues form?"},
			{Role: "assistant", Content: "Let me look.", ToolCalls: []wire.ToolCall{
				toolCall("toolu_1", "search", `{"query": "queueing"}`),
				toolCall("toolu_2", "calculator", `12/10`),
			}},
			{Role: "tool", ToolCallID: "toolu_1", Content: "Queues form when arrivals outpace service."},
			{Role: "tool", ToolCallID: "toolu_2", Content: "1.2"},
			{Role: "user", Content: "And with two servers?"},
			{Role: "assistant", ToolCalls: []wire.ToolCall{toolCall("toolu_3", "search", "")}},
			{Role: "tool", ToolCallID: "toolu_3", Content: "M/M/2."},
			{Role: "assistant", Content: "They form later."},
			{Role: "user", Content: "Thanks."},
		},
	}
	schema := func(name string) string {
		return `{"type":"object","properties":{"query":{"type":"string","description":"what to ` + name + `"}},"required":["query"]}`
	}
	tests := []struct {
		name string
		r    *wire.Request
		o    wire.BodyOptions
		want string
	}{
		{"a conversation with tool calls and results", conversation, wire.BodyOptions{Stream: true, IgnoreEOS: true, ContinuousUsage: true, MaxTokensField: "max_completion_tokens"}, `{
			"max_tokens": 256,
			"system": "Be brief.\n\nCite sources.",
			"messages": [
				{"role": "user", "content": "Why do queues form?"},
				{"role": "assistant", "content": [
					{"type": "text", "text": "Let me look."},
					{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "queueing"}},
					{"type": "tool_use", "id": "toolu_2", "name": "calculator", "input": {"query": "12/10"}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Queues form when arrivals outpace service."},
					{"type": "tool_result", "tool_use_id": "toolu_2", "content": "1.2"},
					{"type": "text", "text": "And with two servers?"}
				]},
				{"role": "assistant", "content": [
					{"type": "tool_use", "id": "toolu_3", "name": "search", "input": {}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "toolu_3", "content": "M/M/2."}
				]},
				{"role": "assistant", "content": "They form later."},
				{"role": "user", "content": "Thanks."}
			],
			"tools": [
				{"name": "search", "description": "The search tool. Call it when its result would help answer.", "input_schema": ` + schema("search") + `},
				{"name": "calculator", "description": "The calculator tool. Call it when its result would help answer.", "input_schema": ` + schema("calculator") + `}
			],
			"stream": true
		}`},
		{"a prompt, no cap", &wire.Request{Prompt: "Hello"}, wire.BodyOptions{}, `{
			"max_tokens": 4096,
			"messages": [{"role": "user", "content": "Hello"}],
			"stream": false
		}`},
		{"a result's follow-up joins before the next results", &wire.Request{MaxTokens: 8, Messages: []wire.Message{
			{Role: "user", Content: "Go."},
			{Role: "assistant", ToolCalls: []wire.ToolCall{toolCall("a", "search", `[1]`)}},
			{Role: "tool", ToolCallID: "a", Content: "r1"},
			{Role: "user", Content: ""},
			{Role: "user", Content: "More."},
			{Role: "tool", ToolCallID: "b", Content: "r2"},
		}}, wire.BodyOptions{Stream: true}, `{
			"max_tokens": 8,
			"messages": [
				{"role": "user", "content": "Go."},
				{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "search", "input": {"query": "[1]"}}]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "a", "content": "r1"},
					{"type": "tool_result", "tool_use_id": "b", "content": "r2"},
					{"type": "text", "text": "More."}
				]}
			],
			"stream": true
		}`},
		{"an empty answer is left out of the history", &wire.Request{MaxTokens: 8, Messages: []wire.Message{
			{Role: "user", Content: "Think."},
			{Role: "assistant", Content: ""},
			{Role: "user", Content: "Say it."},
		}}, wire.BodyOptions{}, `{
			"max_tokens": 8,
			"messages": [
				{"role": "user", "content": "Think."},
				{"role": "user", "content": "Say it."}
			],
			"stream": false
		}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(parse(t, tt.want), body(t, tt.r, tt.o)); diff != "" {
				t.Errorf("Body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolInputKept checks that a call's JSON arguments go back as sent:
// the same members in the same order, not re-encoded through a map.
func TestToolInputKept(t *testing.T) {
	m := map[string]any{}
	r := &wire.Request{Messages: []wire.Message{
		{Role: "user", Content: "x"},
		{Role: "assistant", ToolCalls: []wire.ToolCall{toolCall("t", "search", ` {"z": 1, "a": [true, null]} `)}},
	}}
	if err := Messages.Body(m, r, wire.BodyOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m["messages"])
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"search","input":{"z":1,"a":[true,null]}}]}]`
	if string(b) != want {
		t.Errorf("messages = %s; want %s", b, want)
	}
}

// TestClient runs the recorded streams through wire.Client against a
// real HTTP server: the request it sends and the record it makes.
func TestClient(t *testing.T) {
	stream, err := os.ReadFile(filepath.Join("testdata", "streams", "tool-use.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		path, key, version string
		body               map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.path, got.key, got.version = r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Anthropic-Version")
		_ = json.Unmarshal(b, &got.body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	}))
	defer srv.Close()
	var clock atomic.Int64
	c, err := openai.NewClient(wire.Config{BaseURL: srv.URL, Protocol: Messages, Model: "claude-test", APIKey: "sk-ant-test",
		KeepText: true, Timeout: 10 * time.Second, Now: func() int64 { return clock.Add(1000) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := &wire.Request{ID: "r1", Prompt: "Why?", MaxTokens: 64, Tools: []string{"search"}}
	b, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	var rec runlog.Record
	c.Stream(context.Background(), req, b, &rec)
	if got.path != "/v1/messages" || got.key != "sk-ant-test" || got.version != Version {
		t.Errorf("request to %q with x-api-key %q, anthropic-version %q; want /v1/messages, sk-ant-test, %s", got.path, got.key, got.version, Version)
	}
	if got.body["model"] != "claude-test" || got.body["max_tokens"] != float64(64) || got.body["stream"] != true {
		t.Errorf("request body %v; want model claude-test, max_tokens 64, stream true", got.body)
	}
	if !rec.OK() || rec.FinishReason != "tool_calls" || rec.CompletionTokens != 31 || rec.PromptTokens != 42 ||
		len(rec.Chunks) != 9 || rec.GeneratedText != "I will search for that." || rec.Server != nil {
		t.Errorf("record: error %q %q, finish %q, tokens %d/%d, %d chunks, text %q, server %v; want ok, tool_calls, 42/31, 9, %q, nil",
			rec.ErrorClass, rec.Error, rec.FinishReason, rec.PromptTokens, rec.CompletionTokens, len(rec.Chunks), rec.GeneratedText, rec.Server, "I will search for that.")
	}
	want := []runlog.ToolCall{{ID: "toolu_01A9kXqWv3mTz7cRb5nLp2Hd", Name: "search", Arguments: searchArgs}}
	if diff := cmp.Diff(want, rec.ToolCalls); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
}
