package openai

import (
	"net/http"
	"strings"
)

// Protocol is one wire API spoken over the Client's HTTP machinery (the
// connection pool, the timing, the idle watch, the failure classes, the
// runaway caps): how a request's body is framed, how the API key is sent,
// and how the answer reads. OpenAI's completions, chat completions,
// Responses and embeddings are here; Anthropic's Messages API is in
// package anthropic; another protocol is one more implementation.
type Protocol interface {
	// Name is the API as records name it (openai, openai-chat, ...).
	Name() string
	// Path is the request path when none is configured.
	Path() string
	// Chat reports whether a request carries a conversation (messages,
	// tools) rather than one prompt, so sessions can run over it.
	Chat() bool
	// Streams reports whether the API streams its answers; one that does
	// not (embeddings) is always measured whole.
	Streams() bool
	// Body fills the members of r's JSON body other than "model" (already
	// set) and the user's extra body (merged after).
	Body(m map[string]any, r *Request, o BodyOptions) error
	// Auth puts the API key on h, in the protocol's header.
	Auth(h http.Header, key string)
	// NewDecoder makes a decoder of the protocol's answers, one per stream
	// being read at a time.
	NewDecoder() EventDecoder
}

// BodyOptions are the Client's settings a protocol's body may carry.
type BodyOptions struct {
	// MaxTokensField names the output cap (Config.MaxTokensField; "" is
	// the protocol's own).
	MaxTokensField string
	// Stream asks for a streamed answer.
	Stream bool
	// ContinuousUsage asks for usage in every chunk (vLLM's extension).
	ContinuousUsage bool
	// IgnoreEOS asks the server to generate the whole max_tokens (vLLM,
	// SGLang, llama.cpp extension).
	IgnoreEOS bool
}

// The OpenAI protocols.
var (
	// Completions is POST /v1/completions: one prompt, streamed chunks.
	Completions Protocol = openaiProtocol{name: "openai", path: "/v1/completions"}
	// ChatCompletions is POST /v1/chat/completions: messages and tools.
	ChatCompletions Protocol = openaiProtocol{name: "openai-chat", path: "/v1/chat/completions", chat: true}
)

// openaiProtocol is the completions and chat completions APIs, which share
// their chunk format.
type openaiProtocol struct {
	name, path string
	chat       bool
}

func (p openaiProtocol) Name() string             { return p.name }
func (p openaiProtocol) Path() string             { return p.path }
func (p openaiProtocol) Chat() bool               { return p.chat }
func (p openaiProtocol) Streams() bool            { return true }
func (p openaiProtocol) NewDecoder() EventDecoder { return &ChunkDecoder{} }

// Auth sends the key as a bearer token, as every OpenAI-compatible server
// reads it.
func (p openaiProtocol) Auth(h http.Header, key string) { BearerAuth(h, key) }

// BearerAuth sets Authorization: Bearer key (nothing for an empty key).
func BearerAuth(h http.Header, key string) {
	if key != "" {
		h["Authorization"] = []string{"Bearer " + key}
	}
}

func (p openaiProtocol) Body(m map[string]any, r *Request, o BodyOptions) error {
	if p.chat {
		msgs := r.Messages
		if len(msgs) == 0 {
			msgs = []Message{{Role: "user", Content: r.Prompt}}
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

// ToolDescription and ToolQueryParam describe a workload's tool to a
// model: a workload knows the tools' names, not their schemas, and a model
// needs a schema to call them. Every protocol declares the same function
// of one string argument, in its own shape.
func ToolDescription(name string) string {
	return "The " + name + " tool. Call it when its result would help answer."
}

// ToolSchema is the JSON schema of a workload tool's arguments.
func ToolSchema(name string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{"query": map[string]any{"type": "string", "description": "what to " + name}},
		"required":   []string{"query"},
	}
}

// ToolDecls declares each named tool as a chat completions function.
func ToolDecls(names []string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"type": "function", "function": map[string]any{
			"name": n, "description": ToolDescription(n), "parameters": ToolSchema(n),
		}}
	}
	return out
}

// ProtocolFor is the OpenAI protocol an endpoint path implies, for callers
// that give a path and no protocol: chat completions for a chat path,
// Responses and embeddings for theirs, completions otherwise.
func ProtocolFor(path string) Protocol {
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
