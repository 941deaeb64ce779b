package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/wire"
)

// respEvents returns the data of every event of a recorded Responses
// stream (testdata/streams/responses-*.sse), copied.
func respEvents(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := sse.NewReader(f, func() int64 { return 0 }, 0)
	var out [][]byte
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, bytes.Clone(ev.Data))
	}
}

// respMs is event k's arrival time: k ms after the send (at 0).
func respMs(k int) int64 { return int64(k) * int64(time.Millisecond) }

// respMeter runs events through a wire.StreamMeter reading Responses events,
// the k-th (1-based) arriving at respMs(k), then EOF a ms later.
func respMeter(events [][]byte) *runlog.Record {
	var m wire.StreamMeter
	m.SetDecoder(Responses.NewDecoder())
	rec := &runlog.Record{}
	m.Reset(rec)
	for i, ev := range events {
		m.Event(ev, respMs(i+1), false)
	}
	m.EOF(respMs(len(events) + 1))
	m.Close(0)
	return rec
}

// respOutcome is what the stream tests check of a record, by hand.
type respOutcome struct {
	TTFT, TTP             time.Duration // -1: none
	Chunks, VisibleChunks int
	Completion, Prompt    int
	Cached, Reasoning     int
	Source                runlog.TokenSource
	Finish                string
	ToolCalls             []runlog.ToolCall
	ResponseID            string
	ErrorClass            runlog.ErrorClass
	Error                 string
	End                   time.Duration
	Server                bool // the record has server timing
}

func respOutcomeOf(rec *runlog.Record) respOutcome {
	o := respOutcome{TTFT: -1, TTP: -1, Chunks: len(rec.Chunks),
		Completion: rec.CompletionTokens, Prompt: rec.PromptTokens, Cached: rec.CachedTokens, Reasoning: rec.ReasoningTokens,
		Source: rec.TokenSource, Finish: rec.FinishReason, ToolCalls: rec.ToolCalls, ResponseID: rec.ResponseID,
		ErrorClass: rec.ErrorClass, Error: rec.Error, End: time.Duration(rec.End), Server: rec.Server != nil}
	if d, ok := rec.TTFT(); ok {
		o.TTFT = d
	}
	if d, ok := rec.TTP(); ok {
		o.TTP = d
	}
	for _, c := range rec.Chunks {
		if c.Visible {
			o.VisibleChunks++
		}
	}
	return o
}

const (
	respSearchArgs = `{"query": "queueing theory basics"}`
	respCalcArgs   = `{"query": "arrival rate 12/s, service rate 10/s"}`
)

// TestResponsesStreams measures each recorded Responses stream. Event
// numbers (1-based) are arrival times in ms; every stream opens with
// 1 response.created and 2 response.in_progress.
func TestResponsesStreams(t *testing.T) {
	text := respEvents(t, "responses-text.sse")
	tests := []struct {
		name   string
		events [][]byte
		want   respOutcome
	}{
		{"text", text, respOutcome{
			// 3 item added, 4 part added, 5-28 text, 29 text done, 30 part
			// done, 31 item done, 32 completed
			TTFT: 5 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 24, VisibleChunks: 24,
			Completion: 24, Prompt: 42, Source: runlog.TokensUsage, Finish: "stop",
			ResponseID: "resp_68af01b2c3d4e5f60718293a4b5c6d7e", End: 32 * time.Millisecond,
		}},
		{"reasoning summary then text", respEvents(t, "responses-reasoning.sse"), respOutcome{
			// 3 reasoning added, 4 summary part added, 5-21 summary, 22
			// summary done, 23 part done, 24 item done, 25 message added,
			// 26 part added, 27-50 text, 51-53 done events, 54 completed
			TTFT: 5 * time.Millisecond, TTP: 27 * time.Millisecond, Chunks: 41, VisibleChunks: 24,
			Completion: 41, Prompt: 42, Cached: 32, Reasoning: 17, Source: runlog.TokensUsage, Finish: "stop",
			ResponseID: "resp_68af02c3d4e5f6071829304a5b6c7d8e", End: 54 * time.Millisecond,
		}},
		{"function call", respEvents(t, "responses-function-call.sse"), respOutcome{
			// 3 function_call added (name: hidden), 4-6 arguments, 7
			// arguments done, 8 item done, 9 completed
			TTFT: 3 * time.Millisecond, TTP: -1, Chunks: 4,
			Completion: 18, Prompt: 42, Source: runlog.TokensUsage, Finish: "tool_calls",
			ToolCalls:  []runlog.ToolCall{{ID: "call_Qm3vT8kLx2WbZ9rN5cYp7HdA", Name: "search", Arguments: respSearchArgs}},
			ResponseID: "resp_68af03d4e5f607182930415b6c7d8e9f", End: 9 * time.Millisecond,
		}},
		{"parallel function calls", respEvents(t, "responses-parallel-calls.sse"), respOutcome{
			// 3 added, 4-6 arguments, 7-8 done; 9 added, 10-12 arguments,
			// 13-14 done; 15 completed
			TTFT: 3 * time.Millisecond, TTP: -1, Chunks: 8,
			Completion: 44, Prompt: 42, Cached: 16, Source: runlog.TokensUsage, Finish: "tool_calls",
			ToolCalls: []runlog.ToolCall{
				{ID: "call_Rn4wU9lMy3XcA0sO6dZq8IeB", Name: "search", Arguments: respSearchArgs},
				{ID: "call_So5xV0mNz4YdB1tP7eAr9JfC", Name: "calculator", Arguments: respCalcArgs},
			},
			ResponseID: "resp_68af04e5f60718293041526c7d8e9fa0", End: 15 * time.Millisecond,
		}},
		{"incomplete", respEvents(t, "responses-incomplete.sse"), respOutcome{
			// 3 added, 4 part added, 5-16 text, 17-19 done, 20 incomplete
			TTFT: 5 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 12, VisibleChunks: 12,
			Completion: 12, Prompt: 42, Source: runlog.TokensUsage, Finish: "length",
			ResponseID: "resp_68af0718293041526374859fa0b1c2d3", End: 20 * time.Millisecond,
		}},
		{"error event", respEvents(t, "responses-error.sse"), respOutcome{
			// 3 added, 4 part added, 5-7 text, 8 error
			TTFT: 5 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 3, VisibleChunks: 3,
			Completion: 3, Source: runlog.TokensCounted, ResponseID: "resp_68af05f6071829304152637d8e9fa0b1",
			ErrorClass: runlog.ErrStream, Error: "error event: server_error: The model stopped unexpectedly; retry the request.",
			End: 8 * time.Millisecond,
		}},
		{"response.failed", respEvents(t, "responses-failed.sse"), respOutcome{
			TTFT: 5 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 3, VisibleChunks: 3,
			Completion: 3, Source: runlog.TokensCounted, ResponseID: "resp_68af06071829304152637485e9fa0b1c",
			ErrorClass: runlog.ErrStream, Error: "error event: server_error: The model stopped unexpectedly; retry the request.",
			End: 8 * time.Millisecond,
		}},
		{"cut before response.completed", text[:len(text)-1], respOutcome{
			TTFT: 5 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 24, VisibleChunks: 24,
			Completion: 24, Source: runlog.TokensCounted, ResponseID: "resp_68af01b2c3d4e5f60718293a4b5c6d7e",
			ErrorClass: runlog.ErrStream, Error: "stream ended without [DONE] (or its protocol's end event) or a finish reason",
			End: 32 * time.Millisecond,
		}},
		{"malformed event", append(text[:6:6], []byte(`{"type":"response.output_text.delta","delta":"x",}`)), respOutcome{
			TTFT: 5 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 2, VisibleChunks: 2,
			Completion: 2, Source: runlog.TokensCounted, ResponseID: "resp_68af01b2c3d4e5f60718293a4b5c6d7e",
			ErrorClass: runlog.ErrMalformed, Error: `chunk 3: malformed JSON: invalid character '}' at offset 49 looking for object key`,
			End: 7 * time.Millisecond,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, respOutcomeOf(respMeter(tt.events))); diff != "" {
				t.Errorf("record mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponsesStreamText checks that the streams' text and reasoning
// come whole and once, though the .done events and the completed
// response repeat them.
func TestResponsesStreamText(t *testing.T) {
	for _, tt := range []struct{ file, content, reasoning string }{
		{"responses-text.sse", streamAnswer, ""},
		{"responses-reasoning.sse", streamAnswer, streamReasoning},
		{"responses-function-call.sse", "", ""},
	} {
		var d ResponsesDecoder
		var c wire.Chunk
		var content, reas []byte
		for i, ev := range respEvents(t, tt.file) {
			if err := d.Decode(ev, &c); err != nil {
				t.Fatalf("%s: event %d: %v", tt.file, i+1, err)
			}
			content = append(content, c.Content...)
			reas = append(reas, c.Reasoning...)
		}
		if string(content) != tt.content || string(reas) != tt.reasoning {
			t.Errorf("%s: content %q, reasoning %q; want %q, %q", tt.file, content, reas, tt.content, tt.reasoning)
		}
	}
}

// TestResponsesDecode decodes event sequences (one decoder per case) and
// checks the last event's chunk.
func TestResponsesDecode(t *testing.T) {
	usage := `"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":20},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":59}`
	callAdded := `{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"search"}}`
	tests := []struct {
		name   string
		events []string
		want   respFlat
	}{
		{"created", []string{`{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[],"usage":null}}`}, respFlat{ResponseID: "resp_1"}},
		{"in_progress", []string{`{"type":"response.in_progress","response":{"id":"resp_2"}}`}, respFlat{ResponseID: "resp_2"}},
		{"output_text.delta", []string{`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"a\u00e9\n","logprobs":[]}`}, respFlat{Content: "aé\n"}},
		{"refusal.delta is visible", []string{`{"type":"response.refusal.delta","delta":"I can't"}`}, respFlat{Content: "I can't"}},
		{"reasoning_summary_text.delta", []string{`{"type":"response.reasoning_summary_text.delta","summary_index":0,"delta":"Hm"}`}, respFlat{Reasoning: "Hm"}},
		{"reasoning_text.delta", []string{`{"type":"response.reasoning_text.delta","content_index":0,"delta":"so"}`}, respFlat{Reasoning: "so"}},
		{"a function call begins", []string{callAdded}, respFlat{ToolArgs: 6, ToolCalls: []respCall{{Index: 1, ID: "call_1", Name: "search"}}}},
		{"arguments", []string{callAdded, `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"q"}`},
			respFlat{ToolArgs: 3, ToolCalls: []respCall{{Index: 1, Arguments: `{"q`}}}},
		{"a message item is no token", []string{`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","content":[],"role":"assistant"}}`}, respFlat{}},
		{"done events repeat, never count", []string{`{"type":"response.output_text.done","text":"whole"}`}, respFlat{}},
		{"arguments done", []string{`{"type":"response.function_call_arguments.done","arguments":"{}"}`}, respFlat{}},
		{"item done", []string{`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}}`}, respFlat{}},
		{"completed", []string{`{"type":"response.completed","response":{"id":"resp_3","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"whole"}]}],` + usage + `}}`},
			respFlat{ResponseID: "resp_3", Finish: "stop", End: true, Usage: wire.Usage{Present: true, PromptTokens: 50, CachedTokens: 20, CompletionTokens: 9, ReasoningTokens: 4}}},
		{"completed after a call", []string{callAdded, `{"type":"response.completed","response":{"id":"r","output":[]}}`}, respFlat{ResponseID: "r", Finish: "tool_calls", End: true}},
		{"completed with a call in its output", []string{`{"type":"response.completed","response":{"output":[{"type":"reasoning"},{"arguments":"{}","type":"function_call"}]}}`}, respFlat{Finish: "tool_calls", End: true}},
		{"incomplete for max_output_tokens", []string{callAdded, `{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},` + usage + `}}`},
			respFlat{ResponseID: "r", Finish: "length", End: true, Usage: wire.Usage{Present: true, PromptTokens: 50, CachedTokens: 20, CompletionTokens: 9, ReasoningTokens: 4}}},
		{"incomplete for another reason", []string{`{"type":"response.incomplete","response":{"incomplete_details":{"reason":"content_filter"}}}`}, respFlat{Finish: "content_filter", End: true}},
		{"incomplete for no reason given", []string{`{"type":"response.incomplete","response":{"incomplete_details":null}}`}, respFlat{Finish: "incomplete", End: true}},
		{"failed", []string{`{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}`}, respFlat{ResponseID: "r", Err: "rate_limit_exceeded: slow down"}},
		{"failed without an error", []string{`{"type":"response.failed","response":{"status":"failed","error":null}}`}, respFlat{Err: "response failed"}},
		{"error event", []string{`{"type":"error","code":"server_error","message":"boom","param":null}`}, respFlat{Err: "server_error: boom"}},
		{"error event with a message only", []string{`{"type":"error","code":null,"message":"boom"}`}, respFlat{Err: "boom"}},
		{"error event nesting its error", []string{`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}, respFlat{Err: "invalid_request_error: bad"}},
		{"error event with nothing", []string{`{"type":"error"}`}, respFlat{Err: "unknown error"}},
		{"members in any order", []string{`{"delta":"late","sequence_number":4,"type":"response.output_text.delta"}`}, respFlat{Content: "late"}},
		{"an unknown event is skipped", []string{`{"type":"response.audio.delta","delta":"AAAA"}`}, respFlat{}},
		{"no type", []string{`{"delta":"x"}`}, respFlat{}},
		{"a bad output_index is 0", []string{`{"type":"response.function_call_arguments.delta","output_index":-3,"delta":"x"}`}, respFlat{ToolArgs: 1, ToolCalls: []respCall{{Arguments: "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d ResponsesDecoder
			var c wire.Chunk
			for i, ev := range tt.events {
				if err := d.Decode([]byte(ev), &c); err != nil {
					t.Fatalf("Decode(event %d %s) = %v", i+1, ev, err)
				}
			}
			got := respFlatten(&c)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("last chunk mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// respFlat is a Chunk with strings, for readable diffs.
type respFlat struct {
	Content, Reasoning, Finish, Err, ResponseID string
	ToolArgs                                    int
	ToolCalls                                   []respCall
	Usage                                       wire.Usage
	End                                         bool
	// Timing is set when the chunk claims server timing, which the API
	// never reports.
	Timing bool
}

type respCall struct {
	Index               int
	ID, Name, Arguments string
}

func respFlatten(c *wire.Chunk) respFlat {
	f := respFlat{Content: string(c.Content), Reasoning: string(c.Reasoning), Finish: string(c.FinishReason),
		Err: string(c.ErrMessage), ResponseID: string(c.ResponseID), ToolArgs: c.ToolArgs, Usage: c.Usage,
		End: c.End, Timing: c.Timing.Reported() || c.Timing.Present}
	for _, d := range c.ToolCalls {
		f.ToolCalls = append(f.ToolCalls, respCall{d.Index, string(d.ID), string(d.Name), string(d.Arguments)})
	}
	return f
}

func TestResponsesReset(t *testing.T) {
	var d ResponsesDecoder
	var c wire.Chunk
	for _, ev := range []string{
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n"}}`,
	} {
		if err := d.Decode([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
	}
	d.Reset()
	if err := d.Decode([]byte(`{"type":"response.completed","response":{"output":[]}}`), &c); err != nil {
		t.Fatal(err)
	}
	if string(c.FinishReason) != "stop" {
		t.Errorf("after Reset, completed gives finish %q; want stop (the call was the last stream's)", c.FinishReason)
	}
}

func TestResponsesDecodeMalformed(t *testing.T) {
	for _, in := range []string{
		``, `[DONE]`, `[1]`, `"x"`, `null`, `{"type":"error"`, `{"type":"error"}]`, `{"delta":"\q"}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":-}}}`,
	} {
		var d ResponsesDecoder
		var c wire.Chunk
		if err := d.Decode([]byte(in), &c); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("Decode(%q) = %v; want an error wrapping ErrMalformed", in, err)
		}
		if err := d.DecodeResponse([]byte(in), &c); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("DecodeResponse(%q) = %v; want an error wrapping ErrMalformed", in, err)
		}
	}
}

func TestResponsesDecodeResponse(t *testing.T) {
	usage := `"usage":{"input_tokens":42,"input_tokens_details":{"cached_tokens":10},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":72}`
	tests := []struct {
		name, body string
		want       respFlat
	}{
		{"reasoning and text", `{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[
			{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Think."},{"type":"summary_text","text":" More."}]},
			{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]},{"type":"output_text","text":", world"}]}
		],` + usage + `}`,
			respFlat{Content: "Hello, world", Reasoning: "Think. More.", Finish: "stop", ResponseID: "resp_1",
				Usage: wire.Usage{Present: true, PromptTokens: 42, CachedTokens: 10, CompletionTokens: 30, ReasoningTokens: 12}}},
		{"reasoning content (vLLM)", `{"id":"r","status":"completed","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"Hm."}]},{"type":"message","content":[{"type":"refusal","refusal":"No."}]}]}`,
			respFlat{Content: "No.", Reasoning: "Hm.", Finish: "stop", ResponseID: "r"}},
		{"function calls", `{"id":"r","status":"completed","output":[
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"search","arguments":"{\"query\":\"a\"}"},
			{"type":"function_call","id":"fc_2","call_id":"call_2","name":"calc","arguments":"{}"}]}`,
			respFlat{Finish: "tool_calls", ResponseID: "r", ToolArgs: 6 + 13 + 4 + 2,
				ToolCalls: []respCall{{Index: 0, ID: "call_1", Name: "search", Arguments: `{"query":"a"}`}, {Index: 1, ID: "call_2", Name: "calc", Arguments: "{}"}}}},
		{"incomplete", `{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"Cut"}]}]}`,
			respFlat{Content: "Cut", Finish: "length", ResponseID: "r"}},
		{"failed", `{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, respFlat{Err: "server_error: boom", ResponseID: "r"}},
		{"an error body", `{"error":{"message":"Unknown parameter: 'foo'.","type":"invalid_request_error","param":"foo","code":"unknown_parameter"}}`,
			respFlat{Err: "unknown_parameter: Unknown parameter: 'foo'."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d ResponsesDecoder
			var c wire.Chunk
			if err := d.DecodeResponse([]byte(tt.body), &c); err != nil {
				t.Fatalf("DecodeResponse = %v", err)
			}
			if diff := cmp.Diff(tt.want, respFlatten(&c)); diff != "" {
				t.Errorf("chunk mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesProtocol(t *testing.T) {
	p := Responses
	if p.Name() != "openai-responses" || p.Path() != "/v1/responses" || !p.Chat() || !p.Streams() {
		t.Errorf("Responses = %q %q chat %v streams %v; want openai-responses /v1/responses true true", p.Name(), p.Path(), p.Chat(), p.Streams())
	}
	if ProtocolFor("/v1/responses") != Responses {
		t.Errorf("ProtocolFor(/v1/responses) = %v; want Responses", ProtocolFor("/v1/responses"))
	}
	for _, tt := range []struct {
		key  string
		want http.Header
	}{{"sk-1", http.Header{"Authorization": {"Bearer sk-1"}}}, {"", http.Header{}}} {
		h := http.Header{}
		p.Auth(h, tt.key)
		if diff := cmp.Diff(tt.want, h); diff != "" {
			t.Errorf("Auth(%q) mismatch (-want +got):\n%s", tt.key, diff)
		}
	}
}

func respBody(t *testing.T, r *wire.Request, o wire.BodyOptions) any {
	t.Helper()
	m := map[string]any{}
	if err := Responses.Body(m, r, o); err != nil {
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

func TestResponsesBody(t *testing.T) {
	fc := func(id, name, args string) wire.ToolCall {
		return wire.ToolCall{ID: id, Type: "function", Function: wire.FunctionCall{Name: name, Arguments: args}}
	}
	tests := []struct {
		name string
		r    *wire.Request
		o    wire.BodyOptions
		want string
	}{
		{"a conversation with tool calls and results", &wire.Request{MaxTokens: 300, Tools: []string{"search"}, Messages: []wire.Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "Why do queues form?"},
			{Role: "assistant", Content: "Let me look.", ToolCalls: []wire.ToolCall{fc("call_1", "search", `{"query":"queues"}`), fc("call_2", "search", `{"query":"M/M/1"}`)}},
			{Role: "tool", ToolCallID: "call_1", Content: "Arrivals outpace service."},
			{Role: "tool", ToolCallID: "call_2", Content: "rho = lambda/mu"},
			{Role: "assistant", Content: "Because arrivals outpace service."},
			{Role: "user", Content: "Thanks."},
		}}, wire.BodyOptions{Stream: true, MaxTokensField: "max_completion_tokens", IgnoreEOS: true, ContinuousUsage: true}, `{
			"input": [
				{"role": "system", "content": "Be brief."},
				{"role": "user", "content": "Why do queues form?"},
				{"role": "assistant", "content": "Let me look."},
				{"type": "function_call", "call_id": "call_1", "name": "search", "arguments": "{\"query\":\"queues\"}"},
				{"type": "function_call", "call_id": "call_2", "name": "search", "arguments": "{\"query\":\"M/M/1\"}"},
				{"type": "function_call_output", "call_id": "call_1", "output": "Arrivals outpace service."},
				{"type": "function_call_output", "call_id": "call_2", "output": "rho = lambda/mu"},
				{"role": "assistant", "content": "Because arrivals outpace service."},
				{"role": "user", "content": "Thanks."}
			],
			"max_output_tokens": 300,
			"tools": [{"type": "function", "name": "search", "strict": false,
				"description": "The search tool. Call it when its result would help answer.",
				"parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "what to search"}}, "required": ["query"]}}],
			"stream": true
		}`},
		{"a prompt", &wire.Request{Prompt: "Hello"}, wire.BodyOptions{}, `{"input": "Hello", "stream": false}`},
		{"a chained turn", &wire.Request{PreviousResponseID: "resp_9", MaxTokens: 5, Messages: []wire.Message{
			{Role: "assistant", ToolCalls: []wire.ToolCall{fc("call_7", "search", `{"query":"x"}`)}},
			{Role: "tool", ToolCallID: "call_7", Content: "found"},
		}}, wire.BodyOptions{Stream: true}, `{
			"input": [
				{"type": "function_call", "call_id": "call_7", "name": "search", "arguments": "{\"query\":\"x\"}"},
				{"type": "function_call_output", "call_id": "call_7", "output": "found"}
			],
			"max_output_tokens": 5,
			"previous_response_id": "resp_9",
			"store": true,
			"stream": true
		}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatalf("expected JSON: %v", err)
			}
			if diff := cmp.Diff(want, respBody(t, tt.r, tt.o)); diff != "" {
				t.Errorf("Body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponsesClient streams a recorded answer through a wire.Client against
// a real HTTP server, then chains a second turn from its response id.
func TestResponsesClient(t *testing.T) {
	stream, err := os.ReadFile(filepath.Join("testdata", "streams", "responses-function-call.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var bodies []map[string]any
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		bodies = append(bodies, m)
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	}))
	defer srv.Close()
	var clock atomic.Int64
	c, err := NewClient(wire.Config{BaseURL: srv.URL, Protocol: Responses, Model: "gpt-test", APIKey: "sk-test",
		Timeout: 10 * time.Second, Now: func() int64 { return clock.Add(1000) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(req *wire.Request) *runlog.Record {
		b, err := c.Body(req)
		if err != nil {
			t.Fatal(err)
		}
		var rec runlog.Record
		c.Stream(context.Background(), req, b, &rec)
		return &rec
	}
	rec := send(&wire.Request{ID: "r1", Messages: []wire.Message{{Role: "user", Content: "Look it up."}}, Tools: []string{"search"}})
	if path != "/v1/responses" || auth != "Bearer sk-test" {
		t.Errorf("request to %q with Authorization %q; want /v1/responses, Bearer sk-test", path, auth)
	}
	wantCalls := []runlog.ToolCall{{ID: "call_Qm3vT8kLx2WbZ9rN5cYp7HdA", Name: "search", Arguments: respSearchArgs}}
	if !rec.OK() || rec.FinishReason != "tool_calls" || rec.ResponseID != "resp_68af03d4e5f607182930415b6c7d8e9f" || !cmp.Equal(wantCalls, rec.ToolCalls) {
		t.Fatalf("record: error %q %q, finish %q, response id %q, calls %v; want ok, tool_calls, resp_68af03d4…, %v",
			rec.ErrorClass, rec.Error, rec.FinishReason, rec.ResponseID, rec.ToolCalls, wantCalls)
	}
	tc := rec.ToolCalls[0]
	send(&wire.Request{ID: "r2", PreviousResponseID: rec.ResponseID, Messages: []wire.Message{{Role: "tool", ToolCallID: tc.ID, Content: "found"}}})
	if len(bodies) != 2 || bodies[1]["previous_response_id"] != rec.ResponseID || bodies[1]["store"] != true {
		t.Fatalf("second body %v; want previous_response_id %s and store true", bodies[len(bodies)-1], rec.ResponseID)
	}
	if in, _ := json.Marshal(bodies[1]["input"]); string(in) != `[{"call_id":"call_Qm3vT8kLx2WbZ9rN5cYp7HdA","output":"found","type":"function_call_output"}]` {
		t.Errorf("second input %s; want the one function_call_output", in)
	}
}

// respFiles are the recorded Responses streams.
var respFiles = []string{"responses-text.sse", "responses-reasoning.sse", "responses-function-call.sse",
	"responses-parallel-calls.sse", "responses-incomplete.sse", "responses-error.sse", "responses-failed.sse"}

func TestResponsesDecodeNoAllocs(t *testing.T) {
	var all [][]byte
	for _, f := range respFiles {
		all = append(all, respEvents(t, f)...)
	}
	var d ResponsesDecoder
	var c wire.Chunk
	decodeAll := func() {
		d.Reset()
		for _, ev := range all {
			if err := d.Decode(ev, &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	decodeAll()
	if n := testing.AllocsPerRun(20, decodeAll); n != 0 {
		t.Errorf("decoding %d events allocates %v times; want 0", len(all), n)
	}
}

// respRef is what encoding/json says one event must give, for what needs
// no state: text, reasoning, tool-call bytes, usage, ids, errors, the end.
func respRef(data []byte) (respFlat, bool) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // counts are compared as the integers they are
	if dec.Decode(&m) != nil {
		return respFlat{}, false
	}
	str := func(o any, k string) string {
		mm, _ := o.(map[string]any)
		s, _ := mm[k].(string)
		return s
	}
	obj := func(o any, k string) any {
		mm, _ := o.(map[string]any)
		v, _ := mm[k].(map[string]any)
		if v == nil {
			return nil
		}
		return v
	}
	// count is an integer literal's value; any other value counts 0.
	count := func(o any, k string) int {
		mm, _ := o.(map[string]any)
		n, _ := mm[k].(json.Number)
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0
		}
		return int(v)
	}
	var f respFlat
	// errText is an error object's text; a nested one names its type
	// when it has no code (the event's own type is "error").
	errText := func(e any, nested bool, none string) string {
		code, msg := str(e, "code"), str(e, "message")
		if code == "" && nested {
			code = str(e, "type")
		}
		switch {
		case code != "" && msg != "":
			return code + ": " + msg
		case msg != "":
			return msg
		case code != "":
			return code
		}
		return none
	}
	resp := obj(m, "response")
	switch typ := str(m, "type"); typ {
	case "response.output_text.delta", "response.refusal.delta":
		f.Content = str(m, "delta")
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		f.Reasoning = str(m, "delta")
	case "response.function_call_arguments.delta":
		f.ToolArgs = len(str(m, "delta"))
	case "response.output_item.added":
		if it := obj(m, "item"); str(it, "type") == "function_call" {
			f.ToolArgs = len(str(it, "name"))
		}
	case "response.created", "response.in_progress", "response.queued":
		f.ResponseID = str(resp, "id")
	case "response.completed", "response.incomplete":
		f.ResponseID, f.End = str(resp, "id"), true
		if u := obj(resp, "usage"); u != nil {
			f.Usage = wire.Usage{Present: true, PromptTokens: count(u, "input_tokens"), CompletionTokens: count(u, "output_tokens"),
				CachedTokens: count(obj(u, "input_tokens_details"), "cached_tokens"), ReasoningTokens: count(obj(u, "output_tokens_details"), "reasoning_tokens")}
		}
	case "response.failed":
		f.ResponseID = str(resp, "id")
		f.Err = "response failed"
		if e := obj(resp, "error"); e != nil {
			f.Err = errText(e, true, "response failed")
		}
	case "error":
		if n := obj(m, "error"); n != nil {
			f.Err = errText(n, true, "unknown error")
		} else {
			f.Err = errText(m, false, "unknown error")
		}
	}
	return f, true
}

// respCheckRef decodes data with d and compares what needs no state with
// respRef's reading.
func respCheckRef(t *testing.T, d *ResponsesDecoder, data []byte) {
	t.Helper()
	var c wire.Chunk
	err := d.Decode(data, &c)
	valid := json.Valid(data) && bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
	if valid != (err == nil) {
		t.Fatalf("Decode(%q) = %v; json.Valid says object %v", data, err, valid)
	}
	if err != nil {
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("Decode(%q) = %v; want ErrMalformed", data, err)
		}
		return
	}
	want, ok := respRef(data)
	if !ok {
		t.Fatalf("encoding/json rejects %q that Decode took", data)
	}
	got := respFlatten(&c)
	got.Finish, got.ToolCalls = "", nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Decode(%q) mismatch with encoding/json (-want +got):\n%s", data, diff)
	}
}

func TestResponsesDecodeAgainstRef(t *testing.T) {
	var d ResponsesDecoder
	for _, f := range respFiles {
		for _, ev := range respEvents(t, f) {
			respCheckRef(t, &d, ev)
		}
	}
	for _, in := range []string{
		`{"type":"error","error":null,"message":"m"}`, `{"type":"response.failed","response":null}`,
		`{"type":"response.completed","response":{"usage":{}}}`, `{"type":"response.completed","response":{"usage":null}}`,
		"{\"type\":\"response.output_text.delta\",\"delta\":\"\xff\"}", `{"type":"response.output_text.delta","delta":7}`,
	} {
		respCheckRef(t, &d, []byte(in))
	}
}

// FuzzResponsesDecode feeds lines of the input as one stream's events: no
// panic, valid JSON objects never malformed and invalid ones always, and
// what needs no state as encoding/json reads it.
func FuzzResponsesDecode(f *testing.F) {
	// One seed per kind of event in the recorded streams: small seeds keep
	// the fuzzer's minimising of each new input quick.
	seen := map[string]bool{}
	for _, name := range respFiles {
		for _, ev := range respEvents(f, name) {
			var e struct{ Type string }
			if json.Unmarshal(ev, &e) == nil && !seen[e.Type] {
				seen[e.Type] = true
				f.Add(ev)
			}
		}
	}
	f.Add([]byte("{\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"n\"}}\n" +
		"{\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"{}\"}\n{\"type\":\"response.completed\",\"response\":{\"output\":[]}}"))
	f.Add([]byte(`{"type":"response.output_text.delta","delta":"\ud83d\ude00"}`))
	f.Add([]byte(`{"type":"response.completed","response":{"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":1}}}}`))
	var d ResponsesDecoder
	f.Fuzz(func(t *testing.T, in []byte) {
		d.Reset()
		for line := range bytes.SplitSeq(in, []byte("\n")) {
			respCheckRef(t, &d, line)
		}
		var c wire.Chunk
		err := d.DecodeResponse(in, &c)
		valid := json.Valid(in) && bytes.HasPrefix(bytes.TrimLeft(in, " \t\r\n"), []byte("{"))
		if valid != (err == nil) {
			t.Fatalf("DecodeResponse(%q) = %v; json.Valid says object %v", in, err, valid)
		}
	})
}

// BenchmarkResponsesDecode measures decoding one event of the recorded
// streams (one op is one event; streams repeat with the decoder reused).
func BenchmarkResponsesDecode(b *testing.B) {
	for _, name := range respFiles {
		events := respEvents(b, name)
		b.Run(strings.TrimSuffix(strings.TrimPrefix(name, "responses-"), ".sse"), func(b *testing.B) {
			var d ResponsesDecoder
			var c wire.Chunk
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(events) {
					i = 0
					d.Reset()
				}
				if err := d.Decode(events[i], &c); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
