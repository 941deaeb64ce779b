package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/tokenize"
)

// SessionJSONLConfig configures ReadSessionsJSONL.
type SessionJSONLConfig struct {
	// NumSessions caps the number of sessions, taken in file order; 0
	// means all.
	NumSessions int
	// Tokenizer counts the text of system prompts and turns that come
	// without a token count; nil means tokenize.Approx.
	Tokenizer tokenize.Tokenizer
}

// jsonlSession is one line of the session JSONL format. Turns and tool
// calls are decoded one by one so that errors can say which.
type jsonlSession struct {
	SessionID    *string           `json:"session_id"`
	System       string            `json:"system"`
	SystemTokens *int              `json:"system_tokens"`
	ArrivalMS    *float64          `json:"arrival_ms"`
	Tools        []string          `json:"tools"`
	Turns        []json.RawMessage `json:"turns"`
}

type jsonlTurn struct {
	Role         string            `json:"role"`
	Content      *string           `json:"content"`
	InputTokens  *int              `json:"input_tokens"`
	OutputTokens *int              `json:"output_tokens"`
	Reply        string            `json:"reply"`
	ThinkTimeMS  *float64          `json:"think_time_ms"`
	ToolCalls    []json.RawMessage `json:"tool_calls"`
}

type jsonlToolCall struct {
	Name         string   `json:"name"`
	LatencyMS    *float64 `json:"latency_ms"`
	ResultTokens *int     `json:"result_tokens"`
	Parallel     bool     `json:"parallel"`
}

// LoadSessionsJSONL reads sessions from a JSON Lines file, one session per
// line (blank lines are skipped):
//
//	{"session_id": "a", "system": "You are terse.", "tools": ["search"],
//	 "turns": [{"role": "user", "content": "Hi", "output_tokens": 12},
//	           {"input_tokens": 300, "output_tokens": 80, "think_time_ms": 4000,
//	            "tool_calls": [{"name": "search", "latency_ms": 250, "result_tokens": 400}]}]}
//
// Session fields: session_id (default "line-N"; unique), system (text),
// system_tokens (its length, or the length of a system prompt to
// synthesize), arrival_ms (the session's start from the run's start),
// tools (declared tool names: tool calls must name one), turns (at least
// one). Turn fields: role ("user", the default), content or input_tokens
// (or both: input_tokens is then trusted as the content's length, which is
// otherwise counted with the configured tokenizer), output_tokens (the
// recorded reply's length), reply (its text), think_time_ms, tool_calls
// ({name, latency_ms, result_tokens, parallel: made in the same answer as
// the call before it}). Times are milliseconds, lengths
// tokens.
//
// Unknown fields are an error, so that a misspelt field cannot silently
// become a default. Errors name the file, line and field.
func LoadSessionsJSONL(path string, cfg SessionJSONLConfig) (*Sessions, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSessionsJSONL(f, path, cfg)
}

// ReadSessionsJSONL is LoadSessionsJSONL over a reader; file names it in
// errors and in the set's name ("sessions:" and its base name).
func ReadSessionsJSONL(r io.Reader, file string, cfg SessionJSONLConfig) (*Sessions, error) {
	tok := cfg.Tokenizer
	if tok == nil {
		tok = tokenize.Approx{}
	}
	d := &Sessions{name: "sessions:" + filepath.Base(file)}
	seen := map[string]int{}
	errFull := errors.New("enough sessions")
	err := eachLine(r, file, func(line int, b []byte) error {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return nil
		}
		if cfg.NumSessions > 0 && len(d.sessions) == cfg.NumSessions {
			return errFull
		}
		s, err := parseSessionLine(b, line, tok)
		if err != nil {
			return sessionErrorAt(err, file, line)
		}
		if err := s.Validate(); err != nil {
			return sessionErrorAt(err, file, line)
		}
		if prev, dup := seen[s.ID]; dup {
			return &SessionError{File: file, Line: line, Session: s.ID, Turn: -1, Field: "session_id", Err: fmt.Errorf("duplicate id (also on line %d)", prev)}
		}
		seen[s.ID] = line
		d.sessions = append(d.sessions, s)
		d.lines = append(d.lines, line)
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		var se *SessionError
		if errors.As(err, &se) {
			return nil, err
		}
		if !strings.HasPrefix(err.Error(), file) {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return nil, err
	}
	if len(d.sessions) == 0 {
		return nil, fmt.Errorf("%s: no sessions in file", file)
	}
	return d, nil
}

// parseSessionLine decodes one line; its errors are *SessionError without
// the file's place.
func parseSessionLine(b []byte, line int, tok tokenize.Tokenizer) (Session, error) {
	var js jsonlSession
	s := Session{ID: "line-" + strconv.Itoa(line)}
	fail := func(turn int, field string, err error) (Session, error) {
		return Session{}, &SessionError{Session: s.ID, Turn: turn, Field: field, Err: err}
	}
	if field, err := decodeStrict(b, &js); err != nil {
		if js.SessionID != nil {
			s.ID = *js.SessionID
		}
		return fail(-1, field, err)
	}
	if js.SessionID != nil {
		s.ID = *js.SessionID
	}
	s.System, s.Tools = js.System, js.Tools
	switch {
	case js.SystemTokens != nil:
		s.SystemTokens = *js.SystemTokens
	case s.System != "":
		s.SystemTokens = tokenize.CountText(tok, s.System)
	}
	if js.ArrivalMS != nil {
		d, ok := sessionMS(*js.ArrivalMS)
		if !ok {
			return fail(-1, "arrival_ms", fmt.Errorf("%g is out of range", *js.ArrivalMS))
		}
		s.Arrival, s.HasArrival = d, true
	}
	if js.Turns == nil {
		return fail(-1, "turns", errors.New("missing; want at least one turn"))
	}
	for i, raw := range js.Turns {
		var jt jsonlTurn
		if field, err := decodeStrict(raw, &jt); err != nil {
			return fail(i, field, err)
		}
		t := Turn{Role: jt.Role, RecordedReply: jt.Reply}
		if jt.Content != nil {
			t.Content = *jt.Content
		}
		switch {
		case jt.InputTokens != nil:
			t.InputTokens = *jt.InputTokens
		case t.Content != "":
			t.InputTokens = tokenize.CountText(tok, t.Content)
		}
		switch {
		case jt.OutputTokens != nil:
			t.OutputTokens = *jt.OutputTokens
		case t.RecordedReply != "":
			t.OutputTokens = tokenize.CountText(tok, t.RecordedReply)
		}
		if jt.ThinkTimeMS != nil {
			d, ok := sessionMS(*jt.ThinkTimeMS)
			if !ok {
				return fail(i, "think_time_ms", fmt.Errorf("%g is out of range", *jt.ThinkTimeMS))
			}
			t.ThinkTime = d
		}
		for j, rawc := range jt.ToolCalls {
			var jc jsonlToolCall
			prefix := fmt.Sprintf("tool_calls[%d]", j)
			if field, err := decodeStrict(rawc, &jc); err != nil {
				return fail(i, joinField(prefix, field), err)
			}
			c := ToolCall{Name: jc.Name, Parallel: jc.Parallel && j > 0}
			if jc.LatencyMS != nil {
				d, ok := sessionMS(*jc.LatencyMS)
				if !ok {
					return fail(i, prefix+".latency_ms", fmt.Errorf("%g is out of range", *jc.LatencyMS))
				}
				c.Latency = d
			}
			if jc.ResultTokens != nil {
				c.ResultTokens = *jc.ResultTokens
			}
			t.ToolCalls = append(t.ToolCalls, c)
		}
		s.Turns = append(s.Turns, t)
	}
	return s, nil
}

func joinField(prefix, field string) string {
	if field == "" {
		return prefix
	}
	return prefix + "." + field
}

// decodeStrict decodes one JSON value into v, rejecting unknown fields and
// trailing data. On error it returns the field at fault ("" when none) and
// a message without encoding/json's prefixes.
func decodeStrict(b []byte, v any) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			return "", errors.New("invalid JSON: data after the value")
		}
		return "", nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field, fmt.Errorf("want %s, got JSON %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		name := strings.TrimPrefix(msg, "json: unknown field ")
		return "", fmt.Errorf("unknown field %s (see the session JSONL format; misspelt fields are not ignored)", name)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "", fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "", errors.New("invalid JSON: unexpected end")
	}
	return "", fmt.Errorf("invalid JSON: %w", err)
}

// jsonKind names a Go kind in JSON words.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "string":
		return "a string"
	case k == "slice":
		return "an array"
	case k == "struct", k == "map":
		return "an object"
	}
	return k
}
