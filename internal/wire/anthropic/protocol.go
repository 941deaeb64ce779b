// Package anthropic speaks Anthropic's Messages API (POST /v1/messages)
// over package wire's client: Messages is the wire.Protocol that
// frames a request's body and key, and Decoder reads the API's streamed
// events (and whole answers) into the wire.Chunks that wire.StreamMeter
// turns into records, so a Messages stream is measured exactly as an OpenAI
// one is: thinking is hidden output, text is visible, tool_use input is
// hidden tool-call text.
//
// Messages is safe for concurrent use; a Decoder is not (one per stream
// being read).
package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/goodput/goodput/internal/wire"
)

// Version is the anthropic-version header every request carries: the API
// rejects a request without one, and this is the version whose event
// shapes Decoder reads.
const Version = "2023-06-01"

// DefaultMaxTokens is the max_tokens sent when a request sets none: the
// API requires the field, and 4096 is above any answer a benchmark
// workload expects while within every current model's output limit. The
// record keeps the request's own 0 (no cap asked).
const DefaultMaxTokens = 4096

// Messages is POST /v1/messages, Anthropic's Messages API: a conversation
// with a top-level system prompt, content blocks, tool_use and tool_result
// blocks; streamed as named events (message_start, content_block_delta, …,
// message_stop).
var Messages wire.Protocol = messagesProtocol{}

type messagesProtocol struct{}

func (messagesProtocol) Name() string                  { return "anthropic-messages" }
func (messagesProtocol) Path() string                  { return "/v1/messages" }
func (messagesProtocol) Chat() bool                    { return true }
func (messagesProtocol) Streams() bool                 { return true }
func (messagesProtocol) NewDecoder() wire.EventDecoder { return &Decoder{} }

// Auth sends the key as x-api-key (nothing for an empty key) and always the
// API version, which the API requires even of keyless gateways.
func (messagesProtocol) Auth(h http.Header, key string) {
	if key != "" {
		h.Set("X-Api-Key", key)
	}
	h.Set("Anthropic-Version", Version)
}

// Body fills max_tokens (DefaultMaxTokens when r sets none), system,
// messages, tools and stream. The OpenAI extensions of o (ignore_eos,
// continuous usage, the cap's field name) have no Anthropic meaning and
// are not sent.
func (messagesProtocol) Body(m map[string]any, r *wire.Request, o wire.BodyOptions) error {
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	m["max_tokens"] = maxTokens
	msgs := r.Messages
	if len(msgs) == 0 {
		msgs = []wire.Message{{Role: "user", Content: r.Prompt}}
	}
	system, out := convert(msgs)
	if system != "" {
		m["system"] = system
	}
	m["messages"] = out
	if len(r.Tools) > 0 {
		tools := make([]tool, len(r.Tools))
		for i, n := range r.Tools {
			tools[i] = tool{Name: n, Description: wire.ToolDescription(n), InputSchema: wire.ToolSchema(n)}
		}
		m["tools"] = tools
	}
	m["stream"] = o.Stream
	return nil
}

// The request's JSON shapes.
type (
	message struct {
		Role    string `json:"role"`
		Content any    `json:"content"` // a string, or []any of blocks
	}
	textBlock struct {
		Type string `json:"type"` // "text"
		Text string `json:"text"`
	}
	toolUseBlock struct {
		Type  string `json:"type"` // "tool_use"
		ID    string `json:"id"`
		Name  string `json:"name"`
		Input any    `json:"input"`
	}
	toolResultBlock struct {
		Type      string `json:"type"` // "tool_result"
		ToolUseID string `json:"tool_use_id"`
		Content   string `json:"content"`
	}
	tool struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	}
)

// convert turns an OpenAI-shaped conversation into Anthropic's: system
// (and developer) messages become the top-level system prompt (joined
// with blank lines);
// tool messages become tool_result blocks of a user message. The API wants
// every result of an assistant turn in the one user message after it, the
// results before any text, so consecutive results share one message and a
// user message that follows them joins it as a text block. An assistant
// turn with neither text nor calls is left out.
func convert(msgs []wire.Message) (system string, out []message) {
	var systems []string
	var results, texts []any // the user turn being gathered after tool results
	flush := func() {
		if len(results) > 0 {
			out = append(out, message{Role: "user", Content: append(results, texts...)})
		}
		results, texts = nil, nil
	}
	for _, msg := range msgs {
		switch msg.Role {
		case "system", "developer":
			systems = append(systems, msg.Content)
		case "tool":
			results = append(results, toolResultBlock{Type: "tool_result", ToolUseID: msg.ToolCallID, Content: msg.Content})
		case "user":
			if len(results) > 0 {
				if msg.Content != "" { // the API rejects an empty text block
					texts = append(texts, textBlock{Type: "text", Text: msg.Content})
				}
				continue
			}
			out = append(out, message{Role: "user", Content: msg.Content})
		case "assistant":
			flush()
			if len(msg.ToolCalls) == 0 {
				// The API refuses an empty assistant turn (an answer that
				// was all hidden thinking) but joins consecutive user
				// turns, so an empty one is left out.
				if msg.Content != "" {
					out = append(out, message{Role: msg.Role, Content: msg.Content})
				}
				continue
			}
			blocks := make([]any, 0, 1+len(msg.ToolCalls))
			if msg.Content != "" {
				blocks = append(blocks, textBlock{Type: "text", Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: toolInput(tc.Function.Arguments)})
			}
			out = append(out, message{Role: msg.Role, Content: blocks})
		default: // a role the API does not know: sent as given, for it to refuse
			flush()
			out = append(out, message{Role: msg.Role, Content: msg.Content})
		}
	}
	flush()
	return strings.Join(systems, "\n\n"), out
}

// toolInput is a call's arguments as the JSON object tool_use's input must
// be: the arguments themselves when they are one (kept as sent, not
// re-encoded), {} for none, else {"query": text}, the one argument every
// workload tool declares (openai.ToolSchema), so a model's malformed call
// still goes back as what it said.
func toolInput(args string) any {
	t := strings.TrimSpace(args)
	switch {
	case t == "":
		return map[string]any{}
	case t[0] == '{' && json.Valid([]byte(t)):
		return json.RawMessage(t)
	}
	return map[string]string{"query": args}
}
