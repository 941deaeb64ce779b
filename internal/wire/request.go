package wire

// Message is one chat message: an assistant message may carry the tool
// calls it made, a "tool" message answers one of them.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one call of an assistant message, in the wire form.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's function and its arguments (JSON text).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// HeaderToolCalls carries a request's expected tool calls (comma-separated
// names) to goodput's simulator, which then makes exactly those calls; real
// servers ignore an unknown header.
const HeaderToolCalls = "X-Goodput-Tool-Calls"

// HeaderSession names the session (conversation, agent loop) a request
// is a turn of, so that a router in front of several replicas can keep a
// session on one (goodput serve --router session-affinity reads it);
// servers ignore an unknown header.
const HeaderSession = "X-Session-Id"

// Request is what to send: a prompt (completions) or messages (chat).
type Request struct {
	// ID is sent as x-request-id and kept in the record.
	ID string
	// Prompt is the completion prompt; for chat it becomes one user message
	// when Messages is empty.
	Prompt string
	// Messages is the chat conversation.
	Messages []Message
	// PreviousResponseID chains the request to an earlier answer of the
	// Responses API (sent as previous_response_id; the server keeps the
	// conversation), so Messages then hold only the turn's new messages.
	// "" sends the whole conversation; other protocols ignore it.
	PreviousResponseID string
	// MaxTokens caps the output (sent as max_tokens); 0 sends none.
	MaxTokens int
	// PromptTokens is the prompt length the workload intended (0 unknown).
	PromptTokens int
	// Tools are the names of the functions a chat request declares.
	Tools []string
	// ExpectedToolCalls, when set, is sent as HeaderToolCalls.
	ExpectedToolCalls []string
	// Session, when set, is sent as HeaderSession.
	Session string
}
