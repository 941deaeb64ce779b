package openai

import (
	"github.com/goodput/goodput/internal/wire"
	"net/http"
	"strings"
)

// The OpenAI protocols.
var (
	// Completions is POST /v1/completions: one prompt, streamed chunks.
	Completions wire.Protocol = openaiProtocol{name: "openai", path: "/v1/completions"}
	// ChatCompletions is POST /v1/chat/completions: messages and tools.
	ChatCompletions wire.Protocol = openaiProtocol{name: "openai-chat", path: "/v1/chat/completions", chat: true}
)

// openaiProtocol is the completions and chat completions APIs, which share
// their chunk format.
type openaiProtocol struct {
	name, path string
	chat       bool
}

func (p openaiProtocol) Name() string                  { return p.name }
func (p openaiProtocol) Path() string                  { return p.path }
func (p openaiProtocol) Chat() bool                    { return p.chat }
func (p openaiProtocol) Streams() bool                 { return true }
func (p openaiProtocol) NewDecoder() wire.EventDecoder { return &ChunkDecoder{} }

// Auth sends the key as a bearer token, as every OpenAI-compatible server
// reads it.
func (p openaiProtocol) Auth(h http.Header, key string) { wire.BearerAuth(h, key) }

func (p openaiProtocol) Body(m map[string]any, r *wire.Request, o wire.BodyOptions) error {
	if p.chat {
		msgs := r.Messages
		if len(msgs) == 0 {
			msgs = []wire.Message{{Role: "user", Content: r.Prompt}}
		}
		m["messages"] = msgs
		if len(r.Tools) > 0 {
			m["tools"] = ToolDecls(r.Tools)
		}
	} else {
		m["prompt"] = r.Prompt
	}
	if r.MaxTokens > 0 {
		field := o.MaxTokensField
		if field == "" {
			field = "max_tokens"
		}
		m[field] = r.MaxTokens
	}
	m["stream"] = o.Stream
	if o.Stream {
		// stream_options is allowed only with streaming (vLLM rejects it
		// otherwise); a whole answer carries its usage anyway.
		so := map[string]any{"include_usage": true}
		if o.ContinuousUsage {
			so["continuous_usage_stats"] = true
		}
		m["stream_options"] = so
	}
	if o.IgnoreEOS {
		m["ignore_eos"] = true
	}
	return nil
}

// ToolDecls declares each named tool as a chat completions function.
func ToolDecls(names []string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"type": "function", "function": map[string]any{
			"name": n, "description": wire.ToolDescription(n), "parameters": wire.ToolSchema(n),
		}}
	}
	return out
}

// ProtocolFor is the OpenAI protocol an endpoint path implies, for callers
// that give a path and no protocol: chat completions for a chat path,
// Responses and embeddings for theirs, completions otherwise.
func ProtocolFor(path string) wire.Protocol {
	switch {
	case strings.Contains(path, "chat"):
		return ChatCompletions
	case strings.Contains(path, "/responses"):
		return Responses
	case strings.Contains(path, "/embeddings"):
		return Embeddings
	}
	return Completions
}
