package simserve

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/sim"
)

// Anthropic's Messages API (POST /v1/messages) over the same engine as the
// chat endpoint: the same planning, timing, metrics, reasoning and tool
// calls, in Anthropic's request and event shapes. The engine's hidden
// reasoning is a thinking block; tool calls are tool_use blocks.

// messagesRequest is the JSON body of /v1/messages. Fields the simulator
// has no use for (metadata, temperature, top_p, top_k, stop_sequences, ...)
// are accepted and ignored. ignore_eos is vLLM's extension: with it the
// answer is max_tokens long, as a benchmark wants.
type messagesRequest struct {
	Model      string            `json:"model"`
	MaxTokens  *int              `json:"max_tokens"`
	Messages   []json.RawMessage `json:"messages"`
	System     json.RawMessage   `json:"system"`
	Tools      json.RawMessage   `json:"tools"`
	ToolChoice json.RawMessage   `json:"tool_choice"`
	Thinking   json.RawMessage   `json:"thinking"`
	Stream     bool              `json:"stream"`
	IgnoreEOS  bool              `json:"ignore_eos"`
}

// anthropicBlock is a content block of a request message, as far as the
// simulator reads it.
type anthropicBlock struct {
	Type      *string         `json:"type"`
	Text      *string         `json:"text"`
	ID        *string         `json:"id"`
	Name      *string         `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID *string         `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// parseMessagesRequest decodes and validates a /v1/messages body into a
// chat-shaped generation request: the system prompt, then one text piece
// per message (its text blocks, each tool_use's name and input, each
// tool_result's content), counted and hashed as chat's messages are.
// Errors are *apiError with status 400 naming the field.
func parseMessagesRequest(body []byte) (*genRequest, error) {
	var w messagesRequest
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	g := &genRequest{chat: true, model: w.Model, stream: w.Stream, ignoreEOS: w.IgnoreEOS, promptParam: "messages"}
	if w.MaxTokens == nil {
		return nil, badRequest("max_tokens", "required")
	}
	if *w.MaxTokens < 1 {
		return nil, badRequest("max_tokens", "must be at least 1, got %d", *w.MaxTokens)
	}
	g.maxTokens = *w.MaxTokens
	if !isNull(w.System) {
		text, err := anthropicText(w.System, "system")
		if err != nil {
			return nil, err
		}
		g.text = append(g.text, text)
	}
	if w.Messages == nil {
		return nil, badRequest("messages", "required")
	}
	if len(w.Messages) == 0 {
		return nil, badRequest("messages", "must not be empty")
	}
	toolUses := map[string]bool{}
	for i, raw := range w.Messages {
		text, role, err := anthropicMessage(i, raw, toolUses)
		if err != nil {
			return nil, err
		}
		g.text = append(g.text, text)
		g.lastRole = role
	}
	var err error
	if g.tools, err = parseAnthropicTools(w.Tools); err != nil {
		return nil, err
	}
	if g.toolChoice, g.toolChoiceName, err = parseAnthropicToolChoice(w.ToolChoice); err != nil {
		return nil, err
	}
	switch {
	case g.toolChoice == choiceRequired && len(g.tools) == 0:
		return nil, badRequest("tool_choice", `type "any" needs tools`)
	case g.toolChoice == choiceNamed && g.toolIndex(g.toolChoiceName) < 0:
		return nil, badRequest("tool_choice.name", "%q is not a declared tool", g.toolChoiceName)
	}
	if g.reasoningCap, err = parseThinking(w.Thinking, g.maxTokens); err != nil {
		return nil, err
	}
	return g, nil
}

// anthropicText reads a string or an array of text blocks (system, a
// tool_result's content), joining the texts with newlines; non-text blocks
// (images) carry no text tokens here.
func anthropicText(raw json.RawMessage, field string) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	if raw[0] != '[' {
		return "", badRequest(field, "want a string or an array of content blocks")
	}
	var blocks []json.RawMessage
	if err := unmarshalAt(raw, &blocks, field); err != nil {
		return "", err
	}
	var b strings.Builder
	for j, e := range blocks {
		f := field + "[" + strconv.Itoa(j) + "]"
		var blk anthropicBlock
		if len(e) == 0 || e[0] != '{' {
			return "", badRequest(f, "want a content block object")
		}
		if err := unmarshalAt(e, &blk, f); err != nil {
			return "", err
		}
		if blk.Type == nil {
			return "", badRequest(f+".type", "required")
		}
		if *blk.Type != "text" {
			continue
		}
		if blk.Text == nil {
			return "", badRequest(f+".text", "required")
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*blk.Text)
	}
	return b.String(), nil
}

// anthropicMessage validates message i and returns its text piece and its
// role for tool-call decisions: "tool" for a user message of tool results
// only (the model answers a tool's result, as chat's role tool). A
// tool_result must answer a tool_use of an earlier message (toolUses
// collects their ids).
func anthropicMessage(i int, raw json.RawMessage, toolUses map[string]bool) (text, role string, err error) {
	field := "messages[" + strconv.Itoa(i) + "]"
	if len(raw) == 0 || raw[0] != '{' {
		return "", "", badRequest(field, "want a message object")
	}
	var m struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := unmarshalAt(raw, &m, field); err != nil {
		return "", "", err
	}
	switch {
	case m.Role == nil || *m.Role == "":
		return "", "", badRequest(field+".role", "required")
	case *m.Role != "user" && *m.Role != "assistant":
		return "", "", badRequest(field+".role", `want "user" or "assistant", got %q`, *m.Role)
	case isNull(m.Content):
		return "", "", badRequest(field+".content", "required")
	}
	role = *m.Role
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, role, nil
	}
	if m.Content[0] != '[' {
		return "", "", badRequest(field+".content", "want a string or an array of content blocks")
	}
	var blocks []json.RawMessage
	if err := unmarshalAt(m.Content, &blocks, field+".content"); err != nil {
		return "", "", err
	}
	var b strings.Builder
	results, others := 0, 0
	// Whitespace is free to tokenize.Approx: the separators add no tokens,
	// they keep the pieces apart.
	add := func(t string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	for j, e := range blocks {
		f := field + ".content[" + strconv.Itoa(j) + "]"
		if len(e) == 0 || e[0] != '{' {
			return "", "", badRequest(f, "want a content block object")
		}
		var blk anthropicBlock
		if err := unmarshalAt(e, &blk, f); err != nil {
			return "", "", err
		}
		if blk.Type == nil || *blk.Type == "" {
			return "", "", badRequest(f+".type", "required")
		}
		switch *blk.Type {
		case "text":
			if blk.Text == nil {
				return "", "", badRequest(f+".text", "required")
			}
			add(*blk.Text)
			others++
		case "tool_use":
			switch {
			case role != "assistant":
				return "", "", badRequest(f, "tool_use blocks belong to assistant messages")
			case blk.ID == nil || *blk.ID == "":
				return "", "", badRequest(f+".id", "required")
			case blk.Name == nil || *blk.Name == "":
				return "", "", badRequest(f+".name", "required")
			case isNull(blk.Input) || blk.Input[0] != '{':
				return "", "", badRequest(f+".input", "want a JSON object")
			}
			toolUses[*blk.ID] = true
			add(*blk.Name + " " + string(blk.Input))
			others++
		case "tool_result":
			switch {
			case role != "user":
				return "", "", badRequest(f, "tool_result blocks belong to user messages")
			case blk.ToolUseID == nil || *blk.ToolUseID == "":
				return "", "", badRequest(f+".tool_use_id", "required")
			case !toolUses[*blk.ToolUseID]:
				return "", "", badRequest(f+".tool_use_id", "%q answers no tool_use block of an earlier message", *blk.ToolUseID)
			}
			if !isNull(blk.Content) {
				t, err := anthropicText(blk.Content, f+".content")
				if err != nil {
					return "", "", err
				}
				add(t)
			}
			results++
		case "thinking", "redacted_thinking":
			// Earlier turns' thinking is not part of the prompt (as chat
			// templates drop past reasoning).
		case "image", "document":
			others++ // no text tokens here
		default:
			return "", "", badRequest(f+".type", "unsupported content block type %q", *blk.Type)
		}
	}
	if role == "user" && results > 0 && others == 0 {
		role = "tool"
	}
	return b.String(), role, nil
}

// parseAnthropicTools reads tools: [{"name", "description",
// "input_schema"}]. Names must be unique; server tools (a "type" other
// than "custom") are not simulated.
func parseAnthropicTools(raw json.RawMessage) ([]toolDef, error) {
	return parseToolList(raw, func(field string, e json.RawMessage) (toolDecl, error) {
		var t struct {
			Type        *string         `json:"type"`
			Name        *string         `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := unmarshalAt(e, &t, field); err != nil {
			return toolDecl{}, err
		}
		switch {
		case t.Type != nil && *t.Type != "custom":
			return toolDecl{}, badRequest(field+".type", `only custom tools are simulated, got %q`, *t.Type)
		case t.Name == nil || *t.Name == "":
			return toolDecl{}, badRequest(field+".name", "required")
		}
		return toolDecl{*t.Name, field + ".name", t.InputSchema, field + ".input_schema"}, nil
	})
}

// parseAnthropicToolChoice reads tool_choice: {"type": "auto" | "any" |
// "none" | "tool", "name": ...}; absent means auto. "any" is chat's
// "required".
func parseAnthropicToolChoice(raw json.RawMessage) (toolChoiceKind, string, error) {
	if isNull(raw) {
		return choiceAuto, "", nil
	}
	if raw[0] != '{' {
		return 0, "", badRequest("tool_choice", `want an object {"type": "auto" | "any" | "tool" | "none"}`)
	}
	var c struct {
		Type *string `json:"type"`
		Name *string `json:"name"`
	}
	if err := unmarshalAt(raw, &c, "tool_choice"); err != nil {
		return 0, "", err
	}
	if c.Type == nil {
		return 0, "", badRequest("tool_choice.type", "required")
	}
	switch *c.Type {
	case "auto":
		return choiceAuto, "", nil
	case "any":
		return choiceRequired, "", nil
	case "none":
		return choiceNone, "", nil
	case "tool":
		if c.Name == nil || *c.Name == "" {
			return 0, "", badRequest("tool_choice.name", `required with type "tool"`)
		}
		return choiceNamed, *c.Name, nil
	}
	return 0, "", badRequest("tool_choice.type", `want "auto", "any", "tool" or "none", got %q`, *c.Type)
}

// parseThinking reads thinking: {"type": "enabled", "budget_tokens": N}
// or {"type": "disabled"}. It returns the budget (0: none). The budget
// must be below max_tokens, as Anthropic requires; Anthropic's minimum of
// 1,024 is not enforced, so short simulated answers can think too.
// Whether the simulated model thinks at all is the engine's (its
// reasoning tokens), as on the chat endpoint: a budget only caps it.
func parseThinking(raw json.RawMessage, maxTokens int) (int, error) {
	if isNull(raw) {
		return 0, nil
	}
	if raw[0] != '{' {
		return 0, badRequest("thinking", `want an object {"type": "enabled", "budget_tokens": N}`)
	}
	var t struct {
		Type   *string `json:"type"`
		Budget *int    `json:"budget_tokens"`
	}
	if err := unmarshalAt(raw, &t, "thinking"); err != nil {
		return 0, err
	}
	if t.Type == nil {
		return 0, badRequest("thinking.type", "required")
	}
	switch *t.Type {
	case "disabled":
		return 0, nil
	case "enabled":
	default:
		return 0, badRequest("thinking.type", `want "enabled" or "disabled", got %q`, *t.Type)
	}
	switch {
	case t.Budget == nil:
		return 0, badRequest("thinking.budget_tokens", `required with type "enabled"`)
	case *t.Budget < 1:
		return 0, badRequest("thinking.budget_tokens", "must be at least 1, got %d", *t.Budget)
	case *t.Budget >= maxTokens:
		return 0, badRequest("thinking.budget_tokens", "must be less than max_tokens=%d, got %d", maxTokens, *t.Budget)
	}
	return *t.Budget, nil
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	arrival := s.clock()
	mw := &messagesWire{}
	body, aerr := readBody(w, r)
	if aerr != nil {
		mw.errorAnswer(w, aerr)
		return
	}
	g, err := parseMessagesRequest(body)
	if err != nil {
		mw.errorAnswer(w, err.(*apiError))
		return
	}
	if !s.matchModel(g.model) {
		mw.errorAnswer(w, s.modelNotFound(g.model))
		return
	}
	s.generate(w, r, arrival, g, mw, func(seq uint64) string { return "msg_" + s.idHex(seq) })
}

// idHex is 24 hex digits naming the request of sequence number seq,
// distinct across requests and unlikely to repeat across server runs (the
// server's start time is mixed in).
func (s *Server) idHex(seq uint64) string {
	const hexDigits = "0123456789abcdef"
	var b [24]byte
	v := sim.Mix64(uint64(s.base.UnixNano()) + seq*0x9e3779b97f4a7c15)
	for k := 15; k >= 0; k-- {
		b[k] = hexDigits[v&15]
		v >>= 4
	}
	for k, w := 23, seq; k >= 16; k-- {
		b[k] = hexDigits[w&15]
		w >>= 4
	}
	return string(b[:])
}

// anthropicErrorType names an HTTP status's error class as Anthropic does.
func anthropicErrorType(status int) string {
	switch status {
	case 400, 405:
		return "invalid_request_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// appendAnthropicError appends Anthropic's error object.
func appendAnthropicError(dst []byte, status int, msg string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":"`...)
	dst = append(dst, anthropicErrorType(status)...)
	dst = append(dst, `","message":`...)
	dst = appendJSONString(dst, msg)
	return append(dst, "}}"...)
}

// stopReason is Anthropic's name for a plan's finish reason.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls":
		return "tool_use"
	}
	return "end_turn"
}

// Anthropic content block kinds, for the block a stream has open.
const (
	blockNone uint8 = iota
	blockThinking
	blockText
	blockTool
)

// messagesWire writes Anthropic Messages answers. A stream is
//
//	message_start, ping,
//	[thinking block: content_block_start, thinking_delta…, signature_delta, content_block_stop]
//	[text block: content_block_start, text_delta…, content_block_stop]
//	[per tool call: content_block_start (tool_use), input_json_delta…, content_block_stop]
//	message_delta (stop_reason, usage), message_stop
//
// each as an "event:" line naming the type and a "data:" line whose JSON
// has it again in "type". message_start waits for the first token, when
// the prefix-cache hit is known, so its usage is exact.
type messagesWire struct {
	rc      *http.ResponseController
	started bool  // message_start sent
	open    uint8 // the open block's kind
	index   int   // the open block's index; the next block's is index+1
	call    int   // blockTool: the open call
}

var _ wire = (*messagesWire)(nil)

func (*messagesWire) errorAnswer(w http.ResponseWriter, e *apiError) {
	body := appendAnthropicError(nil, e.status, e.message)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

func (mw *messagesWire) start(rs *response) bool {
	h := rs.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	rs.w.WriteHeader(http.StatusOK)
	mw.rc = http.NewResponseController(rs.w)
	mw.index = -1
	return mw.rc.Flush() == nil
}

// emit writes the events in b at once and flushes them.
func (mw *messagesWire) emit(rs *response, b []byte) bool {
	rs.buf = b
	if _, err := rs.w.Write(b); err != nil {
		return false
	}
	return mw.rc.Flush() == nil
}

// openEvent starts an SSE event of type typ; closeEvent ends it. The data
// is built by appending (one line: the JSON has no raw line breaks).
func openEvent(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: "...)
	return dst
}

func closeEvent(dst []byte) []byte { return append(dst, "\n\n"...) }

// appendAnthropicUsage appends the usage object: Anthropic's input_tokens
// are the prompt tokens not read from the cache.
func appendAnthropicUsage(dst []byte, rs *response, output int) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rs.p.info.tokens-rs.cached), 10)
	dst = append(dst, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rs.cached), 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(output), 10)
	return append(dst, '}')
}

func (mw *messagesWire) appendStart(dst []byte, rs *response) []byte {
	mw.started = true
	dst = openEvent(dst, "message_start")
	dst = append(dst, `{"type":"message_start","message":{"id":`...)
	dst = appendJSONString(dst, rs.respID)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = appendJSONString(dst, rs.s.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	dst = appendAnthropicUsage(dst, rs, 1)
	dst = closeEvent(append(dst, "}}"...))
	dst = openEvent(dst, "ping")
	return closeEvent(append(dst, `{"type":"ping"}`...))
}

// appendOpen closes the open block and opens one of kind (call: the tool
// call of a blockTool).
func (mw *messagesWire) appendOpen(dst []byte, rs *response, kind uint8, call int) []byte {
	dst = mw.appendClose(dst, rs)
	mw.open, mw.call = kind, call
	mw.index++
	dst = openEvent(dst, "content_block_start")
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = strconv.AppendInt(dst, int64(mw.index), 10)
	switch kind {
	case blockThinking:
		dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	case blockText:
		dst = append(dst, `,"content_block":{"type":"text","text":""}}`...)
	case blockTool:
		c := &rs.p.calls[call]
		dst = append(dst, `,"content_block":{"type":"tool_use","id":"`...)
		dst = appendToolUseID(dst, c)
		dst = append(dst, `","name":`...)
		dst = appendJSONString(dst, c.name)
		dst = append(dst, `,"input":{}}}`...)
	}
	return closeEvent(dst)
}

// appendClose closes the open block, if any: a thinking block gets its
// signature first.
func (mw *messagesWire) appendClose(dst []byte, rs *response) []byte {
	if mw.open == blockNone {
		return dst
	}
	if mw.open == blockThinking {
		dst = mw.appendDeltaHead(dst, "signature_delta")
		dst = append(dst, `,"signature":"`...)
		dst = appendSignature(dst, rs)
		dst = closeEvent(append(dst, `"}}`...))
	}
	dst = openEvent(dst, "content_block_stop")
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = strconv.AppendInt(dst, int64(mw.index), 10)
	mw.open = blockNone
	return closeEvent(append(dst, '}'))
}

// appendDeltaHead opens a content_block_delta event up to the delta's type.
func (mw *messagesWire) appendDeltaHead(dst []byte, typ string) []byte {
	dst = openEvent(dst, "content_block_delta")
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(mw.index), 10)
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, typ...)
	return append(dst, '"')
}

func (mw *messagesWire) piece(rs *response, d delivery, _ bool) bool {
	b := rs.buf[:0]
	if !mw.started {
		b = mw.appendStart(b, rs)
	}
	from := rs.generated
	rs.count(d)
	switch {
	case rs.p.calls != nil:
		b = mw.appendCalls(b, rs, from, d.tokens)
	case d.hidden:
		if mw.open != blockThinking {
			b = mw.appendOpen(b, rs, blockThinking, 0)
		}
		b = mw.appendDeltaHead(b, "thinking_delta")
		b = append(b, `,"thinking":"`...)
		b = appendFiller(b, rs.st.seq, from, d.tokens)
		b = closeEvent(append(b, `"}}`...))
	default:
		if mw.open != blockText {
			b = mw.appendOpen(b, rs, blockText, 0)
		}
		b = mw.appendDeltaHead(b, "text_delta")
		b = append(b, `,"text":"`...)
		b = appendFiller(b, rs.st.seq, from, d.tokens)
		b = closeEvent(append(b, `"}}`...))
	}
	return mw.emit(rs, b)
}

// appendCalls appends the events of output tokens [from, from+n) of a
// tool-call answer: a call's first token opens its tool_use block, the
// others are its input's JSON text as input_json_delta.
func (mw *messagesWire) appendCalls(dst []byte, rs *response, from, n int) []byte {
	per := rs.p.callTokens
	for pc := range callPieces(len(rs.p.calls), per, from, n) {
		ci := pc.call
		if pc.from == 0 || mw.open != blockTool || mw.call != ci {
			dst = mw.appendOpen(dst, rs, blockTool, ci)
		}
		mark := len(dst)
		dst = mw.appendDeltaHead(dst, "input_json_delta")
		dst = append(dst, `,"partial_json":"`...)
		body := len(dst)
		dst = appendToolArgs(dst, &rs.p.calls[ci], true, rs.st.seq, ci*per, per, pc.from, pc.to)
		if len(dst) == body {
			dst = dst[:mark] // the name token: no input text yet
		} else {
			dst = closeEvent(append(dst, `"}}`...))
		}
	}
	return dst
}

func (mw *messagesWire) end(rs *response) {
	b := rs.buf[:0]
	if !mw.started {
		b = mw.appendStart(b, rs)
	}
	b = mw.appendClose(b, rs)
	b = openEvent(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":"`...)
	b = append(b, stopReason(rs.p.finish)...)
	b = append(b, `","stop_sequence":null},"usage":`...)
	b = appendAnthropicUsage(b, rs, rs.generated)
	b = closeEvent(append(b, '}'))
	b = openEvent(b, "message_stop")
	b = closeEvent(append(b, `{"type":"message_stop"}`...))
	mw.emit(rs, b)
}

func (mw *messagesWire) failStream(rs *response, status int, msg string) {
	b := openEvent(rs.buf[:0], "error")
	b = closeEvent(appendAnthropicError(b, status, msg))
	mw.emit(rs, b)
}

func (*messagesWire) accumulate(rs *response, d delivery) { rs.count(d) }

// whole writes the non-streamed message. Its text is rebuilt from the
// counts (a request's token text is a function of its sequence number and
// the token's index), so nothing is kept while it runs.
func (mw *messagesWire) whole(rs *response) {
	type block struct {
		Type      string          `json:"type"`
		Thinking  *string         `json:"thinking,omitempty"`
		Signature *string         `json:"signature,omitempty"`
		Text      *string         `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
	}
	content := []block{}
	if rs.p.calls != nil {
		for _, c := range wholeToolCalls(rs.p.calls, rs.st.seq, rs.p.callTokens, rs.generated) {
			in := json.RawMessage(c.Function.Arguments)
			if !json.Valid(in) {
				in = json.RawMessage("{}") // cut by max_tokens mid-call
			}
			id := string(appendToolUseID(nil, &toolCall{id: c.ID}))
			content = append(content, block{Type: "tool_use", ID: id, Name: c.Function.Name, Input: in})
		}
	} else {
		if rs.reasoning > 0 {
			t := string(appendFiller(nil, rs.st.seq, 0, rs.reasoning))
			sig := string(appendSignature(nil, rs))
			content = append(content, block{Type: "thinking", Thinking: &t, Signature: &sig})
		}
		if n := rs.generated - rs.reasoning; n > 0 {
			t := string(appendFiller(nil, rs.st.seq, rs.reasoning, n))
			content = append(content, block{Type: "text", Text: &t})
		}
	}
	writeJSON(rs.w, http.StatusOK, struct {
		ID           string          `json:"id"`
		Type         string          `json:"type"`
		Role         string          `json:"role"`
		Model        string          `json:"model"`
		Content      []block         `json:"content"`
		StopReason   string          `json:"stop_reason"`
		StopSequence *string         `json:"stop_sequence"`
		Usage        json.RawMessage `json:"usage"`
	}{rs.respID, "message", "assistant", rs.s.model, content, stopReason(rs.p.finish), nil,
		appendAnthropicUsage(nil, rs, rs.generated)})
}

// appendToolUseID appends Anthropic's id for call c: "toolu_" and the hex
// digits of its chat id ("call_…").
func appendToolUseID(dst []byte, c *toolCall) []byte {
	dst = append(dst, "toolu_"...)
	return append(dst, strings.TrimPrefix(c.id, "call_")...)
}

// appendSignature appends a thinking block's signature: opaque base64,
// deterministic per request (Anthropic's verifies the thinking; this one
// only has its shape).
func appendSignature(dst []byte, rs *response) []byte {
	var raw [48]byte
	h := fnv64(fnvOffset64, []byte(rs.respID))
	for i := 0; i < len(raw); i += 8 {
		v := sim.Mix64(h + uint64(i))
		for k := range 8 {
			raw[i+k] = byte(v >> (8 * k))
		}
	}
	return base64.StdEncoding.AppendEncode(dst, raw[:])
}
