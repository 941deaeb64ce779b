package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/wire"
)

// The recorded streams answer with the same sentence as the OpenAI ones
// (24 pieces, 143 bytes) and reason in the same 17 pieces (100 bytes);
// testdata/streams/README.md lists what each exercises.
const (
	answer    = "The quick answer is that a queue forms whenever requests arrive faster than the engine can drain them, so latency grows before throughput does."
	reasoning = "The user asks about queues. Arrival rate above service rate means the backlog grows; say so plainly."
)

// readEvents returns the data of every event of a recorded stream, copied.
func readEvents(t testing.TB, name string) [][]byte {
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

// ms is event k's arrival time: k ms after the send (at 0), so a
// duration in ms names the event that set it.
func ms(k int) int64 { return int64(k) * int64(time.Millisecond) }

// meter runs events through a StreamMeter reading with a fresh Decoder,
// the k-th (1-based) arriving at ms(k); the last is marked truncated when
// cut is set. It ends with EOF one ms after the last event.
func meter(events [][]byte, cut bool) *runlog.Record {
	var m wire.StreamMeter
	m.SetDecoder(Messages.NewDecoder())
	rec := &runlog.Record{}
	m.Reset(rec)
	for i, ev := range events {
		m.Event(ev, ms(i+1), cut && i == len(events)-1)
	}
	m.EOF(ms(len(events) + 1))
	m.Close(0)
	return rec
}

// outcome is what the stream tests check of a record, worked out by hand.
type outcome struct {
	TTFT, TTP             time.Duration // -1: none
	Chunks, VisibleChunks int
	Completion, Prompt    int
	Cached, Reasoning     int
	Source                runlog.TokenSource
	Finish                string
	ToolCalls             []runlog.ToolCall
	Server                bool // the record has server timing
	ErrorClass            runlog.ErrorClass
	ErrorHas              string
	End                   time.Duration
}

func outcomeOf(rec *runlog.Record) outcome {
	o := outcome{TTFT: -1, TTP: -1, Chunks: len(rec.Chunks),
		Completion: rec.CompletionTokens, Prompt: rec.PromptTokens, Cached: rec.CachedTokens, Reasoning: rec.ReasoningTokens,
		Source: rec.TokenSource, Finish: rec.FinishReason, ToolCalls: rec.ToolCalls, ErrorClass: rec.ErrorClass,
		End: time.Duration(rec.End), Server: rec.Server != nil}
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
	if rec.Error != "" {
		o.ErrorHas = rec.Error
	}
	return o
}

var (
	searchArgs = `{"query": "queueing theory basics"}`
	calcArgs   = `{"query": "arrival rate 12/s, service rate 10/s"}`
)

// TestStreams measures each recorded stream and checks the record. Event
// numbers (1-based) are the arrival times in ms.
func TestStreams(t *testing.T) {
	ev := func(name string) [][]byte { return readEvents(t, name) }
	text := ev("text.sse")
	tests := []struct {
		name   string
		events [][]byte
		cut    bool
		want   outcome
	}{
		{"text", text, false, outcome{
			// 1 message_start, 2 block start, 3 ping, 4-27 text, 28 block
			// stop, 29 message_delta, 30 message_stop
			TTFT: 4 * time.Millisecond, TTP: 4 * time.Millisecond, Chunks: 24, VisibleChunks: 24,
			Completion: 24, Prompt: 42, Source: runlog.TokensUsage, Finish: "stop", End: 30 * time.Millisecond,
		}},
		{"thinking", ev("thinking.sse"), false, outcome{
			// 1 message_start, 2 ping, 3 thinking start (empty), 4-20
			// thinking, 21 signature, 22 stop, 23 text start, 24-47 text,
			// 48 stop, 49 message_delta (input counts repeated), 50 stop
			TTFT: 4 * time.Millisecond, TTP: 24 * time.Millisecond, Chunks: 41, VisibleChunks: 24,
			Completion: 41, Prompt: 42, Cached: 32, Source: runlog.TokensUsage, Finish: "length", End: 50 * time.Millisecond,
		}},
		{"redacted thinking", ev("redacted-thinking.sse"), false, outcome{
			// 1 message_start, 2 redacted_thinking start (hidden), 3 stop,
			// 4 text start, 5-28 text, 29 stop, 30 message_delta, 31 stop
			TTFT: 2 * time.Millisecond, TTP: 5 * time.Millisecond, Chunks: 25, VisibleChunks: 24,
			Completion: 60, Prompt: 42, Source: runlog.TokensUsage, Finish: "stop", End: 31 * time.Millisecond,
		}},
		{"tool use", ev("tool-use.sse"), false, outcome{
			// 1 message_start, 2 text start, 3-7 text, 8 stop, 9 tool_use
			// start (name: hidden), 10 empty partial_json (no token),
			// 11-13 arguments, 14 stop, 15 message_delta, 16 message_stop
			TTFT: 3 * time.Millisecond, TTP: 3 * time.Millisecond, Chunks: 9, VisibleChunks: 5,
			Completion: 31, Prompt: 42, Source: runlog.TokensUsage, Finish: "tool_calls", End: 16 * time.Millisecond,
			ToolCalls: []runlog.ToolCall{{ID: "toolu_01A9kXqWv3mTz7cRb5nLp2Hd", Name: "search", Arguments: searchArgs}},
		}},
		{"parallel tool use", ev("tool-use-parallel.sse"), false, outcome{
			// 1 message_start (2 input + 40 written to the cache), 2 start,
			// 3 empty, 4-6 arguments, 7 stop, 8 start, 9 empty, 10-12
			// arguments, 13 stop, 14 message_delta, 15 message_stop
			TTFT: 2 * time.Millisecond, TTP: -1, Chunks: 8,
			Completion: 57, Prompt: 42, Source: runlog.TokensUsage, Finish: "tool_calls", End: 15 * time.Millisecond,
			ToolCalls: []runlog.ToolCall{
				{ID: "toolu_01B2mYrXw4nUa8dSc6oMq3Je", Name: "search", Arguments: searchArgs},
				{ID: "toolu_01C3nZsYx5oVb9eTd7pNr4Kf", Name: "calculator", Arguments: calcArgs},
			},
		}},
		{"error event", ev("error.sse"), false, outcome{
			// 1 message_start, 2 start, 3-5 text, 6 error
			TTFT: 3 * time.Millisecond, TTP: 3 * time.Millisecond, Chunks: 3, VisibleChunks: 3,
			Completion: 3, Prompt: 42, Source: runlog.TokensCounted, End: 6 * time.Millisecond,
			ErrorClass: runlog.ErrStream, ErrorHas: "error event: overloaded_error: Overloaded",
		}},
		{"cut before message_stop", text[:len(text)-1], false, outcome{
			// message_delta gave the usage but the finish waits for
			// message_stop: EOF at 30 ms fails the stream
			TTFT: 4 * time.Millisecond, TTP: 4 * time.Millisecond, Chunks: 24, VisibleChunks: 24,
			Completion: 24, Prompt: 42, Source: runlog.TokensUsage, End: 30 * time.Millisecond,
			ErrorClass: runlog.ErrStream, ErrorHas: "stream ended without [DONE] (or its protocol's end event) or a finish reason",
		}},
		{"cut mid-text", text[:10], false, outcome{
			TTFT: 4 * time.Millisecond, TTP: 4 * time.Millisecond, Chunks: 7, VisibleChunks: 7,
			Completion: 7, Prompt: 42, Source: runlog.TokensCounted, End: 11 * time.Millisecond,
			ErrorClass: runlog.ErrStream, ErrorHas: "stream ended without [DONE] (or its protocol's end event) or a finish reason",
		}},
		{"malformed event", append(text[:5:5], []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"`)), false, outcome{
			TTFT: 4 * time.Millisecond, TTP: 4 * time.Millisecond, Chunks: 2, VisibleChunks: 2,
			Completion: 2, Prompt: 42, Source: runlog.TokensCounted, End: 6 * time.Millisecond,
			ErrorClass: runlog.ErrMalformed, ErrorHas: "chunk 3: malformed JSON: unexpected end of JSON after object member",
		}},
		{"event cut by the stream's end", append(text[:5:5], []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x`)), true, outcome{
			TTFT: 4 * time.Millisecond, TTP: 4 * time.Millisecond, Chunks: 2, VisibleChunks: 2,
			Completion: 2, Prompt: 42, Source: runlog.TokensCounted, End: 6 * time.Millisecond,
			ErrorClass: runlog.ErrStream, ErrorHas: "stream cut inside chunk 3",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeOf(meter(tt.events, tt.cut))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("record mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamText checks that the decoded text of the streams is the
// answer and the reasoning, whole and never doubled.
func TestStreamText(t *testing.T) {
	for _, tt := range []struct{ file, content, reasoning string }{
		{"text.sse", answer, ""},
		{"thinking.sse", answer, reasoning},
		{"redacted-thinking.sse", answer, ""},
		{"tool-use.sse", "I will search for that.", ""},
	} {
		var d Decoder
		var c wire.Chunk
		var content, reas []byte
		for i, ev := range readEvents(t, tt.file) {
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

// flat is a Chunk with its byte slices as strings, for comparing.
type flat struct {
	Content, Reasoning, Finish, Err, ResponseID string
	ToolArgs                                    int
	ToolCalls                                   []call
	Usage                                       wire.Usage
	End                                         bool
}

type call struct {
	Index               int
	ID, Name, Arguments string
}

func flatten(c *wire.Chunk) flat {
	f := flat{Content: string(c.Content), Reasoning: string(c.Reasoning), Finish: string(c.FinishReason),
		Err: string(c.ErrMessage), ResponseID: string(c.ResponseID), ToolArgs: c.ToolArgs, Usage: c.Usage, End: c.End}
	for _, tc := range c.ToolCalls {
		f.ToolCalls = append(f.ToolCalls, call{tc.Index, string(tc.ID), string(tc.Name), string(tc.Arguments)})
	}
	return f
}

// TestDecode decodes event sequences (one decoder per case, so state
// carries from event to event) and checks the last event's chunk.
func TestDecode(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"cache_read_input_tokens":30,"cache_creation_input_tokens":7,"output_tokens":1}}}`
	tests := []struct {
		name   string
		events []string
		want   flat
	}{
		{"message_start sums the prompt counts", []string{start},
			flat{Usage: wire.Usage{Present: true, PromptTokens: 42, CachedTokens: 30}}},
		{"message_start with null cache counts", []string{`{"type":"message_start","message":{"usage":{"input_tokens":9,"cache_read_input_tokens":null,"output_tokens":1}}}`},
			flat{Usage: wire.Usage{Present: true, PromptTokens: 9}}},
		{"message_start without usage", []string{`{"type":"message_start","message":{"id":"msg_1"}}`}, flat{}},
		{"message_delta keeps message_start's prompt counts", []string{start, `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}}`},
			flat{Usage: wire.Usage{Present: true, PromptTokens: 42, CachedTokens: 30, CompletionTokens: 12}}},
		{"message_delta's prompt counts replace them", []string{start, `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":6,"cache_read_input_tokens":40,"output_tokens":12}}`},
			flat{Usage: wire.Usage{Present: true, PromptTokens: 6 + 40 + 7, CachedTokens: 40, CompletionTokens: 12}}},
		{"stop_reason waits for message_stop", []string{`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`}, flat{}},
		{"end_turn", []string{`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, `{"type":"message_stop"}`}, flat{Finish: "stop", End: true}},
		{"stop_sequence", []string{`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"\n\n"}}`, `{"type":"message_stop"}`}, flat{Finish: "stop", End: true}},
		{"max_tokens", []string{`{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}`, `{"type":"message_stop"}`}, flat{Finish: "length", End: true}},
		{"tool_use", []string{`{"type":"message_delta","delta":{"stop_reason":"tool_use"}}`, `{"type":"message_stop"}`}, flat{Finish: "tool_calls", End: true}},
		{"other stop reasons kept", []string{`{"type":"message_delta","delta":{"stop_reason":"refusal"}}`, `{"type":"ping"}`, `{"type":"message_stop"}`}, flat{Finish: "refusal", End: true}},
		{"a null stop_reason keeps the earlier one", []string{`{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}`, `{"type":"message_delta","delta":{"stop_reason":null}}`, `{"type":"message_stop"}`}, flat{Finish: "length", End: true}},
		{"message_stop without a stop reason", []string{`{"type":"message_stop"}`}, flat{End: true}},
		{"text start carries text", []string{`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`}, flat{Content: "Hi"}},
		{"thinking start carries thinking", []string{`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"Hm","signature":""}}`}, flat{Reasoning: "Hm"}},
		{"redacted thinking is hidden bytes", []string{`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"QUJDRA=="}}`}, flat{ToolArgs: 8}},
		{"tool_use start", []string{`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"search","input":{}}}`},
			flat{ToolArgs: 6, ToolCalls: []call{{2, "toolu_1", "search", ""}}}},
		{"input_json_delta", []string{`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"search","input":{}}}`, `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"q"}}`},
			flat{ToolArgs: 12, ToolCalls: []call{{2, "", "", `{"query": "q`}}}},
		{"server tool input is hidden, no call", []string{`{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}`},
			flat{ToolArgs: 7}},
		{"server tool start", []string{`{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`}, flat{ToolArgs: 10}},
		{"text_delta", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \"b\" \u00e9\ud83d\ude00"}}`}, flat{Content: "a \"b\" é😀"}},
		{"thinking_delta", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"so"}}`}, flat{Reasoning: "so"}},
		{"signature_delta is no token", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCg=="}}`}, flat{}},
		{"citations_delta is no token", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}}`}, flat{}},
		{"members in any order", []string{`{"delta":{"text":"late","type":"text_delta"},"index":0,"type":"content_block_delta"}`}, flat{Content: "late"}},
		{"a repeated member's last value counts", []string{`{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"},"delta":{"type":"text_delta","text":"b"}}`}, flat{Content: "b"}},
		{"a delta's type decides, not the member present", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","text":"x","thinking":"y"}}`}, flat{Reasoning: "y"}},
		{"content_block_stop", []string{`{"type":"content_block_stop","index":0}`}, flat{}},
		{"ping", []string{`{"type": "ping"}`}, flat{}},
		{"an unknown event is skipped", []string{`{"type":"message_annotation","delta":{"type":"text_delta","text":"x"}}`}, flat{}},
		{"error", []string{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, flat{Err: "overloaded_error: Overloaded"}},
		{"error with a message only", []string{`{"type":"error","error":{"message":"boom"}}`}, flat{Err: "boom"}},
		{"error with nothing", []string{`{"type":"error"}`}, flat{Err: "unknown error"}},
		{"a gateway's untyped error", []string{`{"error":{"message":"upstream timed out"}}`}, flat{Err: "upstream timed out"}},
		{"a gateway's string error", []string{`{"error":"bad gateway"}`}, flat{Err: "bad gateway"}},
		{"an error member of a typed event is not an error", []string{`{"type":"ping","error":{"message":"x"}}`}, flat{}},
		{"an index out of range is 0", []string{`{"type":"content_block_start","index":99999999,"content_block":{"type":"tool_use","id":"t","name":"n"}}`},
			flat{ToolArgs: 1, ToolCalls: []call{{0, "t", "n", ""}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			var c wire.Chunk
			for i, ev := range tt.events {
				if err := d.Decode([]byte(ev), &c); err != nil {
					t.Fatalf("Decode(event %d %s) = %v", i+1, ev, err)
				}
			}
			if diff := cmp.Diff(tt.want, flatten(&c)); diff != "" {
				t.Errorf("last chunk mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReset checks that Reset forgets a stream's prompt counts, block
// kinds and stop reason.
func TestReset(t *testing.T) {
	var d Decoder
	var c wire.Chunk
	for _, ev := range []string{
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":30}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}`,
	} {
		if err := d.Decode([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
	}
	d.Reset()
	for _, tt := range []struct {
		ev   string
		want flat
	}{
		{`{"type":"message_delta","usage":{"output_tokens":3}}`, flat{Usage: wire.Usage{Present: true, CompletionTokens: 3}}},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`, flat{ToolArgs: 2, ToolCalls: []call{{0, "", "", "{}"}}}},
		{`{"type":"message_stop"}`, flat{End: true}},
	} {
		if err := d.Decode([]byte(tt.ev), &c); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, flatten(&c)); diff != "" {
			t.Errorf("after Reset, Decode(%s) mismatch (-want +got):\n%s", tt.ev, diff)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, in := range []string{
		``, `   `, `[DONE]`, `event: ping`, `[1]`, `"text"`, `42`, `null`,
		`{"type":"ping"`, `{"type":"ping"}}`, `{"type":"ping"} x`, `{"type":ping}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"\x"}}`,
		"{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"a\x01\"}}",
		`{"type":"message_start","message":{"usage":{"input_tokens":1e}}}`,
	} {
		var d Decoder
		var c wire.Chunk
		err := d.Decode([]byte(in), &c)
		if !errors.Is(err, wire.ErrMalformed) || !errors.Is(err, jsonscan.ErrMalformed) {
			t.Errorf("Decode(%q) = %v; want an error wrapping ErrMalformed", in, err)
		}
		if err := d.DecodeResponse([]byte(in), &c); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("DecodeResponse(%q) = %v; want an error wrapping ErrMalformed", in, err)
		}
	}
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name, body string
		want       flat
	}{
		{"text", `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Hello"},{"type":"text","text":", world","citations":[]}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":30,"output_tokens":5}}`,
			flat{Content: "Hello, world", Finish: "stop", Usage: wire.Usage{Present: true, PromptTokens: 42, CachedTokens: 30, CompletionTokens: 5}}},
		{"thinking, redacted thinking, text", `{"type":"message","content":[{"type":"thinking","thinking":"Let me see.","signature":"Eq=="},{"type":"redacted_thinking","data":"QUJD"},{"type":"text","text":"Yes."}],"stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":9}}`,
			flat{Content: "Yes.", Reasoning: "Let me see.", ToolArgs: 4, Finish: "length", Usage: wire.Usage{Present: true, PromptTokens: 3, CompletionTokens: 9}}},
		{"tool_use keeps the input's text", `{"type":"message","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"search","input":{ "query" : "a\u00e9" , "n":[1,2]}},{"type":"tool_use","input":{},"name":"calc","id":"toolu_2"}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":20}}`,
			flat{Content: "Looking.", ToolArgs: 6 + len(`{ "query" : "a\u00e9" , "n":[1,2]}`) + 4 + 2, Finish: "tool_calls",
				ToolCalls: []call{{1, "toolu_1", "search", `{ "query" : "a\u00e9" , "n":[1,2]}`}, {2, "toolu_2", "calc", "{}"}},
				Usage:     wire.Usage{Present: true, PromptTokens: 3, CompletionTokens: 20}}},
		{"error", `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_1"}`,
			flat{Err: "invalid_request_error: max_tokens: Field required"}},
		{"a gateway's error", `{"error":{"message":"no such model"}}`, flat{Err: "no such model"}},
		{"empty content", `{"type":"message","content":[],"stop_reason":"end_turn"}`, flat{Finish: "stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			var c wire.Chunk
			if err := d.DecodeResponse([]byte(tt.body), &c); err != nil {
				t.Fatalf("DecodeResponse = %v", err)
			}
			if diff := cmp.Diff(tt.want, flatten(&c)); diff != "" {
				t.Errorf("chunk mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMeasureWhole checks a whole answer through wire.MeasureWhole.
func TestMeasureWhole(t *testing.T) {
	body := `{"type":"message","content":[{"type":"thinking","thinking":"Hm."},{"type":"text","text":"Yes."},{"type":"tool_use","id":"toolu_1","name":"search","input":{"query":"x"}}],"stop_reason":"tool_use","usage":{"input_tokens":2,"cache_read_input_tokens":40,"output_tokens":17}}`
	rec := &runlog.Record{}
	text := wire.MeasureWhole(&Decoder{}, rec, []byte(body), ms(9), 0)
	want := runlog.Record{
		End: ms(9), WholeAnswer: true, TokenSource: runlog.TokensUsage, FinishReason: "tool_calls",
		PromptTokens: 42, CachedTokens: 40, CompletionTokens: 17,
		Chunks:    []runlog.Chunk{{T: ms(9), Tokens: 17, Visible: true}},
		ToolCalls: []runlog.ToolCall{{ID: "toolu_1", Name: "search", Arguments: `{"query":"x"}`}},
	}
	if diff := cmp.Diff(want, *rec); diff != "" || text != "Yes." {
		t.Errorf("MeasureWholeWith: text %q (want %q); record mismatch (-want +got):\n%s", text, "Yes.", diff)
	}
}

// TestDecodeNoAllocs checks the hot path: decoding a stream's events
// allocates nothing once the decoder's buffers have grown.
func TestDecodeNoAllocs(t *testing.T) {
	var all [][]byte
	for _, f := range streamFiles {
		all = append(all, readEvents(t, f)...)
	}
	var d Decoder
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

// streamFiles are the recorded streams (testdata/streams/README.md).
var streamFiles = []string{"text.sse", "thinking.sse", "redacted-thinking.sse", "tool-use.sse", "tool-use-parallel.sse", "error.sse"}

// ref is what encoding/json says one event (decoded alone by a fresh
// decoder) must give, for the parts that need no state: text, reasoning,
// hidden bytes, errors and the end.
func ref(data []byte) (flat, bool) {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return flat{}, false
	}
	str := func(o any, k string) string {
		mm, _ := o.(map[string]any)
		s, _ := mm[k].(string)
		return s
	}
	var f flat
	switch str(m, "type") {
	case "content_block_delta":
		dl := m["delta"]
		switch str(dl, "type") {
		case "text_delta":
			f.Content = str(dl, "text")
		case "thinking_delta":
			f.Reasoning = str(dl, "thinking")
		case "input_json_delta":
			f.ToolArgs = len(str(dl, "partial_json"))
		}
	case "content_block_start":
		b := m["content_block"]
		switch str(b, "type") {
		case "text":
			f.Content = str(b, "text")
		case "thinking":
			f.Reasoning = str(b, "thinking")
		case "redacted_thinking":
			f.ToolArgs = len(str(b, "data"))
		case "tool_use", "server_tool_use", "mcp_tool_use":
			f.ToolArgs = len(str(b, "name"))
		}
	case "message_stop":
		f.End = true
	case "error", "":
		var typ, msg string
		switch e := m["error"].(type) {
		case map[string]any:
			typ, msg = str(e, "type"), str(e, "message")
		case string:
			msg = e
		default:
			if str(m, "type") == "" {
				return f, true // no type and no error object: nothing
			}
		}
		switch {
		case typ != "" && msg != "":
			f.Err = typ + ": " + msg
		case msg != "":
			f.Err = msg
		case typ != "":
			f.Err = typ
		default:
			f.Err = "unknown error"
		}
	}
	return f, true
}

// checkRef decodes data with d (a fresh decoder when fresh) and compares
// the stateless parts of the chunk with ref's.
func checkRef(t *testing.T, d *Decoder, data []byte) {
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
	want, ok := ref(data)
	if !ok {
		t.Fatalf("encoding/json rejects %q that Decode took", data)
	}
	got := flatten(&c)
	got.Finish, got.ResponseID, got.ToolCalls, got.Usage = "", "", nil, wire.Usage{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Decode(%q) mismatch with encoding/json (-want +got):\n%s", data, diff)
	}
}

func TestDecodeAgainstRef(t *testing.T) {
	var d Decoder
	for _, f := range streamFiles {
		for _, ev := range readEvents(t, f) {
			checkRef(t, &d, ev)
		}
	}
	for _, in := range []string{
		`{"type":"error","error":null}`, `{"error":null}`, `{"error":5}`, `{"type":"error","error":"x"}`,
		`{"type":"content_block_delta","delta":null}`, `{"type":"content_block_delta","delta":{"type":"text_delta","text":5}}`,
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\xfe\"}}",
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"\ud800"}}`,
	} {
		checkRef(t, &d, []byte(in))
	}
}

// FuzzAnthropicDecode feeds lines of the input as one stream's events:
// no panic, valid JSON objects never malformed and invalid ones always,
// and what needs no state as encoding/json reads it.
func FuzzAnthropicDecode(f *testing.F) {
	// One seed per kind of event and delta in the recorded streams: small
	// seeds keep the fuzzer's minimising of each new input quick.
	seen := map[string]bool{}
	for _, name := range streamFiles {
		for _, ev := range readEvents(f, name) {
			var e struct {
				Type         string
				Delta        struct{ Type string }
				ContentBlock struct{ Type string } `json:"content_block"`
			}
			if k := fmt.Sprint(json.Unmarshal(ev, &e), e); !seen[k] {
				seen[k] = true
				f.Add(ev)
			}
		}
	}
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d\ude00"}}`))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add([]byte("{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n{\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}"))
	var d Decoder
	f.Fuzz(func(t *testing.T, in []byte) {
		d.Reset()
		for line := range bytes.SplitSeq(in, []byte("\n")) {
			checkRef(t, &d, line)
		}
		var c wire.Chunk
		err := d.DecodeResponse(in, &c)
		valid := json.Valid(in) && bytes.HasPrefix(bytes.TrimLeft(in, " \t\r\n"), []byte("{"))
		if valid != (err == nil) {
			t.Fatalf("DecodeResponse(%q) = %v; json.Valid says object %v", in, err, valid)
		}
	})
}

// BenchmarkAnthropicDecode measures decoding one event of the recorded
// streams (one op is one event; streams repeat with the decoder reused).
func BenchmarkAnthropicDecode(b *testing.B) {
	for _, name := range streamFiles {
		events := readEvents(b, name)
		b.Run(strings.TrimSuffix(name, ".sse"), func(b *testing.B) {
			var d Decoder
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

// TestUsageDecreasing: message_delta's output_tokens is cumulative, so a
// later one below an earlier one (50, then 2) is usage that does not fit
// the stream: the record counts its tokens itself and says why.
func TestUsageDecreasing(t *testing.T) {
	events := [][]byte{
		[]byte(`{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}`),
		[]byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		[]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`),
		[]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}`),
		[]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"c"}}`),
		[]byte(`{"type":"content_block_stop","index":0}`),
		[]byte(`{"type":"message_delta","delta":{},"usage":{"output_tokens":50}}`),
		[]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`),
		[]byte(`{"type":"message_stop"}`),
	}
	rec := meter(events, false)
	if rec.TokenSource != runlog.TokensCounted || rec.CompletionTokens != 3 || !strings.Contains(rec.UsageRejected, "fell from 50 to 2") {
		t.Errorf("record: source %s, completion %d, usage rejected %q; want counted, 3, \"...fell from 50 to 2\"",
			rec.TokenSource, rec.CompletionTokens, rec.UsageRejected)
	}
}
