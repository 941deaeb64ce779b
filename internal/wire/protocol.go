package wire

import "net/http"

// Protocol is one wire API spoken over the client's HTTP machinery (the
// connection pool, the timing, the idle watch, the failure classes, the
// runaway caps): how a request's body is framed, how the API key is sent,
// and how the answer reads. OpenAI's completions, chat completions,
// Responses and embeddings are in package wire/openai, Anthropic's
// Messages API in wire/anthropic; another protocol is one more package,
// listed in wire/protocols.
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

// BearerAuth sets Authorization: Bearer key (nothing for an empty key).
func BearerAuth(h http.Header, key string) {
	if key != "" {
		h["Authorization"] = []string{"Bearer " + key}
	}
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
