package simserve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/tokenize"
)

// sseEvent is one event of a stream: its "event:" type and its data.
type sseEvent struct {
	Type string
	Data string
}

// readEvents reads a whole SSE body, checking that every event names its
// type on an event line and again as the data's "type", as Anthropic's and
// the Responses API's streams do, and that none is [DONE].
func readEvents(t *testing.T, body io.Reader) []sseEvent {
	t.Helper()
	rd := sse.NewReader(body, func() int64 { return 0 }, 0)
	var out []sseEvent
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading stream after %d events: %v", len(out), err)
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(ev.Data, &head); err != nil {
			t.Fatalf("event %d data %q: %v", len(out), ev.Data, err)
		}
		if string(ev.Type) != head.Type {
			t.Errorf("event %d: event line %q, data type %q; want the same", len(out), ev.Type, head.Type)
		}
		out = append(out, sseEvent{Type: string(ev.Type), Data: string(ev.Data)})
	}
}

// anthropicEvent is the part of a Messages stream event the tests read.
type anthropicEvent struct {
	Type    string `json:"type"`
	Index   *int   `json:"index"`
	Message *struct {
		ID    string         `json:"id"`
		Model string         `json:"model"`
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		Signature   string  `json:"signature"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthropicUsage struct {
	InputTokens   int `json:"input_tokens"`
	CacheCreation int `json:"cache_creation_input_tokens"`
	CacheRead     int `json:"cache_read_input_tokens"`
	OutputTokens  int `json:"output_tokens"`
}

// anthropicBlockOut is a block of a message as a client assembles it.
type anthropicBlockOut struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// anthropicMessageOut is a whole message: a non-streamed answer, or a
// streamed one assembled.
type anthropicMessageOut struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	Role       string              `json:"role"`
	Model      string              `json:"model"`
	Content    []anthropicBlockOut `json:"content"`
	StopReason string              `json:"stop_reason"`
	Usage      anthropicUsage      `json:"usage"`
}

// assembleMessage rebuilds the message a stream carries, as Anthropic's
// SDKs do, checking the protocol as it goes: message_start first, then a
// ping, blocks started, delta'd and stopped in index order, a thinking
// block signed before it stops, message_delta then message_stop last. It
// also returns the shape of the stream: the event types, with each delta's
// type and each block's, runs of equal entries collapsed to one with "+".
func assembleMessage(t *testing.T, evs []sseEvent) (anthropicMessageOut, string) {
	t.Helper()
	var m anthropicMessageOut
	var shape []string
	add := func(s string) {
		if n := len(shape); n > 0 && strings.TrimSuffix(shape[n-1], "+") == s {
			shape[n-1] = s + "+"
			return
		}
		shape = append(shape, s)
	}
	open := -1
	partial := map[int]string{}
	for i, raw := range evs {
		var e anthropicEvent
		if err := json.Unmarshal([]byte(raw.Data), &e); err != nil {
			t.Fatalf("event %d %s: %v", i, raw.Data, err)
		}
		switch e.Type {
		case "message_start":
			if i != 0 || e.Message == nil {
				t.Fatalf("message_start at event %d (message %v); want first, with a message", i, e.Message != nil)
			}
			m.ID, m.Model, m.Usage = e.Message.ID, e.Message.Model, e.Message.Usage
			add(e.Type)
		case "ping":
			add(e.Type)
		case "content_block_start":
			if open != -1 || e.Index == nil || *e.Index != len(m.Content) || e.ContentBlock == nil {
				t.Fatalf("event %d: content_block_start %s with block %d open; want the next index with nothing open", i, raw.Data, open)
			}
			open = *e.Index
			b := e.ContentBlock
			m.Content = append(m.Content, anthropicBlockOut{Type: b.Type, ID: b.ID, Name: b.Name})
			add(e.Type + ":" + b.Type)
		case "content_block_delta":
			if e.Index == nil || *e.Index != open || e.Delta == nil {
				t.Fatalf("event %d: delta %s for a block not open (open: %d)", i, raw.Data, open)
			}
			b := &m.Content[open]
			switch d := e.Delta; d.Type {
			case "text_delta":
				b.Text += d.Text
			case "thinking_delta":
				b.Thinking += d.Thinking
			case "signature_delta":
				b.Signature += d.Signature
			case "input_json_delta":
				partial[open] += d.PartialJSON
			default:
				t.Fatalf("event %d: delta type %q", i, d.Type)
			}
			if want := map[string]string{"text": "text_delta", "thinking": "thinking_delta|signature_delta", "tool_use": "input_json_delta"}[b.Type]; !strings.Contains(want, e.Delta.Type) {
				t.Errorf("event %d: a %s delta in a %s block", i, e.Delta.Type, b.Type)
			}
			add(e.Delta.Type)
		case "content_block_stop":
			if e.Index == nil || *e.Index != open {
				t.Fatalf("event %d: stop %s with block %d open", i, raw.Data, open)
			}
			b := &m.Content[open]
			if b.Type == "thinking" && b.Signature == "" {
				t.Errorf("thinking block %d stopped unsigned", open)
			}
			if b.Type == "tool_use" {
				b.Input = json.RawMessage(partial[open])
				if partial[open] == "" {
					b.Input = json.RawMessage("{}")
				}
			}
			open = -1
			add(e.Type)
		case "message_delta":
			if open != -1 || e.Delta == nil || e.Delta.StopReason == nil || e.Usage == nil {
				t.Fatalf("event %d: message_delta %s (block %d open)", i, raw.Data, open)
			}
			m.StopReason, m.Usage = *e.Delta.StopReason, *e.Usage
			add(e.Type)
		case "message_stop":
			if i != len(evs)-1 {
				t.Errorf("message_stop at event %d of %d; want last", i, len(evs))
			}
			add(e.Type)
		case "error":
			add(e.Type + ":" + e.Error.Type)
		default:
			t.Fatalf("event %d: unknown type %q", i, e.Type)
		}
	}
	return m, strings.Join(shape, " ")
}

// postMessages posts a Messages request (with the tool-calls header when
// calls is not "") and returns the status and body.
func postMessages(t *testing.T, url, body, calls string) (int, []byte) {
	t.Helper()
	resp := postHeader(t, url+"/v1/messages", body, calls)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// streamMessages posts a streamed Messages request and assembles it.
func streamMessages(t *testing.T, url, body, calls string) (anthropicMessageOut, string) {
	t.Helper()
	resp := postHeader(t, url+"/v1/messages", body, calls)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return assembleMessage(t, readEvents(t, resp.Body))
}

var (
	msgIDPattern     = regexp.MustCompile(`^msg_[0-9a-f]{24}$`)
	toolUseIDPattern = regexp.MustCompile(`^toolu_[0-9a-f]{16}$`)
)

// words returns n one-token words.
func words(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

func TestMessagesAnswer(t *testing.T) {
	var tok tokenize.Approx
	cfg := testConfig()
	cfg.ReasoningTokens = 4 // every answer thinks 4 hidden tokens first
	_, thinking := newTestServer(t, cfg, Options{ServedModelName: "sim"})
	_, plain := newTestServer(t, testConfig(), Options{ServedModelName: "sim"})
	const body = `{"model":"sim","max_tokens":10,"ignore_eos":true,"stream":%v,"system":"be brief","messages":[{"role":"user","content":"one two three four five"}]}`
	tests := []struct {
		name      string
		url       string
		thinking  int
		wantShape string
	}{
		{"thinking", thinking, 4, "message_start ping content_block_start:thinking thinking_delta+ signature_delta content_block_stop " +
			"content_block_start:text text_delta+ content_block_stop message_delta message_stop"},
		{"no thinking", plain, 0, "message_start ping content_block_start:text text_delta+ content_block_stop message_delta message_stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streamed, shape := streamMessages(t, tt.url, fmt.Sprintf(body, true), "")
			if shape != tt.wantShape {
				t.Errorf("stream shape:\n got %s\nwant %s", shape, tt.wantShape)
			}
			code, b := postMessages(t, tt.url, fmt.Sprintf(body, false), "")
			if code != 200 {
				t.Fatalf("non-streamed: status %d: %s", code, b)
			}
			var whole anthropicMessageOut
			if err := json.Unmarshal(b, &whole); err != nil {
				t.Fatal(err)
			}
			if whole.Type != "message" || whole.Role != "assistant" {
				t.Errorf("non-streamed type %q role %q; want message, assistant", whole.Type, whole.Role)
			}
			for _, m := range []anthropicMessageOut{streamed, whole} {
				if !msgIDPattern.MatchString(m.ID) || m.Model != "sim" || m.StopReason != "max_tokens" {
					t.Errorf("id %q model %q stop_reason %q; want msg_…, sim, max_tokens", m.ID, m.Model, m.StopReason)
				}
				// The system prompt counts with the message: 2 + 5 tokens.
				if m.Usage.InputTokens != 7 || m.Usage.OutputTokens != 10 || m.Usage.CacheRead != 0 {
					t.Errorf("usage %+v; want 7 input, 10 output, 0 cache read", m.Usage)
				}
				var kinds []string
				for _, b := range m.Content {
					kinds = append(kinds, b.Type)
					switch b.Type {
					case "thinking":
						if n := tok.Count(b.Thinking); n != tt.thinking {
							t.Errorf("thinking %q is %d tokens; want %d", b.Thinking, n, tt.thinking)
						}
					case "text":
						if n := tok.Count(b.Text); n != 10-tt.thinking {
							t.Errorf("text %q is %d tokens; want %d", b.Text, n, 10-tt.thinking)
						}
					}
				}
				want := []string{"text"}
				if tt.thinking > 0 {
					want = []string{"thinking", "text"}
				}
				if !cmp.Equal(kinds, want) {
					t.Errorf("content blocks %q; want %q", kinds, want)
				}
			}
		})
	}
}

// TestMessagesThinkingBudget checks that a thinking budget caps the
// engine's reasoning.
func TestMessagesThinkingBudget(t *testing.T) {
	var tok tokenize.Approx
	cfg := testConfig()
	cfg.ReasoningTokens = 6
	_, url := newTestServer(t, cfg, Options{})
	m, _ := streamMessages(t, url, `{"max_tokens":10,"ignore_eos":true,"stream":true,"thinking":{"type":"enabled","budget_tokens":2},"messages":[{"role":"user","content":"hi"}]}`, "")
	if len(m.Content) != 2 || m.Content[0].Type != "thinking" || tok.Count(m.Content[0].Thinking) != 2 || tok.Count(m.Content[1].Text) != 8 {
		t.Errorf("content %+v; want 2 thinking tokens (the budget) then 8 text", m.Content)
	}
}

// TestMessagesPromptLikeChat checks that a Messages conversation counts
// (and hashes) as the same conversation sent to chat completions: system,
// text blocks, a tool_use's name and input, a tool_result's content.
func TestMessagesPromptLikeChat(t *testing.T) {
	_, url := newTestServer(t, testConfig(), Options{})
	const args = `{"query":"weather in paris today"}`
	anthropic := `{"max_tokens":3,"ignore_eos":true,"system":[{"type":"text","text":"you are a helpful agent"}],"messages":[
		{"role":"user","content":[{"type":"text","text":"what is the weather"},{"type":"text","text":"in paris"}]},
		{"role":"assistant","content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"t1","name":"search","input":` + args + `}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"sunny and warm all day"}]}]}]}`
	chat := `{"max_tokens":3,"ignore_eos":true,"messages":[
		{"role":"system","content":"you are a helpful agent"},
		{"role":"user","content":"what is the weather\nin paris"},
		{"role":"assistant","content":"let me look","tool_calls":[{"id":"t1","type":"function","function":{"name":"search","arguments":` + string(jsonString(args)) + `}}]},
		{"role":"tool","tool_call_id":"t1","content":"sunny and warm all day"}]}`
	code, b := postMessages(t, url, anthropic, "")
	if code != 200 {
		t.Fatalf("messages: status %d: %s", code, b)
	}
	var m anthropicMessageOut
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	resp := post(t, context.Background(), url+"/v1/chat/completions", chat)
	defer resp.Body.Close()
	var c chatResponse
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Usage.InputTokens+m.Usage.CacheRead, c.Usage.PromptTokens; got != want || want < 20 {
		t.Errorf("messages prompt = %d tokens; chat's = %d (want equal, ≥ 20)", got, want)
	}
	// Sent second, the chat request finds the whole prompt's full blocks
	// cached from the Messages request: the same text hashes alike.
	// (A prompt's last token is always computed, so a block it ends is
	// not a hit.)
	if want := (c.Usage.PromptTokens - 1) / 16 * 16; c.Usage.PromptDetails.CachedTokens != want {
		t.Errorf("chat cached %d of %d prompt tokens; want every full block (%d) from the Messages request",
			c.Usage.PromptDetails.CachedTokens, c.Usage.PromptTokens, want)
	}
}

// TestMessagesPrefixCache checks a conversation's second turn, which
// resends the first and its answer: the prefix cache serves the first
// turn's prompt and answer blocks, which go to cache_read_input_tokens,
// input_tokens being the rest.
func TestMessagesPrefixCache(t *testing.T) {
	_, url := newTestServer(t, testConfig(), Options{})
	first := words(40)
	code, b := postMessages(t, url, `{"max_tokens":20,"ignore_eos":true,"messages":[{"role":"user","content":"`+first+`"}]}`, "")
	if code != 200 {
		t.Fatalf("turn 1: status %d: %s", code, b)
	}
	var m1 anthropicMessageOut
	if err := json.Unmarshal(b, &m1); err != nil {
		t.Fatal(err)
	}
	if m1.Usage.CacheRead != 0 || m1.Usage.InputTokens != 40 {
		t.Fatalf("turn 1 usage %+v; want 40 input, none cached", m1.Usage)
	}
	answer := m1.Content[0].Text
	m2, _ := streamMessages(t, url, `{"max_tokens":5,"ignore_eos":true,"stream":true,"messages":[{"role":"user","content":"`+first+
		`"},{"role":"assistant","content":[{"type":"text","text":"`+answer+`"}]},{"role":"user","content":"and then"}]}`, "")
	// 40 + 20 + 2 = 62 tokens; the first 48 (three full blocks of the
	// first turn's prompt and answer; its last token is never cached) hit.
	if m2.Usage.CacheRead != 48 || m2.Usage.InputTokens != 62-48 {
		t.Errorf("turn 2 usage %+v; want 48 cache read, 14 input", m2.Usage)
	}
}

func TestMessagesToolCalls(t *testing.T) {
	const perCall = 5
	cfg := testConfig()
	cfg.ToolCallTokens = perCall
	_, never := newTestServer(t, cfg, Options{})
	cfg.ToolCallShare = 1
	_, always := newTestServer(t, cfg, Options{})
	const tools = `"tools":[{"name":"search","description":"web search","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}},
		{"name":"read_file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"clock"}]`
	user := `{"role":"user","content":"what time is it"}`
	body := func(stream bool, extra string, msgs ...string) string {
		return fmt.Sprintf(`{"max_tokens":20,"stream":%v,%s%s,"messages":[%s]}`, stream, tools, extra, strings.Join(msgs, ","))
	}
	tests := []struct {
		name   string
		url    string
		header string
		extra  string
		msgs   []string
		want   []string // the tools called; nil: a text answer
	}{
		{"header", never, "search, read_file", "", []string{user}, []string{"search", "read_file"}},
		{"share", always, "", "", []string{user}, []string{"@"}}, // one call, tool picked by hash
		{"share, tool_choice none", always, "", `,"tool_choice":{"type":"none"}`, []string{user}, nil},
		{"any", never, "", `,"tool_choice":{"type":"any"}`, []string{user}, []string{"@"}},
		{"named", never, "", `,"tool_choice":{"type":"tool","name":"clock"}`, []string{user}, []string{"clock"}},
		{"after a tool result", always, "", "", []string{user,
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"clock","input":{}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"noon"}]}`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streamed, _ := streamMessages(t, tt.url, body(true, tt.extra, tt.msgs...), tt.header)
			code, b := postMessages(t, tt.url, body(false, tt.extra, tt.msgs...), tt.header)
			if code != 200 {
				t.Fatalf("non-streamed: status %d: %s", code, b)
			}
			var whole anthropicMessageOut
			if err := json.Unmarshal(b, &whole); err != nil {
				t.Fatal(err)
			}
			for _, m := range []anthropicMessageOut{streamed, whole} {
				if tt.want == nil {
					if len(m.Content) != 1 || m.Content[0].Type != "text" || m.StopReason == "tool_use" {
						t.Errorf("content %+v, stop_reason %q; want one text block", m.Content, m.StopReason)
					}
					continue
				}
				if m.StopReason != "tool_use" || m.Usage.OutputTokens != perCall*len(tt.want) {
					t.Errorf("stop_reason %q, output_tokens %d; want tool_use, %d", m.StopReason, m.Usage.OutputTokens, perCall*len(tt.want))
				}
				ids := map[string]bool{}
				var names []string
				for i, blk := range m.Content {
					if blk.Type != "tool_use" || !toolUseIDPattern.MatchString(blk.ID) || ids[blk.ID] {
						t.Errorf("block %d: type %q id %q; want tool_use with a fresh toolu_ id", i, blk.Type, blk.ID)
					}
					ids[blk.ID] = true
					names = append(names, blk.Name)
					var in map[string]string
					if err := json.Unmarshal(blk.Input, &in); err != nil {
						t.Errorf("block %d input %s: %v", i, blk.Input, err)
						continue
					}
					if v, ok := in[argKeys[blk.Name]]; len(in) != 1 || !ok || len(strings.Fields(v)) != perCall-1 {
						t.Errorf("block %d input %s; want {%q: %d words}", i, blk.Input, argKeys[blk.Name], perCall-1)
					}
				}
				if tt.want[0] == "@" {
					if len(names) != 1 {
						t.Errorf("called %q; want one tool", names)
					}
				} else if !cmp.Equal(names, tt.want) {
					t.Errorf("called %q; want %q", names, tt.want)
				}
			}
		})
	}
}

func TestMessagesBadRequests(t *testing.T) {
	_, url := newTestServer(t, testConfig(), Options{ServedModelName: "sim"})
	const user = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, body, header string
		status             int
		errType, mention   string
	}{
		{"missing max_tokens", `{` + user + `}`, "", 400, "invalid_request_error", "max_tokens: required"},
		{"zero max_tokens", `{"max_tokens":0,` + user + `}`, "", 400, "invalid_request_error", "max_tokens"},
		{"max_tokens a string", `{"max_tokens":"5",` + user + `}`, "", 400, "invalid_request_error", "max_tokens"},
		{"no messages", `{"max_tokens":5}`, "", 400, "invalid_request_error", "messages: required"},
		{"empty messages", `{"max_tokens":5,"messages":[]}`, "", 400, "invalid_request_error", "messages"},
		{"system role", `{"max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, "", 400, "invalid_request_error", "messages[0].role"},
		{"bad block", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"video"}]}]}`, "", 400, "invalid_request_error", "messages[0].content[0].type"},
		{"orphan tool_result", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"y"}]}]}`, "", 400, "invalid_request_error", "messages[0].content[0].tool_use_id"},
		{"tool_use without input", `{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b"}]}]}`, "", 400, "invalid_request_error", "messages[0].content[0].input"},
		{"budget over max_tokens", `{"max_tokens":5,"thinking":{"type":"enabled","budget_tokens":5},` + user + `}`, "", 400, "invalid_request_error", "thinking.budget_tokens"},
		{"tool_choice undeclared", `{"max_tokens":5,"tools":[{"name":"a"}],"tool_choice":{"type":"tool","name":"b"},` + user + `}`, "", 400, "invalid_request_error", "tool_choice.name"},
		{"server tool", `{"max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],` + user + `}`, "", 400, "invalid_request_error", "tools[0].type"},
		{"header undeclared", `{"max_tokens":5,` + user + `}`, "search", 400, "invalid_request_error", ToolCallsHeader},
		{"malformed", `{"max_tokens":5,`, "", 400, "invalid_request_error", "malformed JSON"},
		{"no prompt tokens", `{"max_tokens":5,"messages":[{"role":"user","content":""}]}`, "", 400, "invalid_request_error", "messages: has no tokens"},
		{"unknown model", `{"model":"gpt-9","max_tokens":5,` + user + `}`, "", 404, "not_found_error", "gpt-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := postMessages(t, url, tt.body, tt.header)
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if code != tt.status || e.Type != "error" || e.Error.Type != tt.errType || !strings.Contains(e.Error.Message, tt.mention) {
				t.Errorf("status %d, body %s; want %d, an error of type %s mentioning %q", code, b, tt.status, tt.errType, tt.mention)
			}
		})
	}
	resp, err := http.Get(url + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
		t.Errorf("GET /v1/messages = %d %s; want 405 in Anthropic's error shape", resp.StatusCode, b)
	}
}

// queueTimeoutServer is a server that runs one request at a time and
// refuses a waiting one after 1 s: a second streamed request gets its
// 200 headers (it is admitted to the queue) and then fails mid-stream.
// The returned cancel hangs up the first request. (At 50 ms a busy host
// once held the first request's own admission past the limit.)
func queueTimeoutServer(t *testing.T, path, body string) (url string, cancel func()) {
	t.Helper()
	cfg := testConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxQueueTime = 1e9
	_, url = newTestServer(t, cfg, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	first := post(t, ctx, url+path, body)
	t.Cleanup(func() { first.Body.Close() })
	if line, err := bufio.NewReader(first.Body).ReadString('\n'); err != nil { // it runs
		t.Fatalf("first request: status %d, %q: %v; want it streaming", first.StatusCode, line, err)
	}
	return url, cancel
}

func TestMessagesMidStreamError(t *testing.T) {
	const body = `{"max_tokens":100000,"ignore_eos":true,"stream":true,"messages":[{"role":"user","content":"hello"}]}`
	url, cancel := queueTimeoutServer(t, "/v1/messages", body)
	defer cancel()
	resp := post(t, context.Background(), url+"/v1/messages", body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("second request: status %d; want 200 (admitted to the queue)", resp.StatusCode)
	}
	evs := readEvents(t, resp.Body)
	if len(evs) != 1 || evs[0].Type != "error" {
		t.Fatalf("events %v; want one error event", evs)
	}
	var e anthropicEvent
	if err := json.Unmarshal([]byte(evs[0].Data), &e); err != nil || e.Error == nil {
		t.Fatalf("error event %s: %v", evs[0].Data, err)
	}
	if e.Error.Type != "rate_limit_error" || !strings.Contains(e.Error.Message, "queued") {
		t.Errorf("error %+v; want a rate_limit_error saying it queued too long", e.Error)
	}
}

func FuzzParseMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"max_tokens":9,"thinking":{"type":"enabled","budget_tokens":3},"tools":[{"name":"a","input_schema":{"properties":{"x":{}}}}],"tool_choice":{"type":"tool","name":"a"},"messages":[{"role":"user","content":"x"}]}`,
		`{"max_tokens":5}`, `{}`, `[]`, `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := parseMessagesRequest(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || ae.message == "" {
				t.Fatalf("error %v; want a 400 apiError with a message", err)
			}
			return
		}
		// What was accepted round-trips: max_tokens, one text piece per
		// message (and the system prompt), the budget under max_tokens.
		var w struct {
			MaxTokens int               `json:"max_tokens"`
			Messages  []json.RawMessage `json:"messages"`
			System    json.RawMessage   `json:"system"`
			Stream    bool              `json:"stream"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		pieces := len(w.Messages)
		if !isNull(w.System) {
			pieces++
		}
		if g.maxTokens != w.MaxTokens || g.maxTokens < 1 || len(g.text) != pieces || !g.chat || g.stream != w.Stream {
			t.Fatalf("parsed max_tokens %d, %d pieces, stream %v; the body says %d, %d, %v", g.maxTokens, len(g.text), g.stream, w.MaxTokens, pieces, w.Stream)
		}
		if g.reasoningCap < 0 || g.reasoningCap >= g.maxTokens {
			t.Fatalf("thinking budget %d with max_tokens %d", g.reasoningCap, g.maxTokens)
		}
		if g.toolChoice == choiceNamed && g.toolIndex(g.toolChoiceName) < 0 {
			t.Fatalf("accepted tool_choice %q, not a declared tool", g.toolChoiceName)
		}
	})
}

// discardWriter is an http.ResponseWriter and Flusher that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}
func (*discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (*discardWriter) WriteHeader(int)             {}
func (*discardWriter) Flush()                      {}

// BenchmarkWirePiece measures writing one streamed token in each protocol
// (the per-token hot path): chat's chunk, Anthropic's text_delta event,
// the Responses output_text.delta event.
func BenchmarkWirePiece(b *testing.B) {
	s, err := New(testConfig(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		wire func(g *genRequest) wire
	}{
		{"chat", func(*genRequest) wire { return &openaiWire{} }},
		{"messages", func(*genRequest) wire { return &messagesWire{} }},
		{"responses", func(g *genRequest) wire { return &responsesWire{req: &responsesParsed{g: g, store: true}} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := &genRequest{chat: true, stream: true}
			p := &plan{g: g, info: promptInfo{tokens: 100}, outputTokens: 1 << 40, finish: "length"}
			rs := &response{s: s, w: &discardWriter{}, st: newStream("r1", 1, 0), p: p, chat: true,
				respID: "resp_0123456789abcdef01234567", wire: tc.wire(g)}
			if !rs.wire.start(rs) {
				b.Fatal("start failed")
			}
			b.ReportAllocs()
			for b.Loop() {
				if !rs.wire.piece(rs, delivery{tokens: 1}, false) {
					b.Fatal("piece failed")
				}
			}
		})
	}
}
