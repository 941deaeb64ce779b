package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/tokenize"
)

// A Session is one conversation or agent loop: turns sent in order, each
// after the previous turn's reply (and its tool rounds) and the user's think
// time. It is protocol-neutral: a driver turns it into chat requests whose
// history grows turn by turn (system prompt, then each turn's user message
// and the assistant's reply), and the simulator into prompts of the same
// lengths.
//
// A Session is a value; the slices it holds belong to whoever got it from
// [SessionSet.Session] (a fresh copy each call).
type Session struct {
	// ID names the session in records (Record.session_id); unique within
	// its set.
	ID string
	// System is the shared system prompt's text; "" when there is none or
	// when only its length is known (see SystemTokens).
	System string
	// SystemTokens is the system prompt's length in tokens (0 = none). With
	// System set it is System's length as the loader counted it; with
	// System empty it is the length of a prompt to synthesize with
	// [Session.SystemText], whose text depends on the run's seed and the
	// length alone, so sessions with equal SystemTokens share a prefix.
	SystemTokens int
	// Tools declares the tools the session may call. When it is non-empty,
	// every ToolCall must name one of them; nil means undeclared (any name).
	Tools []string
	// Turns are the user turns, in order; at least one.
	Turns []Turn
	// Arrival is when the session starts (its first turn is sent), as an
	// offset from the run's start, for sets recovered from traces;
	// meaningful only when HasArrival. Other sets leave the schedule to the
	// arrival process.
	Arrival time.Duration
	// HasArrival reports whether Arrival is set.
	HasArrival bool
	// ThinkFromSend says every ThinkTime is counted from the previous turn's
	// send rather than from the end of its reply: traces record only
	// arrivals. A driver then sends turn k at the later of the previous
	// reply's end and the previous send plus Turns[k].ThinkTime, which
	// replays the recorded arrivals whenever the target keeps up.
	ThinkFromSend bool
}

// RoleUser is the role of a turn's message: the user's (also written "").
const RoleUser = "user"

// A Turn is one user message and the assistant reply that follows it,
// including the reply's tool rounds.
type Turn struct {
	// Role is the sender of the message: RoleUser or "" (the same).
	Role string
	// Content is the user's message text; "" when only its length is known
	// (InputTokens).
	Content string
	// InputTokens is the message's length in tokens: with Content set, its
	// length as the loader counted it (for the simulator, which does not
	// tokenize); with Content empty, the length of text to synthesize. It
	// counts this message only, not the history before it.
	InputTokens int
	// OutputTokens is the recorded length in tokens of the assistant's
	// final reply to this turn (0 = unknown: left to the server). A
	// simulator generates exactly this many; a driver may ask for it as
	// max_tokens.
	OutputTokens int
	// RecordedReply is the reply's text when the source has it (ShareGPT),
	// so a replay can put the recorded history into later turns' prompts
	// instead of what the target answered; "" when unknown.
	RecordedReply string
	// ThinkTime is the user's pause before sending this turn: after the
	// previous turn's reply ends (or after its send, see
	// Session.ThinkFromSend). For the first turn it is a delay after the
	// session's start, usually 0.
	ThinkTime time.Duration
	// ToolCalls are the tool calls the assistant is expected to make in this
	// turn, in order, before its final reply: each is one extra model round
	// (call, tool latency, result, next request). nil means none.
	ToolCalls []ToolCall
}

// A ToolCall is one expected tool call within a turn: the model asks for the
// tool, the tool takes Latency to answer, and its result joins the context
// of the next request of the turn.
type ToolCall struct {
	// Name is the tool's name; one of Session.Tools when those are declared.
	Name string
	// Latency is how long the tool takes to answer (0 = instant).
	Latency time.Duration
	// ResultTokens is the length in tokens of the tool's result added to the
	// context (0 = an empty result).
	ResultTokens int
	// Parallel says the model makes this call together with the one before
	// it, in the same answer: the calls of one answer run concurrently and
	// their results go back in one request. The first call of a turn is
	// never parallel.
	Parallel bool
}

// ToolRounds groups a turn's tool calls into rounds: the calls of one model
// answer (a call and the Parallel ones after it). Each round is one extra
// request of the turn.
func (t Turn) ToolRounds() [][]ToolCall {
	var rounds [][]ToolCall
	for i, c := range t.ToolCalls {
		if i == 0 || !c.Parallel {
			rounds = append(rounds, nil)
		}
		rounds[len(rounds)-1] = append(rounds[len(rounds)-1], c)
	}
	return rounds
}

// SessionSet is an indexed, deterministic source of sessions.
type SessionSet interface {
	// Name identifies the set, e.g. "conversations" or
	// "sharegpt-sessions:sg.json".
	Name() string
	// Len is the number of distinct sessions; callers cycle (i % Len) for
	// longer runs.
	Len() int
	// Session returns session i, deterministic for the set's seed and i,
	// whatever order it is called in; the result is the caller's to keep.
	Session(i int) Session
}

// Errors a [SessionError] wraps, for callers that branch on the kind of
// fault (errors.Is).
var (
	// ErrNoContent: a turn has neither Content nor a positive InputTokens.
	ErrNoContent = errors.New("no content and no input tokens")
	// ErrUnknownRole: a turn's role is not "user".
	ErrUnknownRole = errors.New("unknown role")
	// ErrUndeclaredTool: a tool call names a tool the session does not
	// declare.
	ErrUndeclaredTool = errors.New("tool not declared in the session's tools")
	// ErrNegative: a length or a time is negative.
	ErrNegative = errors.New("must not be negative")
)

// SessionError is a session that does not validate, or a bad field of one in
// a file. The message reads like
//
//	chats.jsonl:3: session "a": turns[1].input_tokens: -5: must not be negative
type SessionError struct {
	// File and Line (1-based) locate the session in its source; "" and 0
	// when it was not parsed from a file.
	File string
	Line int
	// Session is the session's ID ("" when not known yet).
	Session string
	// Turn is the index into Turns of the turn at fault; -1 when the fault
	// is the session's own.
	Turn int
	// Field names the field at fault in the JSONL session format's words
	// ("input_tokens", "tool_calls[0].name"), relative to the turn when
	// Turn >= 0; "" when the fault is the whole turn or session.
	Field string
	// Err says what is wrong; it may wrap ErrNoContent, ErrUnknownRole,
	// ErrUndeclaredTool or ErrNegative.
	Err error
}

// Error gives the place (file:line, session, turns[i].field) and the fault.
func (e *SessionError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Session != "" {
		fmt.Fprintf(&b, "session %q: ", e.Session)
	}
	var path string
	if e.Turn >= 0 {
		path = fmt.Sprintf("turns[%d]", e.Turn)
	}
	if e.Field != "" {
		if path != "" {
			path += "."
		}
		path += e.Field
	}
	if path != "" {
		b.WriteString(path + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns Err, so that errors.Is finds the sentinel errors.
func (e *SessionError) Unwrap() error { return e.Err }

// sessionErrorAt sets the error's place in a file, when err is a *SessionError.
func sessionErrorAt(err error, file string, line int) error {
	var se *SessionError
	if errors.As(err, &se) {
		se.File, se.Line = file, line
	}
	return err
}

// Validate reports the first fault of s as a *SessionError: no ID, no turns,
// a turn with neither content nor InputTokens, a role other than user, a
// tool call naming an undeclared tool (when Tools are declared), a negative
// or absurd length or time.
func (s Session) Validate() error {
	bad := func(turn int, field string, err error) error {
		return &SessionError{Session: s.ID, Turn: turn, Field: field, Err: err}
	}
	negative := func(v any) error { return fmt.Errorf("%v: %w", v, ErrNegative) }
	switch {
	case s.ID == "":
		return bad(-1, "session_id", errors.New("empty; every session needs an id"))
	case s.SystemTokens < 0:
		return bad(-1, "system_tokens", negative(s.SystemTokens))
	case s.SystemTokens > maxLen:
		return bad(-1, "system_tokens", fmt.Errorf("%d is too large for a token count", s.SystemTokens))
	case s.Arrival < 0:
		return bad(-1, "arrival_ms", negative(s.Arrival))
	case len(s.Turns) == 0:
		return bad(-1, "turns", errors.New("no turns; want at least one"))
	}
	for k, name := range s.Tools {
		if name == "" {
			return bad(-1, fmt.Sprintf("tools[%d]", k), errors.New("empty tool name"))
		}
		if slices.Index(s.Tools, name) < k {
			return bad(-1, fmt.Sprintf("tools[%d]", k), fmt.Errorf("tool %q declared twice", name))
		}
	}
	for i, t := range s.Turns {
		if t.Role != "" && t.Role != RoleUser {
			return bad(i, "role", fmt.Errorf("%w %q; want %q", ErrUnknownRole, t.Role, RoleUser))
		}
		for _, f := range []struct {
			field string
			n     int
		}{{"input_tokens", t.InputTokens}, {"output_tokens", t.OutputTokens}} {
			if f.n < 0 {
				return bad(i, f.field, negative(f.n))
			}
			if f.n > maxLen {
				return bad(i, f.field, fmt.Errorf("%d is too large for a token count", f.n))
			}
		}
		if t.Content == "" && t.InputTokens == 0 {
			return bad(i, "", fmt.Errorf("%w: give content or input_tokens", ErrNoContent))
		}
		if t.ThinkTime < 0 {
			return bad(i, "think_time_ms", negative(t.ThinkTime))
		}
		for j, c := range t.ToolCalls {
			field := fmt.Sprintf("tool_calls[%d]", j)
			switch {
			case c.Name == "":
				return bad(i, field+".name", errors.New("empty tool name"))
			case len(s.Tools) > 0 && !slices.Contains(s.Tools, c.Name):
				return bad(i, field+".name", fmt.Errorf("%q: %w (%s)", c.Name, ErrUndeclaredTool, strings.Join(s.Tools, ", ")))
			case c.Latency < 0:
				return bad(i, field+".latency_ms", negative(c.Latency))
			case c.ResultTokens < 0:
				return bad(i, field+".result_tokens", negative(c.ResultTokens))
			case c.ResultTokens > maxLen:
				return bad(i, field+".result_tokens", fmt.Errorf("%d is too large for a token count", c.ResultTokens))
			}
		}
	}
	return nil
}

// clone returns s with its own copies of the slices, so that a caller's
// edits do not reach the set.
func (s Session) clone() Session {
	s.Tools = slices.Clone(s.Tools)
	s.Turns = slices.Clone(s.Turns)
	for i := range s.Turns {
		s.Turns[i].ToolCalls = slices.Clone(s.Turns[i].ToolCalls)
	}
	return s
}

// sessionSystemKey is the segment key of synthesized system prompts.
var sessionSystemKey = mix(0x73797374656d, streamPrefix) // "system"

// SystemText returns the session's system prompt: System when set, else a
// synthesized text of SystemTokens tokens ("" when 0) that depends on seed
// and the length alone. Synthesized prompts of different lengths share their
// leading text (exactly with tokenize.Approx, whose text is drawn word by
// word), as prefix caches see a common system prompt. A nil synth
// means tokenize.Approx.
func (s Session) SystemText(seed int64, synth *tokenize.Synthesizer) (string, error) {
	if s.System != "" || s.SystemTokens <= 0 {
		return s.System, nil
	}
	t, err := newTexter(seed, synth)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	t.appendSegment(&b, sessionSystemKey, t.synth.Calibration().WrittenSpan(s.SystemTokens))
	return b.String(), nil
}

// Sessions is a SessionSet held in memory: what the file loaders return.
// It is safe for concurrent use.
type Sessions struct {
	name     string
	sessions []Session
	lines    []int          // source line of each session; nil when built in code
	skipped  map[string]int // reason → sessions the loader left out
}

var _ SessionSet = (*Sessions)(nil)

// NewSessions returns a set of the given sessions (the set keeps copies),
// after validating each; the error is the first fault's *SessionError.
func NewSessions(name string, ss []Session) (*Sessions, error) {
	d := &Sessions{name: name}
	seen := make(map[string]int, len(ss))
	for i, s := range ss {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if k, dup := seen[s.ID]; dup {
			return nil, &SessionError{Session: s.ID, Turn: -1, Field: "session_id", Err: fmt.Errorf("duplicate id (also session %d)", k)}
		}
		seen[s.ID] = i
		d.sessions = append(d.sessions, s.clone())
	}
	return d, nil
}

// Name returns the set's name.
func (d *Sessions) Name() string { return d.name }

// Len returns the number of sessions.
func (d *Sessions) Len() int { return len(d.sessions) }

// Session returns a copy of session i.
func (d *Sessions) Session(i int) Session { return d.sessions[i].clone() }

// Line returns the 1-based line of the source file where session i begins
// (its first request, for a trace); 0 when it was not read from a file.
func (d *Sessions) Line(i int) int {
	if d.lines == nil {
		return 0
	}
	return d.lines[i]
}

// Skipped returns how many of the source's sessions the loader left out, by
// reason (nil when none were).
func (d *Sessions) Skipped() map[string]int {
	if len(d.skipped) == 0 {
		return nil
	}
	out := make(map[string]int, len(d.skipped))
	for k, v := range d.skipped {
		out[k] = v
	}
	return out
}

// sessionMS converts milliseconds to a Duration; ok is false for values
// that are not finite or do not fit (beyond ~30 years).
func sessionMS(ms float64) (time.Duration, bool) {
	if math.IsNaN(ms) || math.Abs(ms) > 1e12 {
		return 0, false
	}
	return time.Duration(math.Round(ms * 1e6)), true
}
