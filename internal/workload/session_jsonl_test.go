package workload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoadSessionsJSONL(t *testing.T) {
	d, err := LoadSessionsJSONL("testdata/sessions/chat.jsonl", SessionJSONLConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Approx counts: "You are a terse support agent." = You are a terse
	// support(2) agent . = 8; "Where is my order 1234?" = 4 words + 1234(2)
	// + ? = 7. Line 2 is blank, so the second session is on line 3.
	want := []Session{
		{
			ID: "support-1", System: "You are a terse support agent.", SystemTokens: 8, Tools: []string{"lookup_order"},
			Turns: []Turn{
				{Role: "user", Content: "Where is my order 1234?", InputTokens: 7, OutputTokens: 40,
					ToolCalls: []ToolCall{{Name: "lookup_order", Latency: 250 * time.Millisecond, ResultTokens: 120}}},
				{Content: "Thanks, and can I change the address?", InputTokens: 12, OutputTokens: 60, ThinkTime: 8 * time.Second},
			},
		},
		{
			ID: "synth-2", SystemTokens: 512, Arrival: 1500 * time.Millisecond, HasArrival: true,
			Turns: []Turn{
				{InputTokens: 2000, OutputTokens: 300},
				{InputTokens: 50, OutputTokens: 120, ThinkTime: 12500500 * time.Microsecond},
			},
		},
	}
	var got []Session
	for i := range d.Len() {
		got = append(got, d.Session(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	if d.Name() != "sessions:chat.jsonl" || d.Line(0) != 1 || d.Line(1) != 3 {
		t.Errorf("Name, Line(0), Line(1) = %q, %d, %d; want sessions:chat.jsonl, 1, 3", d.Name(), d.Line(0), d.Line(1))
	}
	capped, err := LoadSessionsJSONL("testdata/sessions/chat.jsonl", SessionJSONLConfig{NumSessions: 1})
	if err != nil || capped.Len() != 1 || capped.Session(0).ID != "support-1" {
		t.Errorf("LoadSessionsJSONL(NumSessions 1) = %v, %v; want support-1 alone", capped, err)
	}
}

func TestReadSessionsJSONLDefaults(t *testing.T) {
	// No session_id: "line-N"; a reply's text gives its length when
	// output_tokens is absent; input_tokens beside content is trusted.
	in := "\n" + `{"turns": [{"content": "one two three", "input_tokens": 9, "reply": "hi there"}]}` + "\r\n"
	d, err := ReadSessionsJSONL(strings.NewReader(in), "d.jsonl", SessionJSONLConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := Session{ID: "line-2", Turns: []Turn{{Content: "one two three", InputTokens: 9, OutputTokens: 2, RecordedReply: "hi there"}}}
	if diff := cmp.Diff(want, d.Session(0)); diff != "" {
		t.Errorf("Session(0) (-want +got):\n%s", diff)
	}
}

func TestReadSessionsJSONLErrors(t *testing.T) {
	ok := `{"session_id": "a", "turns": [{"input_tokens": 5}]}` + "\n"
	tests := []struct {
		name, in, want string
		target         error
	}{
		{"empty", "", "s.jsonl: no sessions in file", nil},
		{"blank lines only", "\n\n", "s.jsonl: no sessions in file", nil},
		{"not JSON", "hello\n", "s.jsonl:1: session \"line-1\": invalid JSON at byte 1", nil},
		{"truncated", ok + `{"session_id": "b", "turns": [`, `s.jsonl:2: session "line-2": invalid JSON: unexpected end`, nil},
		{"trailing data", `{"turns": [{"input_tokens": 1}]} {}`, "s.jsonl:1: session \"line-1\": invalid JSON: data after the value", nil},
		{"unknown session field", ok + `{"session_id": "b", "sytem": "x", "turns": [{"input_tokens": 5}]}`, `s.jsonl:2: session "b": unknown field "sytem"`, nil},
		{"unknown turn field", ok + `{"session_id": "b", "turns": [{"input_tokens": 5}, {"inptu_tokens": 5}]}`, `s.jsonl:2: session "b": turns[1]: unknown field "inptu_tokens"`, nil},
		{"unknown call field", `{"session_id": "b", "turns": [{"input_tokens": 5, "tool_calls": [{"name": "x", "latency": 5}]}]}`, `s.jsonl:1: session "b": turns[0].tool_calls[0]: unknown field "latency"`, nil},
		{"no turns", `{"session_id": "b"}`, `s.jsonl:1: session "b": turns: missing; want at least one turn`, nil},
		{"zero turns", `{"session_id": "b", "turns": []}`, `s.jsonl:1: session "b": turns: no turns; want at least one`, nil},
		{"string tokens", ok + "\n" + `{"session_id": "c", "turns": [{"input_tokens": "5"}]}`, `s.jsonl:3: session "c": turns[0].input_tokens: want an integer, got JSON string`, nil},
		{"fractional tokens", `{"session_id": "c", "turns": [{"output_tokens": 1.5, "content": "x"}]}`, `s.jsonl:1: session "c": turns[0].output_tokens: want an integer, got JSON number 1.5`, nil},
		{"session field type", `{"session_id": "c", "system_tokens": "many", "turns": [{"content": "x"}]}`, `s.jsonl:1: session "c": system_tokens: want an integer, got JSON string`, nil},
		{"no content", `{"session_id": "c", "turns": [{"content": "x"}, {"output_tokens": 5}]}`, `s.jsonl:1: session "c": turns[1]: no content and no input tokens: give content or input_tokens`, ErrNoContent},
		{"unknown role", `{"session_id": "c", "turns": [{"role": "assistant", "content": "x"}]}`, `s.jsonl:1: session "c": turns[0].role: unknown role "assistant"; want "user"`, ErrUnknownRole},
		{"undeclared tool", `{"session_id": "c", "tools": ["a"], "turns": [{"content": "x", "tool_calls": [{"name": "b"}]}]}`, `s.jsonl:1: session "c": turns[0].tool_calls[0].name: "b": tool not declared in the session's tools (a)`, ErrUndeclaredTool},
		{"negative tokens", `{"session_id": "c", "turns": [{"input_tokens": -5}]}`, `s.jsonl:1: session "c": turns[0].input_tokens: -5: must not be negative`, ErrNegative},
		{"negative think", `{"session_id": "c", "turns": [{"input_tokens": 5, "think_time_ms": -1}]}`, `s.jsonl:1: session "c": turns[0].think_time_ms: -1ms: must not be negative`, ErrNegative},
		{"negative latency", `{"session_id": "c", "turns": [{"input_tokens": 5, "tool_calls": [{"name": "t", "latency_ms": -2}]}]}`, `turns[0].tool_calls[0].latency_ms: -2ms: must not be negative`, ErrNegative},
		{"negative arrival", `{"session_id": "c", "arrival_ms": -3, "turns": [{"input_tokens": 5}]}`, `s.jsonl:1: session "c": arrival_ms: -3ms: must not be negative`, ErrNegative},
		{"huge think", `{"session_id": "c", "turns": [{"input_tokens": 5, "think_time_ms": 1e300}]}`, `turns[0].think_time_ms: 1e+300 is out of range`, nil},
		{"duplicate id", ok + "\n" + ok, `s.jsonl:3: session "a": session_id: duplicate id (also on line 1)`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSessionsJSONL(strings.NewReader(tt.in), "s.jsonl", SessionJSONLConfig{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadSessionsJSONL(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("errors.Is(%v, %v) = false; want true", err, tt.target)
			}
		})
	}
}

func FuzzSessionJSONL(f *testing.F) {
	f.Add(`{"session_id": "a", "system": "be brief", "tools": ["t"], "turns": [{"role": "user", "content": "hi", "output_tokens": 3, "tool_calls": [{"name": "t", "latency_ms": 5, "result_tokens": 2}]}, {"input_tokens": 9, "think_time_ms": 100}]}`)
	f.Add(`{"system_tokens": 5, "arrival_ms": 0.5, "turns": [{"input_tokens": 1}]}` + "\n" + `{"turns": [{"content": "x", "reply": "y"}]}`)
	f.Add(`{"turns": [{"input_tokens": -1}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadSessionsJSONL(strings.NewReader(in), "f.jsonl", SessionJSONLConfig{NumSessions: 50})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonl") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for i := range d.Len() {
			if err := d.Session(i).Validate(); err != nil {
				t.Fatalf("accepted session %d does not validate: %v", i, err)
			}
		}
	})
}
