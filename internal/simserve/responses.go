package simserve

import (
	"container/list"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// OpenAI's Responses API (POST /v1/responses) over the same engine as the
// chat endpoint: the same planning, timing, metrics, reasoning and tool
// calls, in the Responses request and event shapes, with server-side
// history: a stored response's input and output are prepended to a request
// that names it as previous_response_id, so the prefix cache finds them as
// it finds a resent chat history.

// DefaultMaxStoredResponses is how many responses are kept for
// previous_response_id when Options.MaxStoredResponses is 0.
const DefaultMaxStoredResponses = 10000

// maxStoredBytes bounds the text the response store holds (each entry's
// own input and output), beside the entry count: 10,000 long prompts
// would otherwise hold gigabytes.
const maxStoredBytes = 256 << 20

// responsesRequest is the JSON body of /v1/responses. Fields the simulator
// has no use for (temperature, top_p, metadata, text, truncation, user,
// parallel_tool_calls, ...) are accepted and ignored. ignore_eos is vLLM's
// extension: with it the answer is max_output_tokens long.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Reasoning          json.RawMessage `json:"reasoning"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             bool            `json:"stream"`
	IgnoreEOS          bool            `json:"ignore_eos"`
}

// callRef is a function_call_output item: its index in input and the
// call it answers.
type callRef struct {
	item   int
	callID string
}

// responsesParsed is a validated /v1/responses request.
type responsesParsed struct {
	// g's text is the input's pieces only; the handler prepends the
	// instructions and the previous response's history.
	g            *genRequest
	input        []string       // one text piece per input item with text
	inputCalls   map[string]int // function_call items' call_id → item index
	outputs      []callRef      // function_call_output items
	instructions *string
	prevID       string
	store        bool
	maxOutput    *int
	effort       *string
	tools        json.RawMessage // as sent, echoed in the response object
	toolChoice   json.RawMessage
}

// parseResponsesRequest decodes and validates a /v1/responses body.
// Errors are *apiError with status 400 naming the field.
func parseResponsesRequest(body []byte) (*responsesParsed, error) {
	var w responsesRequest
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	g := &genRequest{chat: true, model: w.Model, stream: w.Stream, ignoreEOS: w.IgnoreEOS,
		promptParam: "input", maxParam: "max_output_tokens"}
	pr := &responsesParsed{g: g, instructions: w.Instructions, store: true, maxOutput: w.MaxOutputTokens,
		tools: w.Tools, toolChoice: w.ToolChoice, inputCalls: map[string]int{}}
	if w.Store != nil {
		pr.store = *w.Store
	}
	if w.PreviousResponseID != nil {
		if *w.PreviousResponseID == "" {
			return nil, badRequest("previous_response_id", "must not be empty")
		}
		pr.prevID = *w.PreviousResponseID
	}
	if w.MaxOutputTokens != nil {
		if *w.MaxOutputTokens < 1 {
			return nil, badRequest("max_output_tokens", "must be at least 1, got %d", *w.MaxOutputTokens)
		}
		g.maxTokens = *w.MaxOutputTokens
	}
	if err := pr.parseInput(w.Input); err != nil {
		return nil, err
	}
	var err error
	if g.tools, err = parseResponsesTools(w.Tools); err != nil {
		return nil, err
	}
	if g.toolChoice, g.toolChoiceName, err = parseResponsesToolChoice(w.ToolChoice); err != nil {
		return nil, err
	}
	switch {
	case g.toolChoice == choiceRequired && len(g.tools) == 0:
		return nil, badRequest("tool_choice", `"required" needs tools`)
	case g.toolChoice == choiceNamed && g.toolIndex(g.toolChoiceName) < 0:
		return nil, badRequest("tool_choice.name", "%q is not a declared tool", g.toolChoiceName)
	}
	if pr.effort, err = parseReasoning(w.Reasoning); err != nil {
		return nil, err
	}
	return pr, nil
}

// parseInput reads input: a string (one user message) or an array of
// items: messages ({role, content}, "type":"message" optional),
// function_call {call_id, name, arguments}, function_call_output {call_id,
// output} and reasoning (accepted, not part of the prompt, as chat
// templates drop past reasoning).
func (pr *responsesParsed) parseInput(raw json.RawMessage) error {
	g := pr.g
	if isNull(raw) {
		return badRequest("input", "required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		pr.input, g.lastRole = []string{s}, "user"
		return nil
	}
	if raw[0] != '[' {
		return badRequest("input", "want a string or an array of input items")
	}
	var items []json.RawMessage
	if err := unmarshalAt(raw, &items, "input"); err != nil {
		return err
	}
	if len(items) == 0 {
		return badRequest("input", "must not be empty")
	}
	for i, e := range items {
		f := "input[" + strconv.Itoa(i) + "]"
		if len(e) == 0 || e[0] != '{' {
			return badRequest(f, "want an input item object")
		}
		var it struct {
			Type      *string         `json:"type"`
			Role      *string         `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    *string         `json:"call_id"`
			Name      *string         `json:"name"`
			Arguments *string         `json:"arguments"`
			Output    json.RawMessage `json:"output"`
		}
		if err := unmarshalAt(e, &it, f); err != nil {
			return err
		}
		typ := "message"
		if it.Type != nil {
			typ = *it.Type
		} else if it.Role == nil {
			return badRequest(f+".type", "required (or a message's role)")
		}
		switch typ {
		case "message":
			if it.Role == nil || *it.Role == "" {
				return badRequest(f+".role", "required")
			}
			switch *it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return badRequest(f+".role", `want "user", "assistant", "system" or "developer", got %q`, *it.Role)
			}
			if isNull(it.Content) {
				return badRequest(f+".content", "required")
			}
			text, err := responsesText(it.Content, f+".content")
			if err != nil {
				return err
			}
			pr.input = append(pr.input, text)
			g.lastRole = *it.Role
		case "function_call":
			switch {
			case it.CallID == nil || *it.CallID == "":
				return badRequest(f+".call_id", "required")
			case it.Name == nil || *it.Name == "":
				return badRequest(f+".name", "required")
			case it.Arguments == nil:
				return badRequest(f+".arguments", "required")
			}
			pr.inputCalls[*it.CallID] = i
			// As chat's messagePiece renders a call: name, then arguments.
			pr.input = append(pr.input, *it.Name+" "+*it.Arguments)
			g.lastRole = "assistant"
		case "function_call_output":
			if it.CallID == nil || *it.CallID == "" {
				return badRequest(f+".call_id", "required")
			}
			if isNull(it.Output) {
				return badRequest(f+".output", "required")
			}
			text, err := responsesText(it.Output, f+".output")
			if err != nil {
				return err
			}
			pr.outputs = append(pr.outputs, callRef{item: i, callID: *it.CallID})
			pr.input = append(pr.input, text)
			g.lastRole = "tool"
		case "reasoning":
			g.lastRole = "assistant"
		default:
			return badRequest(f+".type", "unsupported input item type %q", typ)
		}
	}
	return nil
}

// responsesText reads a content value: a string or an array of parts
// (input_text and output_text carry text; images, files and audio carry no
// text tokens here).
func responsesText(raw json.RawMessage, field string) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	if raw[0] != '[' {
		return "", badRequest(field, "want a string or an array of content parts")
	}
	var parts []json.RawMessage
	if err := unmarshalAt(raw, &parts, field); err != nil {
		return "", err
	}
	var b strings.Builder
	for j, e := range parts {
		f := field + "[" + strconv.Itoa(j) + "]"
		if len(e) == 0 || e[0] != '{' {
			return "", badRequest(f, "want a content part object")
		}
		var p struct {
			Type *string `json:"type"`
			Text *string `json:"text"`
		}
		if err := unmarshalAt(e, &p, f); err != nil {
			return "", err
		}
		if p.Type == nil || *p.Type == "" {
			return "", badRequest(f+".type", "required")
		}
		switch *p.Type {
		case "input_text", "output_text":
			if p.Text == nil {
				return "", badRequest(f+".text", "required")
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(*p.Text)
		case "input_image", "input_file", "input_audio", "refusal":
		default:
			return "", badRequest(f+".type", "unsupported content part type %q", *p.Type)
		}
	}
	return b.String(), nil
}

// parseResponsesTools reads tools: [{"type":"function", "name",
// "description", "parameters", "strict"}]. Built-in tools (web_search,
// file_search, ...) are not simulated.
func parseResponsesTools(raw json.RawMessage) ([]toolDef, error) {
	return parseToolList(raw, func(field string, e json.RawMessage) (toolDecl, error) {
		var t struct {
			Type       *string         `json:"type"`
			Name       *string         `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := unmarshalAt(e, &t, field); err != nil {
			return toolDecl{}, err
		}
		switch {
		case t.Type == nil:
			return toolDecl{}, badRequest(field+".type", "required")
		case *t.Type != "function":
			return toolDecl{}, badRequest(field+".type", `only "function" tools are simulated, got %q`, *t.Type)
		case t.Name == nil || *t.Name == "":
			return toolDecl{}, badRequest(field+".name", "required")
		}
		return toolDecl{*t.Name, field + ".name", t.Parameters, field + ".parameters"}, nil
	})
}

// parseResponsesToolChoice reads tool_choice: "none", "auto", "required"
// or {"type":"function","name":...}. Absent means auto.
func parseResponsesToolChoice(raw json.RawMessage) (toolChoiceKind, string, error) {
	if kind, ok, err := toolChoiceWord(raw); ok || err != nil {
		return kind, "", err
	}
	var c struct {
		Type *string `json:"type"`
		Name *string `json:"name"`
	}
	if err := unmarshalAt(raw, &c, "tool_choice"); err != nil {
		return 0, "", err
	}
	switch {
	case c.Type == nil:
		return 0, "", badRequest("tool_choice.type", "required")
	case *c.Type != "function":
		return 0, "", badRequest("tool_choice.type", `only "function" is simulated, got %q`, *c.Type)
	case c.Name == nil || *c.Name == "":
		return 0, "", badRequest("tool_choice.name", "required")
	}
	return choiceNamed, *c.Name, nil
}

// parseReasoning reads reasoning: {"effort": ..., "summary": ...}. The
// effort is checked and echoed; how much the simulated model thinks is the
// engine's (its reasoning tokens), as on the chat endpoint.
func parseReasoning(raw json.RawMessage) (*string, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, badRequest("reasoning", `want an object {"effort": ...}`)
	}
	var r struct {
		Effort *string `json:"effort"`
	}
	if err := unmarshalAt(raw, &r, "reasoning"); err != nil {
		return nil, err
	}
	if r.Effort != nil {
		switch *r.Effort {
		case "none", "minimal", "low", "medium", "high", "xhigh":
		default:
			return nil, badRequest("reasoning.effort", `want "none", "minimal", "low", "medium", "high" or "xhigh", got %q`, *r.Effort)
		}
	}
	return r.Effort, nil
}

// storedResponse is one response kept for previous_response_id: its own
// input and output pieces, and the response it continued. Immutable once
// stored.
type storedResponse struct {
	id      string
	parent  *storedResponse // kept alive by the pointer even once evicted
	pieces  []string        // input item pieces, then output item pieces
	callIDs []string        // function calls among them (input and output)
	size    int             // bytes of pieces, for the store's bound
}

// history returns the conversation up to and including r: every piece of
// r's chain, oldest first, and the call ids made in it.
func (r *storedResponse) history() (pieces []string, calls map[string]bool) {
	calls = map[string]bool{}
	var chain []*storedResponse
	for e := r; e != nil; e = e.parent {
		chain = append(chain, e)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		pieces = append(pieces, chain[i].pieces...)
		for _, c := range chain[i].callIDs {
			calls[c] = true
		}
	}
	return pieces, calls
}

// responseStore keeps stored responses by id, least recently used evicted
// first beyond max entries or maxBytes of text. Safe for concurrent use.
type responseStore struct {
	mu            sync.Mutex
	max, maxBytes int
	bytes         int
	byID          map[string]*list.Element
	lru           list.List // of *storedResponse, most recently used first
}

func newResponseStore(max, maxBytes int) *responseStore {
	return &responseStore{max: max, maxBytes: maxBytes, byID: map[string]*list.Element{}}
}

// get returns the response stored as id, or nil.
func (st *responseStore) get(id string) *storedResponse {
	st.mu.Lock()
	defer st.mu.Unlock()
	el := st.byID[id]
	if el == nil {
		return nil
	}
	st.lru.MoveToFront(el)
	return el.Value.(*storedResponse)
}

// put stores r, evicting the least recently used beyond the bounds.
func (st *responseStore) put(r *storedResponse) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if el := st.byID[r.id]; el != nil {
		st.bytes -= el.Value.(*storedResponse).size
		st.lru.Remove(el)
	}
	st.byID[r.id] = st.lru.PushFront(r)
	st.bytes += r.size
	for st.lru.Len() > 1 && (st.lru.Len() > st.max || st.bytes > st.maxBytes) {
		old := st.lru.Back()
		o := old.Value.(*storedResponse)
		st.lru.Remove(old)
		delete(st.byID, o.id)
		st.bytes -= o.size
	}
}

// len returns the number of stored responses.
func (st *responseStore) len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lru.Len()
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	arrival := s.clock()
	rw := &responsesWire{}
	body, aerr := readBody(w, r)
	if aerr != nil {
		rw.errorAnswer(w, aerr)
		return
	}
	pr, err := parseResponsesRequest(body)
	if err != nil {
		rw.errorAnswer(w, err.(*apiError))
		return
	}
	if !s.matchModel(pr.g.model) {
		rw.errorAnswer(w, s.modelNotFound(pr.g.model))
		return
	}
	var hist []string
	calls := map[string]bool{}
	if pr.prevID != "" {
		rw.parent = s.stored.get(pr.prevID)
		if rw.parent == nil {
			e := badRequest("previous_response_id", "no stored response %q (never stored, stored with store=false, or evicted)", pr.prevID)
			e.code = "previous_response_not_found"
			rw.errorAnswer(w, e)
			return
		}
		hist, calls = rw.parent.history()
	}
	for _, o := range pr.outputs {
		if at, ok := pr.inputCalls[o.callID]; !calls[o.callID] && (!ok || at > o.item) {
			rw.errorAnswer(w, badRequest("input["+strconv.Itoa(o.item)+"].call_id",
				"%q answers no function call in the input before it or in the previous response", o.callID))
			return
		}
	}
	// The instructions come first (they are not carried over from the
	// previous response, as OpenAI's are not), so a conversation that keeps
	// them keeps its prefix.
	g := pr.g
	g.text = make([]string, 0, 1+len(hist)+len(pr.input))
	if pr.instructions != nil {
		g.text = append(g.text, *pr.instructions)
	}
	g.text = append(append(g.text, hist...), pr.input...)
	rw.req = pr
	s.generate(w, r, arrival, g, rw, func(seq uint64) string { return "resp_" + s.idHex(seq) })
}

// responsesErrorType names an HTTP status's error type and default code as
// OpenAI's API does.
func responsesErrorType(status int) (typ, code string) {
	switch status {
	case 400, 405, 413:
		return "invalid_request_error", ""
	case 404:
		return "invalid_request_error", "model_not_found"
	case 429:
		return "rate_limit_error", "rate_limit_exceeded"
	case 503:
		return "server_error", "server_is_overloaded"
	}
	return "server_error", "server_error"
}

// Responses output item kinds, for the item a stream has open.
const (
	itemNone uint8 = iota
	itemReasoning
	itemMessage
	itemCall
)

// responsesWire writes Responses answers. A stream is
//
//	response.created, response.in_progress,
//	[reasoning item: response.output_item.added, response.reasoning_text.delta…,
//	 response.reasoning_text.done, response.output_item.done]
//	[message item: response.output_item.added, response.content_part.added,
//	 response.output_text.delta…, response.output_text.done,
//	 response.content_part.done, response.output_item.done]
//	[per function call: response.output_item.added, response.function_call_arguments.delta…,
//	 response.function_call_arguments.done, response.output_item.done]
//	response.completed, or response.incomplete when cut by max_output_tokens
//
// each with an "event:" line naming the type and a "data:" line whose JSON
// has "type" and "sequence_number" (0, 1, ...). Reasoning goes out as
// reasoning_text (the raw reasoning, as vLLM streams it), not as a summary.
// A failure after the stream started is an "error" event. No [DONE].
type responsesWire struct {
	req    *responsesParsed
	parent *storedResponse
	rc     *http.ResponseController
	seqNo  int
	open   uint8 // the open item's kind
	call   int   // itemCall: the open call
}

var _ wire = (*responsesWire)(nil)

func (*responsesWire) errorAnswer(w http.ResponseWriter, e *apiError) {
	typ, code := responsesErrorType(e.status)
	if e.code != "" {
		code = e.code
	}
	b := append([]byte(nil), `{"error":{"message":`...)
	b = appendJSONString(b, e.message)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","param":`...)
	b = appendNullString(b, e.param)
	b = append(b, `,"code":`...)
	b = appendNullString(b, code)
	b = append(b, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// appendNullString appends s as a JSON string, or null when empty.
func appendNullString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, s)
}

// hex is the response's id without its "resp_" prefix: the item ids
// share it.
func (rw *responsesWire) hex(rs *response) string { return strings.TrimPrefix(rs.respID, "resp_") }

// openEvent starts event typ with its type and sequence number; the
// caller appends further fields (each with a leading comma) and closes it
// with closeObjEvent.
func (rw *responsesWire) openEvent(dst []byte, typ string) []byte {
	dst = openEvent(dst, typ)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(rw.seqNo), 10)
	rw.seqNo++
	return dst
}

func closeObjEvent(dst []byte) []byte { return closeEvent(append(dst, '}')) }

func (rw *responsesWire) emit(rs *response, b []byte) bool {
	rs.buf = b
	if _, err := rs.w.Write(b); err != nil {
		return false
	}
	return rw.rc.Flush() == nil
}

func (rw *responsesWire) start(rs *response) bool {
	h := rs.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	rs.w.WriteHeader(http.StatusOK)
	rw.rc = http.NewResponseController(rs.w)
	obj := rw.object(rs, "in_progress", false)
	b := rw.openEvent(rs.buf[:0], "response.created")
	b = append(append(b, `,"response":`...), obj...)
	b = closeObjEvent(b)
	b = rw.openEvent(b, "response.in_progress")
	b = append(append(b, `,"response":`...), obj...)
	return rw.emit(rs, closeObjEvent(b))
}

// outputIndex is the output index of an item: reasoning first, then the
// message; calls by their index (a tool-call answer has nothing else).
func (rw *responsesWire) outputIndex(rs *response, kind uint8, call int) int {
	switch kind {
	case itemMessage:
		if rs.reasoning > 0 {
			return 1
		}
		return 0
	case itemCall:
		return call
	}
	return 0
}

// appendItemRef appends the item_id and output_index fields of an event.
func (rw *responsesWire) appendItemRef(dst []byte, rs *response, kind uint8, call int) []byte {
	dst = append(dst, `,"item_id":"`...)
	dst = rw.appendItemID(dst, rs, kind, call)
	dst = append(dst, `","output_index":`...)
	return strconv.AppendInt(dst, int64(rw.outputIndex(rs, kind, call)), 10)
}

func (rw *responsesWire) appendItemID(dst []byte, rs *response, kind uint8, call int) []byte {
	switch kind {
	case itemReasoning:
		return append(append(dst, "rs_"...), rw.hex(rs)...)
	case itemMessage:
		return append(append(dst, "msg_"...), rw.hex(rs)...)
	}
	dst = append(dst, "fc_"...)
	return append(dst, strings.TrimPrefix(rs.p.calls[call].id, "call_")...)
}

// appendItemText appends an item's whole text so far (JSON string
// content): rebuilt from the counts, since a request's token text is a
// function of its sequence number and the token's index.
func (rw *responsesWire) appendItemText(dst []byte, rs *response, kind uint8, call int) []byte {
	switch kind {
	case itemReasoning:
		return appendFiller(dst, rs.st.seq, 0, rs.reasoning)
	case itemMessage:
		return appendFiller(dst, rs.st.seq, rs.reasoning, rs.generated-rs.reasoning)
	}
	per := rs.p.callTokens
	from := call * per
	return appendToolArgs(dst, &rs.p.calls[call], true, rs.st.seq, from, per, 0, min(per, max(rs.generated-from, 0)))
}

// appendItem appends an output item: as added (in progress, empty) or as
// done (with its whole text; status incomplete for the last item of an
// answer cut by max_output_tokens).
func (rw *responsesWire) appendItem(dst []byte, rs *response, kind uint8, call int, done bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
		if rs.p.finish == "length" && rw.isLast(rs, kind, call) {
			status = "incomplete"
		}
	}
	dst = append(dst, `{"id":"`...)
	dst = rw.appendItemID(dst, rs, kind, call)
	switch kind {
	case itemReasoning:
		dst = append(dst, `","type":"reasoning","summary":[],"content":[`...)
		if done {
			dst = append(dst, `{"type":"reasoning_text","text":"`...)
			dst = rw.appendItemText(dst, rs, kind, call)
			dst = append(dst, `"}`...)
		}
		dst = append(dst, `],"status":"`...)
		dst = append(dst, status...)
		return append(dst, `"}`...)
	case itemMessage:
		dst = append(dst, `","type":"message","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","role":"assistant","content":[`...)
		if done {
			dst = rw.appendTextPart(dst, rs)
		}
		return append(dst, "]}"...)
	}
	c := &rs.p.calls[call]
	dst = append(dst, `","type":"function_call","status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","call_id":"`...)
	dst = append(dst, c.id...)
	dst = append(dst, `","name":`...)
	dst = appendJSONString(dst, c.name)
	dst = append(dst, `,"arguments":"`...)
	if done {
		dst = rw.appendItemText(dst, rs, kind, call)
	}
	return append(dst, `"}`...)
}

func (rw *responsesWire) appendTextPart(dst []byte, rs *response) []byte {
	dst = append(dst, `{"type":"output_text","text":"`...)
	dst = rw.appendItemText(dst, rs, itemMessage, 0)
	return append(dst, `","annotations":[],"logprobs":[]}`...)
}

// isLast reports whether the item is the answer's last.
func (rw *responsesWire) isLast(rs *response, kind uint8, call int) bool {
	if kind == itemCall {
		return (call+1)*rs.p.callTokens >= rs.generated
	}
	return kind == itemMessage || rs.generated == rs.reasoning
}

// appendOpen closes the open item and opens one of kind.
func (rw *responsesWire) appendOpen(dst []byte, rs *response, kind uint8, call int) []byte {
	dst = rw.appendClose(dst, rs)
	rw.open, rw.call = kind, call
	dst = rw.openEvent(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(rw.outputIndex(rs, kind, call)), 10)
	dst = append(dst, `,"item":`...)
	dst = closeObjEvent(rw.appendItem(dst, rs, kind, call, false))
	if kind == itemMessage {
		dst = rw.openEvent(dst, "response.content_part.added")
		dst = rw.appendItemRef(dst, rs, kind, call)
		dst = append(dst, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`...)
		dst = closeObjEvent(dst)
	}
	return dst
}

// appendClose closes the open item, if any, with its done events.
func (rw *responsesWire) appendClose(dst []byte, rs *response) []byte {
	kind, call := rw.open, rw.call
	switch kind {
	case itemNone:
		return dst
	case itemReasoning:
		dst = rw.openEvent(dst, "response.reasoning_text.done")
		dst = rw.appendItemRef(dst, rs, kind, call)
		dst = append(dst, `,"content_index":0,"text":"`...)
		dst = closeObjEvent(append(rw.appendItemText(dst, rs, kind, call), '"'))
	case itemMessage:
		dst = rw.openEvent(dst, "response.output_text.done")
		dst = rw.appendItemRef(dst, rs, kind, call)
		dst = append(dst, `,"content_index":0,"text":"`...)
		dst = append(rw.appendItemText(dst, rs, kind, call), `","logprobs":[]`...)
		dst = closeObjEvent(dst)
		dst = rw.openEvent(dst, "response.content_part.done")
		dst = rw.appendItemRef(dst, rs, kind, call)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = closeObjEvent(rw.appendTextPart(dst, rs))
	case itemCall:
		dst = rw.openEvent(dst, "response.function_call_arguments.done")
		dst = rw.appendItemRef(dst, rs, kind, call)
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, rs.p.calls[call].name)
		dst = append(dst, `,"arguments":"`...)
		dst = closeObjEvent(append(rw.appendItemText(dst, rs, kind, call), '"'))
	}
	dst = rw.openEvent(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(rw.outputIndex(rs, kind, call)), 10)
	dst = append(dst, `,"item":`...)
	dst = closeObjEvent(rw.appendItem(dst, rs, kind, call, true))
	rw.open = itemNone
	return dst
}

func (rw *responsesWire) piece(rs *response, d delivery, _ bool) bool {
	b := rs.buf[:0]
	from := rs.generated
	rs.count(d)
	switch {
	case rs.p.calls != nil:
		b = rw.appendCalls(b, rs, from, d.tokens)
	case d.hidden:
		if rw.open != itemReasoning {
			b = rw.appendOpen(b, rs, itemReasoning, 0)
		}
		b = rw.openEvent(b, "response.reasoning_text.delta")
		b = rw.appendItemRef(b, rs, itemReasoning, 0)
		b = append(b, `,"content_index":0,"delta":"`...)
		b = closeObjEvent(append(appendFiller(b, rs.st.seq, from, d.tokens), '"'))
	default:
		if rw.open != itemMessage {
			b = rw.appendOpen(b, rs, itemMessage, 0)
		}
		b = rw.openEvent(b, "response.output_text.delta")
		b = rw.appendItemRef(b, rs, itemMessage, 0)
		b = append(b, `,"content_index":0,"delta":"`...)
		b = append(appendFiller(b, rs.st.seq, from, d.tokens), `","logprobs":[]`...)
		b = closeObjEvent(b)
	}
	return rw.emit(rs, b)
}

// appendCalls appends the events of output tokens [from, from+n) of a
// tool-call answer: a call's first token (its name) opens its item, the
// others are its arguments' text.
func (rw *responsesWire) appendCalls(dst []byte, rs *response, from, n int) []byte {
	per := rs.p.callTokens
	for pc := range callPieces(len(rs.p.calls), per, from, n) {
		ci := pc.call
		if pc.from == 0 || rw.open != itemCall || rw.call != ci {
			dst = rw.appendOpen(dst, rs, itemCall, ci)
		}
		mark, seqNo := len(dst), rw.seqNo
		dst = rw.openEvent(dst, "response.function_call_arguments.delta")
		dst = rw.appendItemRef(dst, rs, itemCall, ci)
		dst = append(dst, `,"delta":"`...)
		body := len(dst)
		dst = appendToolArgs(dst, &rs.p.calls[ci], true, rs.st.seq, ci*per, per, pc.from, pc.to)
		if len(dst) == body {
			dst, rw.seqNo = dst[:mark], seqNo // the name token: no arguments yet
		} else {
			dst = closeObjEvent(append(dst, '"'))
		}
	}
	return dst
}

func (rw *responsesWire) end(rs *response) {
	b := rw.appendClose(rs.buf[:0], rs)
	rw.store(rs)
	status := "completed"
	if rs.p.finish == "length" {
		status = "incomplete"
	}
	obj := rw.object(rs, status, true)
	b = rw.openEvent(b, "response."+status)
	b = append(append(b, `,"response":`...), obj...)
	rw.emit(rs, closeObjEvent(b))
}

func (rw *responsesWire) failStream(rs *response, status int, msg string) {
	_, code := responsesErrorType(status)
	b := rw.openEvent(rs.buf[:0], "error")
	b = append(b, `,"code":"`...)
	b = append(b, code...)
	b = append(b, `","message":`...)
	b = appendJSONString(b, msg)
	b = append(b, `,"param":null`...)
	rw.emit(rs, closeObjEvent(b))
}

func (*responsesWire) accumulate(rs *response, d delivery) { rs.count(d) }

func (rw *responsesWire) whole(rs *response) {
	rw.store(rs)
	status := "completed"
	if rs.p.finish == "length" {
		status = "incomplete"
	}
	body := rw.object(rs, status, true)
	rs.w.Header().Set("Content-Type", "application/json")
	rs.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rs.w.WriteHeader(http.StatusOK)
	_, _ = rs.w.Write(body)
}

// items lists the answer's output items: the calls made, else the
// reasoning (if any) and the message (if any visible token came).
func (rw *responsesWire) items(rs *response, yield func(kind uint8, call int)) {
	if rs.p.calls != nil {
		for ci := range rs.p.calls {
			if ci*rs.p.callTokens >= rs.generated {
				break
			}
			yield(itemCall, ci)
		}
		return
	}
	if rs.reasoning > 0 {
		yield(itemReasoning, 0)
	}
	if rs.generated > rs.reasoning {
		yield(itemMessage, 0)
	}
}

// store keeps the finished response for previous_response_id (unless the
// request said store=false): its input pieces and its output items' pieces
// as a later request would send them as input items (a message's text; a
// call's name and arguments). Reasoning is not kept: it is not part of the
// next prompt. It runs before the answer's last event goes out, so a
// client that chains at once finds it.
func (rw *responsesWire) store(rs *response) {
	if !rw.req.store {
		return
	}
	e := &storedResponse{id: rs.respID, parent: rw.parent}
	e.pieces = append(e.pieces, rw.req.input...)
	for id := range rw.req.inputCalls {
		e.callIDs = append(e.callIDs, id)
	}
	var buf []byte
	rw.items(rs, func(kind uint8, call int) {
		switch kind {
		case itemMessage:
			e.pieces = append(e.pieces, string(rw.appendItemText(buf[:0], rs, kind, call)))
		case itemCall:
			c := wholeToolCalls(rs.p.calls[call:call+1], rs.st.seq, rs.p.callTokens, rs.generated-call*rs.p.callTokens)
			if len(c) == 1 {
				e.pieces = append(e.pieces, c[0].Function.Name+" "+c[0].Function.Arguments)
				e.callIDs = append(e.callIDs, c[0].ID)
			}
		}
	})
	for _, p := range e.pieces {
		e.size += len(p)
	}
	rs.s.stored.put(e)
}

// object returns the response object in a status: in progress (no output,
// no usage yet) or final.
func (rw *responsesWire) object(rs *response, status string, final bool) []byte {
	pr := rw.req
	type details struct {
		Reason string `json:"reason"`
	}
	o := struct {
		ID                 string            `json:"id"`
		Object             string            `json:"object"`
		CreatedAt          int64             `json:"created_at"`
		Status             string            `json:"status"`
		Error              *struct{}         `json:"error"`
		IncompleteDetails  *details          `json:"incomplete_details"`
		Instructions       *string           `json:"instructions"`
		MaxOutputTokens    *int              `json:"max_output_tokens"`
		Model              string            `json:"model"`
		Output             []json.RawMessage `json:"output"`
		ParallelToolCalls  bool              `json:"parallel_tool_calls"`
		PreviousResponseID *string           `json:"previous_response_id"`
		Reasoning          struct {
			Effort  *string `json:"effort"`
			Summary *string `json:"summary"`
		} `json:"reasoning"`
		Store      bool            `json:"store"`
		ToolChoice json.RawMessage `json:"tool_choice"`
		Tools      json.RawMessage `json:"tools"`
		Truncation string          `json:"truncation"`
		Usage      json.RawMessage `json:"usage"`
	}{
		ID: rs.respID, Object: "response", CreatedAt: rs.created, Status: status,
		Instructions: pr.instructions, MaxOutputTokens: pr.maxOutput, Model: rs.s.model,
		Output: []json.RawMessage{}, ParallelToolCalls: true, Store: pr.store,
		ToolChoice: json.RawMessage(`"auto"`), Tools: json.RawMessage(`[]`), Truncation: "disabled",
		Usage: json.RawMessage("null"),
	}
	if pr.prevID != "" {
		o.PreviousResponseID = &pr.prevID
	}
	o.Reasoning.Effort = pr.effort
	if !isNull(pr.toolChoice) {
		o.ToolChoice = pr.toolChoice
	}
	if !isNull(pr.tools) {
		o.Tools = pr.tools
	}
	if status == "incomplete" {
		o.IncompleteDetails = &details{Reason: "max_output_tokens"}
	}
	if final {
		rw.items(rs, func(kind uint8, call int) {
			o.Output = append(o.Output, rw.appendItem(nil, rs, kind, call, true))
		})
		o.Usage = rw.appendUsage(nil, rs)
	}
	b, _ := json.Marshal(o) // raw parts are ours or validated input
	return b
}

// appendUsage appends the Responses usage object: input_tokens include
// the cached ones, reasoning_tokens are the hidden reasoning (not the
// tool calls' tokens, which are output).
func (rw *responsesWire) appendUsage(dst []byte, rs *response) []byte {
	reasoning := rs.reasoning
	if rs.p.calls != nil {
		reasoning = 0
	}
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rs.p.info.tokens), 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rs.cached), 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rs.generated), 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, int64(reasoning), 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rs.p.info.tokens+rs.generated), 10)
	return append(dst, '}')
}
