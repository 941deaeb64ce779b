package workload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/tokenize"
	"github.com/google/go-cmp/cmp"
)

// validSession is a session every check accepts; cases break one thing.
func validSession() Session {
	return Session{
		ID: "s", SystemTokens: 8, Tools: []string{"search"},
		Turns: []Turn{
			{Content: "hello there", InputTokens: 2, OutputTokens: 5},
			{Role: RoleUser, InputTokens: 30, ThinkTime: time.Second, ToolCalls: []ToolCall{{Name: "search", Latency: time.Millisecond, ResultTokens: 9}}},
		},
	}
}

func TestSessionValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Session)
		want   string // "" = valid
		target error
	}{
		{"valid", func(*Session) {}, "", nil},
		{"undeclared tools accept any name", func(s *Session) { s.Tools = nil; s.Turns[1].ToolCalls[0].Name = "x" }, "", nil},
		{"no id", func(s *Session) { s.ID = "" }, `session_id: empty; every session needs an id`, nil},
		{"no turns", func(s *Session) { s.Turns = nil }, `session "s": turns: no turns; want at least one`, nil},
		{"negative system", func(s *Session) { s.SystemTokens = -1 }, `session "s": system_tokens: -1: must not be negative`, ErrNegative},
		{"negative arrival", func(s *Session) { s.Arrival = -time.Second }, `session "s": arrival_ms: -1s: must not be negative`, ErrNegative},
		{"empty tool name", func(s *Session) { s.Tools = []string{""} }, `session "s": tools[0]: empty tool name`, nil},
		{"tool twice", func(s *Session) { s.Tools = []string{"a", "a"} }, `session "s": tools[1]: tool "a" declared twice`, nil},
		{"no content", func(s *Session) { s.Turns[1].InputTokens = 0 }, `session "s": turns[1]: no content and no input tokens: give content or input_tokens`, ErrNoContent},
		{"unknown role", func(s *Session) { s.Turns[0].Role = "assistant" }, `session "s": turns[0].role: unknown role "assistant"; want "user"`, ErrUnknownRole},
		{"negative input", func(s *Session) { s.Turns[1].InputTokens = -5 }, `session "s": turns[1].input_tokens: -5: must not be negative`, ErrNegative},
		{"negative output", func(s *Session) { s.Turns[0].OutputTokens = -1 }, `session "s": turns[0].output_tokens: -1: must not be negative`, ErrNegative},
		{"huge input", func(s *Session) { s.Turns[0].InputTokens = maxLen + 1 }, `turns[0].input_tokens: 1073741825 is too large for a token count`, nil},
		{"negative think", func(s *Session) { s.Turns[1].ThinkTime = -time.Millisecond }, `session "s": turns[1].think_time_ms: -1ms: must not be negative`, ErrNegative},
		{"undeclared tool", func(s *Session) { s.Turns[1].ToolCalls[0].Name = "fetch" }, `session "s": turns[1].tool_calls[0].name: "fetch": tool not declared in the session's tools (search)`, ErrUndeclaredTool},
		{"empty call name", func(s *Session) { s.Turns[1].ToolCalls[0].Name = "" }, `turns[1].tool_calls[0].name: empty tool name`, nil},
		{"negative latency", func(s *Session) { s.Turns[1].ToolCalls[0].Latency = -1 }, `turns[1].tool_calls[0].latency_ms: -1ns: must not be negative`, ErrNegative},
		{"negative result", func(s *Session) { s.Turns[1].ToolCalls[0].ResultTokens = -2 }, `turns[1].tool_calls[0].result_tokens: -2: must not be negative`, ErrNegative},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSession()
			tt.edit(&s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v; want nil", err)
				}
				return
			}
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v; want it to end with %q", err, tt.want)
			}
			var se *SessionError
			if !errors.As(err, &se) {
				t.Fatalf("Validate() = %T; want *SessionError", err)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("errors.Is(%v, %v) = false; want true", err, tt.target)
			}
		})
	}
}

func TestSessionErrorPlace(t *testing.T) {
	e := &SessionError{File: "a.jsonl", Line: 3, Session: "x", Turn: 1, Field: "input_tokens", Err: ErrNegative}
	if got, want := e.Error(), `a.jsonl:3: session "x": turns[1].input_tokens: must not be negative`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	e = &SessionError{File: "a.jsonl", Line: 4, Turn: -1, Err: errors.New("bad")}
	if got, want := e.Error(), `a.jsonl:4: bad`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func TestNewSessions(t *testing.T) {
	s := validSession()
	d, err := NewSessions("mine", []Session{s})
	if err != nil {
		t.Fatal(err)
	}
	// The set keeps copies: edits on either side do not reach the other.
	s.Turns[1].ToolCalls[0].Name = "changed"
	got := d.Session(0)
	got.Turns[0].Content = "changed"
	if diff := cmp.Diff(validSession(), d.Session(0)); diff != "" {
		t.Errorf("Session(0) after edits (-want +got):\n%s", diff)
	}
	if d.Name() != "mine" || d.Len() != 1 || d.Line(0) != 0 || d.Skipped() != nil {
		t.Errorf("Name, Len, Line(0), Skipped = %q, %d, %d, %v; want mine, 1, 0, nil", d.Name(), d.Len(), d.Line(0), d.Skipped())
	}
	if _, err := NewSessions("dup", []Session{validSession(), validSession()}); err == nil || !strings.Contains(err.Error(), "duplicate id") {
		t.Errorf("NewSessions(two with one id) error = %v; want a duplicate id", err)
	}
	bad := validSession()
	bad.Turns = nil
	if _, err := NewSessions("bad", []Session{bad}); err == nil {
		t.Error("NewSessions(a session without turns) = nil error; want one")
	}
}

func TestSessionSystemText(t *testing.T) {
	short, err := Session{SystemTokens: 40}.SystemText(7, nil)
	if err != nil {
		t.Fatal(err)
	}
	long, _ := Session{SystemTokens: 100}.SystemText(7, nil)
	other, _ := Session{SystemTokens: 40}.SystemText(8, nil)
	if n := (tokenize.Approx{}).Count(short); n != 40 {
		t.Errorf("Count(SystemText(40 tokens)) = %d; want 40", n)
	}
	if !strings.HasPrefix(long, short) {
		t.Errorf("SystemText(100 tokens) does not start with SystemText(40 tokens): %q vs %q", long, short)
	}
	if other == short {
		t.Error("SystemText with seeds 7 and 8 are equal; want the seed to change the text")
	}
	if got, _ := (Session{System: "given", SystemTokens: 40}).SystemText(7, nil); got != "given" {
		t.Errorf("SystemText with System set = %q; want %q", got, "given")
	}
	if got, _ := (Session{}).SystemText(7, nil); got != "" {
		t.Errorf("SystemText without a system prompt = %q; want empty", got)
	}
}
