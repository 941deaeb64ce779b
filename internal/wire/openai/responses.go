package openai

import (
	"github.com/goodput/goodput/internal/wire"
	"net/http"
)

// Responses is POST /v1/responses, OpenAI's Responses API: a conversation
// as input items (messages, function calls and their outputs), streamed as
// typed events (response.output_text.delta, …, response.completed) and
// read by ResponsesDecoder. A request may chain to an earlier answer
// (Request.PreviousResponseID) instead of resending the conversation.
var Responses wire.Protocol = responsesProtocol{}

type responsesProtocol struct{}

func (responsesProtocol) Name() string                  { return "openai-responses" }
func (responsesProtocol) Path() string                  { return "/v1/responses" }
func (responsesProtocol) Chat() bool                    { return true }
func (responsesProtocol) Streams() bool                 { return true }
func (responsesProtocol) NewDecoder() wire.EventDecoder { return &ResponsesDecoder{} }

// Auth sends the key as a bearer token.
func (responsesProtocol) Auth(h http.Header, key string) { wire.BearerAuth(h, key) }

// Body fills input (the messages as items, or the prompt as a string),
// max_output_tokens (when r.MaxTokens > 0: the API has its own name for
// the cap, so o.MaxTokensField does not apply), tools, stream and, for a
// chained request, previous_response_id with store: true. A chained turn
// must itself be stored for the next turn to chain from it, so it asks;
// a request that does not chain leaves store to the server's default
// (true at OpenAI and vLLM), since some gateways refuse store: true and a
// run that never chains needs nothing stored. The first turn of a chain
// relies on that default; --extra-body store=true forces it. The OpenAI
// extensions of o (ignore_eos, continuous usage) are not sent.
func (responsesProtocol) Body(m map[string]any, r *wire.Request, o wire.BodyOptions) error {
	if len(r.Messages) == 0 {
		m["input"] = r.Prompt
	} else {
		m["input"] = responsesInput(r.Messages)
	}
	if r.MaxTokens > 0 {
		m["max_output_tokens"] = r.MaxTokens
	}
	if len(r.Tools) > 0 {
		tools := make([]responsesTool, len(r.Tools))
		for i, n := range r.Tools {
			tools[i] = responsesTool{Type: "function", Name: n, Description: wire.ToolDescription(n), Parameters: wire.ToolSchema(n)}
		}
		m["tools"] = tools
	}
	m["stream"] = o.Stream
	if r.PreviousResponseID != "" {
		m["previous_response_id"] = r.PreviousResponseID
		m["store"] = true
	}
	return nil
}

// The request's JSON shapes.
type (
	responsesMessage struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	responsesCall struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	responsesCallOutput struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	// responsesTool declares a function. Strict is sent false: the API's
	// default (true) demands schemas closed with additionalProperties,
	// which ToolSchema's one-argument schema need not be.
	responsesTool struct {
		Type        string         `json:"type"` // "function"
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
		Strict      bool           `json:"strict"`
	}
)

// responsesInput turns chat messages into input items: a message item per
// system, user or assistant text; a function_call item per tool call of an
// assistant message (after its text, if any); a function_call_output item
// per tool message.
func responsesInput(msgs []wire.Message) []any {
	items := make([]any, 0, len(msgs))
	for _, msg := range msgs {
		switch msg.Role {
		case "tool":
			items = append(items, responsesCallOutput{Type: "function_call_output", CallID: msg.ToolCallID, Output: msg.Content})
		case "assistant":
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				items = append(items, responsesMessage{Role: msg.Role, Content: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				items = append(items, responsesCall{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		default:
			items = append(items, responsesMessage{Role: msg.Role, Content: msg.Content})
		}
	}
	return items
}
