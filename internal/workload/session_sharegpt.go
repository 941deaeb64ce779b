package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/tokenize"
)

// ShareGPTSessionsConfig configures the multi-turn ShareGPT loader.
type ShareGPTSessionsConfig struct {
	// NumSessions caps the number of sessions; 0 means every usable
	// conversation. Conversations are drawn in a seeded shuffle.
	NumSessions int
	// Seed makes the shuffle reproducible.
	Seed int64
	// NoShuffle keeps the file's order.
	NoShuffle bool
	// Tokenizer counts messages and replies; nil means tokenize.Approx.
	Tokenizer tokenize.Tokenizer
}

// shareGPTRoles maps ShareGPT "from" (and OpenAI "role") values to the
// roles of a session: u user, a assistant, s system.
var shareGPTRoles = map[string]byte{
	"human": 'u', "user": 'u',
	"gpt": 'a', "assistant": 'a', "chatgpt": 'a', "bing": 'a', "bard": 'a', "model": 'a',
	"system": 's',
}

type shareGPTSessionItem struct {
	ID            json.RawMessage   `json:"id"`
	Conversations []shareGPTMessage `json:"conversations"`
	Messages      []shareGPTMessage `json:"messages"`
}

// shareGPTMessage takes ShareGPT's from/value and OpenAI's role/content.
type shareGPTMessage struct {
	From    string `json:"from"`
	Value   string `json:"value"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LoadShareGPTSessions reads a ShareGPT JSON file (an array of {"id": ...,
// "conversations": [{"from": "human"|"gpt"|"system", "value": ...}, ...]};
// "messages" of {"role", "content"} also work) as multi-turn sessions:
//
//   - each human message (or run of consecutive ones, joined by a blank
//     line) is a user turn; the gpt messages after it are that turn's
//     RecordedReply, and their length in tokens its OutputTokens;
//   - leading system messages are the session's system prompt;
//   - a reply before the first human message is dropped (no turn asked for
//     it); a final human message without a reply is a turn whose reply
//     length is unknown (OutputTokens 0);
//   - "user"/"assistant" and the assistants "chatgpt", "bing", "bard" and
//     "model" are understood.
//
// Conversations with a system message after the first turn, an unknown
// role, no human message, or a turn that does not validate are left out
// and counted in Skipped by reason. Session IDs are the items' "id" (made
// unique with "#N", N the item's index, where missing or repeated).
// Malformed JSON is an error naming file:line.
func LoadShareGPTSessions(path string, cfg ShareGPTSessionsConfig) (*Sessions, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadShareGPTSessions(f, path, cfg)
}

// ReadShareGPTSessions is LoadShareGPTSessions over a reader; file names it
// in errors and in the set's name ("sharegpt-sessions:" and its base name).
func ReadShareGPTSessions(r io.Reader, file string, cfg ShareGPTSessionsConfig) (*Sessions, error) {
	tok := cfg.Tokenizer
	if tok == nil {
		tok = tokenize.Approx{}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file; want a JSON array of ShareGPT conversations", file)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntaxErr := func(err error) error {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		return fmt.Errorf("%s:%d: %w", file, lineAt(data, off), jsonError(err))
	}
	if t, err := dec.Token(); err != nil {
		return nil, syntaxErr(err)
	} else if t != json.Delim('[') {
		return nil, fmt.Errorf("%s:%d: want a JSON array of ShareGPT conversations, got %s", file, lineAt(data, dec.InputOffset()), jsonTokenKind(t))
	}
	type item struct {
		s    Session
		line int
	}
	var valid []item
	skipped := map[string]int{}
	seen := map[string]bool{}
	for k := 0; dec.More(); k++ {
		line := lineAt(data, valueStart(data, dec.InputOffset()))
		var it shareGPTSessionItem
		if err := dec.Decode(&it); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("%s:%d: conversation %d: field %q: want %s, got JSON %s", file, lineAt(data, te.Offset), k, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
			}
			return nil, syntaxErr(err)
		}
		s, reason := shareGPTSession(it, tok)
		s.ID = shareGPTID(it.ID, k, seen)
		if reason == "" {
			if err := s.Validate(); err != nil {
				var se *SessionError
				errors.As(err, &se)
				reason = se.Err.Error()
				if se.Turn >= 0 {
					reason = "a turn with " + reason
				}
			}
		}
		if reason != "" {
			skipped[reason]++
			continue
		}
		valid = append(valid, item{s, line})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:%d: data after the JSON array", file, lineAt(data, dec.InputOffset()))
	}
	if len(valid) == 0 {
		return nil, fmt.Errorf("%s: no usable conversations (%d skipped: %s)", file, skippedTotal(skipped), describeSkipped(skipped))
	}
	d := &Sessions{name: "sharegpt-sessions:" + filepath.Base(file), skipped: skipped}
	for _, k := range sampleOrder(len(valid), cfg.NumSessions, cfg.Seed, Sampling{NoShuffle: cfg.NoShuffle, NoOversample: true}) {
		d.sessions = append(d.sessions, valid[k].s)
		d.lines = append(d.lines, valid[k].line)
	}
	return d, nil
}

// shareGPTSession builds the session of one conversation, or says why it
// is left out.
func shareGPTSession(it shareGPTSessionItem, tok tokenize.Tokenizer) (Session, string) {
	msgs := it.Conversations
	if msgs == nil {
		msgs = it.Messages
	}
	var s Session
	var system []string
	var user, reply []string // of the turn being built
	flush := func() {
		if user == nil {
			return
		}
		t := Turn{Role: RoleUser, Content: strings.Join(user, "\n\n"), RecordedReply: strings.Join(reply, "\n\n")}
		t.InputTokens = tokenize.CountText(tok, t.Content)
		if t.RecordedReply != "" {
			t.OutputTokens = tokenize.CountText(tok, t.RecordedReply)
		}
		s.Turns = append(s.Turns, t)
		user, reply = nil, nil
	}
	for _, m := range msgs {
		from, text := m.From, m.Value
		if from == "" {
			from, text = m.Role, m.Content
		}
		role, ok := shareGPTRoles[strings.ToLower(from)]
		if !ok {
			return Session{}, fmt.Sprintf("unknown role %q", from)
		}
		switch role {
		case 's':
			if user != nil || len(s.Turns) > 0 {
				return Session{}, "a system message after the first turn"
			}
			if text != "" {
				system = append(system, text)
			}
		case 'u':
			if reply != nil {
				flush()
			}
			if user == nil {
				user = []string{}
			}
			if text != "" {
				user = append(user, text)
			}
		case 'a':
			if user == nil {
				continue // a reply no turn asked for
			}
			if text != "" {
				reply = append(reply, text)
			} else if reply == nil {
				reply = []string{}
			}
		}
	}
	flush()
	if len(s.Turns) == 0 {
		return Session{}, "no human message"
	}
	s.System = strings.Join(system, "\n\n")
	s.SystemTokens = tokenize.CountText(tok, s.System)
	return s, ""
}

// shareGPTID returns a unique session ID for item k.
func shareGPTID(raw json.RawMessage, k int, seen map[string]bool) string {
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			id = n.String()
		}
	}
	if id == "" || seen[id] {
		id += "#" + strconv.Itoa(k)
	}
	for seen[id] { // an "id" that itself looks like "x#k"
		id += "#"
	}
	seen[id] = true
	return id
}

// valueStart returns the offset of the first byte of the next JSON value
// at or after off (past whitespace and a comma).
func valueStart(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

func jsonTokenKind(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return string(v)
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", t)
}

func skippedTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func describeSkipped(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
