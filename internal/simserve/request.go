package simserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// apiError is an error the server answers with an OpenAI error object.
type apiError struct {
	status  int    // HTTP status
	message string // human message
	param   string // the offending request field, "" for none
	code    string // a protocol's machine-readable error code, "" for its default
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	if param != "" {
		msg = param + ": " + msg
	}
	return &apiError{status: 400, message: msg, param: param}
}

// wireRequest is the JSON body of /v1/completions and /v1/chat/completions.
// Fields the simulator has no use for (temperature, top_p, stop, ...) are
// accepted and ignored, as a server that honours them would still answer.
type wireRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []wireMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	N          *int            `json:"n"`
	Priority   *int            `json:"priority"`
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`   // assistant: the calls it made
	ToolCallID *string         `json:"tool_call_id"` // tool: the call it answers
}

// genRequest is a parsed, validated generation request.
type genRequest struct {
	chat            bool
	model           string   // as sent; "" when omitted
	text            []string // prompt text pieces (one per message for chat), for counting and hashing
	tokenIDs        []int    // a prompt given as token ids, instead of text
	maxTokens       int      // max_tokens / max_completion_tokens; 0 = not given
	minTokens       int
	ignoreEOS       bool
	stream          bool
	includeUsage    bool
	continuousUsage bool
	priority        int
	// Chat with tools.
	tools          []toolDef
	toolChoice     toolChoiceKind
	toolChoiceName string   // choiceNamed: the function named
	lastRole       string   // the last message's role
	forcedCalls    []string // ToolCallsHeader's tool names (set by the handler); nil: none
	// The fields that errors about the prompt and the output limit name:
	// "" means chat's and completions' own (messages or prompt, and
	// max_tokens).
	promptParam, maxParam string
	// reasoningCap, when > 0, caps the engine's hidden reasoning (an
	// Anthropic thinking budget); 0 leaves it to the engine.
	reasoningCap int
}

// maxBodyBytes bounds a request body: 64 MiB holds a million-token prompt.
const maxBodyBytes = 64 << 20

// parseGenRequest decodes and validates a generation request body. chat
// selects the chat-completions shape (messages) over completions (prompt).
// Errors are *apiError with status 400 naming the field.
func parseGenRequest(body []byte, chat bool) (*genRequest, error) {
	var w wireRequest
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	g := &genRequest{chat: chat, model: w.Model, ignoreEOS: w.IgnoreEOS, stream: w.Stream}
	if chat {
		if w.Messages == nil {
			return nil, badRequest("messages", "required")
		}
		if len(w.Messages) == 0 {
			return nil, badRequest("messages", "must not be empty")
		}
		for i := range w.Messages {
			m := &w.Messages[i]
			if m.Role == "" {
				return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "required")
			}
			text, err := messagePiece(i, m)
			if err != nil {
				return nil, err
			}
			g.text = append(g.text, text)
		}
		g.lastRole = w.Messages[len(w.Messages)-1].Role
		if err := g.parseTools(&w); err != nil {
			return nil, err
		}
	} else {
		if len(w.Prompt) == 0 || string(w.Prompt) == "null" {
			return nil, badRequest("prompt", "required")
		}
		text, ids, err := promptValue(w.Prompt)
		if err != nil {
			return nil, badRequest("prompt", "%v", err)
		}
		if ids != nil {
			g.tokenIDs = ids
		} else {
			g.text = []string{text}
		}
	}
	// max_completion_tokens is the newer name; when both are given the
	// smaller one binds, as either limit alone would.
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", w.MaxTokens}, {"max_completion_tokens", w.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return nil, badRequest(f.name, "must be at least 1, got %d", *f.v)
		}
		if g.maxTokens == 0 || *f.v < g.maxTokens {
			g.maxTokens = *f.v
		}
	}
	if w.MinTokens != nil {
		if *w.MinTokens < 0 {
			return nil, badRequest("min_tokens", "must be at least 0, got %d", *w.MinTokens)
		}
		if g.maxTokens > 0 && *w.MinTokens > g.maxTokens {
			return nil, badRequest("min_tokens", "must be at most max_tokens=%d, got %d", g.maxTokens, *w.MinTokens)
		}
		g.minTokens = *w.MinTokens
	}
	if w.N != nil && *w.N != 1 {
		return nil, badRequest("n", "only n=1 is supported, got %d", *w.N)
	}
	if w.StreamOptions != nil {
		if !w.Stream {
			return nil, badRequest("stream_options", "allowed only with stream=true")
		}
		g.includeUsage = w.StreamOptions.IncludeUsage
		g.continuousUsage = w.StreamOptions.ContinuousUsageStats
	}
	if w.Priority != nil {
		g.priority = *w.Priority
	}
	return g, nil
}

// parseTools reads tools and tool_choice (chat only).
func (g *genRequest) parseTools(w *wireRequest) error {
	var err error
	if g.tools, err = parseTools(w.Tools); err != nil {
		return err
	}
	if g.toolChoice, g.toolChoiceName, err = parseToolChoice(w.ToolChoice); err != nil {
		return err
	}
	switch {
	case g.toolChoice == choiceRequired && len(g.tools) == 0:
		return badRequest("tool_choice", `"required" needs tools`)
	case g.toolChoice == choiceNamed && g.toolIndex(g.toolChoiceName) < 0:
		return badRequest("tool_choice.function.name", "%q is not a declared tool", g.toolChoiceName)
	}
	return nil
}

// decodeJSON decodes body into v, turning decoder errors into 400s that
// name the field.
func decodeJSON(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return badRequest("", "empty request body; want a JSON object")
	}
	if body[0] != '{' {
		return badRequest("", "request body must be a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badRequest(te.Field, "want %s, got JSON %s", goTypeName(te.Type.Kind().String()), te.Value)
		}
		return badRequest("", "malformed JSON: %v", err)
	}
	return nil
}

// goTypeName names a Go kind the way an API user thinks of it.
func goTypeName(kind string) string {
	switch kind {
	case "int", "int64":
		return "an integer"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	}
	return kind
}

// promptValue reads a completions prompt: a string, a one-element array of
// strings, or token ids (an array of integers, or one such array in an
// array). Batched prompts (n > 1 prompts) are refused: one request, one
// stream.
func promptValue(raw json.RawMessage) (text string, ids []int, err error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return "", nil, errors.New("must not be empty")
		}
		return s, nil, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) != 1 {
			return "", nil, fmt.Errorf("want one prompt, got %d (batched prompts are not supported)", len(ss))
		}
		if ss[0] == "" {
			return "", nil, errors.New("must not be empty")
		}
		return ss[0], nil, nil
	}
	var tok []int
	if json.Unmarshal(raw, &tok) == nil {
		if len(tok) == 0 {
			return "", nil, errors.New("must not be empty")
		}
		return "", tok, nil
	}
	var toks [][]int
	if json.Unmarshal(raw, &toks) == nil {
		if len(toks) != 1 {
			return "", nil, fmt.Errorf("want one prompt, got %d (batched prompts are not supported)", len(toks))
		}
		if len(toks[0]) == 0 {
			return "", nil, errors.New("must not be empty")
		}
		return "", toks[0], nil
	}
	return "", nil, errors.New("want a string, an array of one string, or an array of token ids")
}

// messageText returns a chat message's text: the content string, or the
// text parts of a content array joined by newlines (non-text parts such as
// images carry no text tokens here). A null content is empty (an assistant
// message with tool calls has one).
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of content parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type == "" {
			return "", fmt.Errorf("part %d: type required", i)
		}
		if p.Type != "text" || p.Text == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// tokenizeRequest is vLLM's /tokenize body: {"prompt": ...} or
// {"messages": [...]}.
type tokenizeRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []wireMessage   `json:"messages"`
}

// parseTokenizeRequest returns the text pieces (or token ids) to count.
func parseTokenizeRequest(body []byte) (model string, text []string, ids []int, chat bool, err error) {
	var t tokenizeRequest
	if err := decodeJSON(body, &t); err != nil {
		return "", nil, nil, false, err
	}
	switch {
	case t.Messages != nil:
		if len(t.Messages) == 0 {
			return "", nil, nil, false, badRequest("messages", "must not be empty")
		}
		for i := range t.Messages {
			s, err := messagePiece(i, &t.Messages[i])
			if err != nil {
				return "", nil, nil, false, err
			}
			text = append(text, s)
		}
		return t.Model, text, nil, true, nil
	case len(t.Prompt) > 0 && string(t.Prompt) != "null":
		s, ids, err := promptValue(t.Prompt)
		if err != nil {
			return "", nil, nil, false, badRequest("prompt", "%v", err)
		}
		if ids != nil {
			return t.Model, nil, ids, false, nil
		}
		return t.Model, []string{s}, nil, false, nil
	}
	return "", nil, nil, false, badRequest("prompt", "want prompt or messages")
}
