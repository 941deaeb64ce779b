package simserve

import (
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/sim"
)

// ToolCallsHeader is the request header that makes a chat completion answer
// with the named tool calls, in parallel and in that order: a comma-separated
// list of declared tool names ("search, read_file"). It lets a client that
// replays a recorded agent loop say which calls the model makes; without it
// the server decides by sim.Config.ToolCallShare.
const ToolCallsHeader = "X-Goodput-Tool-Calls"

// defaultArgKey is the key of a simulated call's arguments object when the
// tool declares no parameter properties.
const defaultArgKey = "query"

// toolDef is a declared tool, reduced to what the simulated model uses.
type toolDef struct {
	name   string
	argKey string // the key its arguments carry: the first of parameters.properties, else defaultArgKey
}

// toolChoiceKind is a request's tool_choice.
type toolChoiceKind uint8

const (
	choiceAuto     toolChoiceKind = iota // "auto", and the default
	choiceNone                           // "none": never call
	choiceRequired                       // "required": call one of the tools
	choiceNamed                          // {"type":"function","function":{"name":...}}: call that one
)

// isNull reports whether raw is an absent or null JSON value.
func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// unmarshalAt decodes raw (a value inside a request) into v, naming a type
// error by the path below field ("tools[1].function.name").
func unmarshalAt(raw json.RawMessage, v any, field string) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			field += "." + te.Field
		}
		return badRequest(field, "want %s, got JSON %s", goTypeName(te.Type.Kind().String()), te.Value)
	}
	return badRequest(field, "%v", err)
}

// parseTools reads a request's tools: an array of
// {"type":"function","function":{"name":...,"description":...,"parameters":{...}}}.
// Names must be unique.
func parseTools(raw json.RawMessage) ([]toolDef, error) {
	return parseToolList(raw, func(field string, e json.RawMessage) (toolDecl, error) {
		var t struct {
			Type     *string `json:"type"`
			Function *struct {
				Name        *string         `json:"name"`
				Description *string         `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := unmarshalAt(e, &t, field); err != nil {
			return toolDecl{}, err
		}
		switch {
		case t.Type == nil:
			return toolDecl{}, badRequest(field+".type", "required")
		case *t.Type != "function":
			return toolDecl{}, badRequest(field+".type", `only "function" is supported, got %q`, *t.Type)
		case t.Function == nil:
			return toolDecl{}, badRequest(field+".function", "required")
		case t.Function.Name == nil || *t.Function.Name == "":
			return toolDecl{}, badRequest(field+".function.name", "required")
		}
		return toolDecl{*t.Function.Name, field + ".function.name", t.Function.Parameters, field + ".function.parameters"}, nil
	})
}

// toolDecl is one tool as an API declares it: its name and arguments'
// JSON Schema (null: none), and the fields that hold them, for errors.
type toolDecl struct {
	name, nameField string
	schema          json.RawMessage
	schemaField     string
}

// parseToolList reads a tools array: each element must be an object,
// which read checks in its API's shape (field is its place, tools[i]);
// then every API's tools are checked alike (addTool).
func parseToolList(raw json.RawMessage, read func(field string, e json.RawMessage) (toolDecl, error)) ([]toolDef, error) {
	if isNull(raw) {
		return nil, nil
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return nil, badRequest("tools", "want an array of tool objects")
	}
	tools := make([]toolDef, 0, len(elems))
	for i, e := range elems {
		field := "tools[" + strconv.Itoa(i) + "]"
		if len(e) == 0 || e[0] != '{' {
			return nil, badRequest(field, "want a tool object")
		}
		d, err := read(field, e)
		if err != nil {
			return nil, err
		}
		if tools, err = addTool(tools, d.name, d.nameField, d.schema, d.schemaField); err != nil {
			return nil, err
		}
	}
	return tools, nil
}

// addTool appends the declared tool name, whose arguments' JSON Schema is
// schema (null: none), to tools; nameField and schemaField name them in
// errors. Every API's tool list checks the same: names unique, a schema
// an object whose first property names the simulated call's argument.
func addTool(tools []toolDef, name, nameField string, schema json.RawMessage, schemaField string) ([]toolDef, error) {
	for _, prev := range tools {
		if prev.name == name {
			return nil, badRequest(nameField, "%q declared twice", name)
		}
	}
	def := toolDef{name: name, argKey: defaultArgKey}
	if !isNull(schema) {
		if schema[0] != '{' {
			return nil, badRequest(schemaField, "want a JSON Schema object")
		}
		if k := firstProperty(schema); k != "" {
			def.argKey = k
		}
	}
	return append(tools, def), nil
}

// firstProperty returns the first key of a JSON Schema's "properties"
// object, in document order, or "" when it has none.
func firstProperty(schema json.RawMessage) string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 || s.Properties[0] != '{' {
		return ""
	}
	dec := json.NewDecoder(strings.NewReader(string(s.Properties)))
	if _, err := dec.Token(); err != nil { // '{'
		return ""
	}
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	k, _ := tok.(string)
	return k
}

// toolChoiceWord reads the forms of tool_choice chat and Responses share:
// absent (auto), or "none", "auto" or "required"; ok is false for an
// object, which each API reads its own way.
func toolChoiceWord(raw json.RawMessage) (kind toolChoiceKind, ok bool, err error) {
	if isNull(raw) {
		return choiceAuto, true, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
			return choiceAuto, true, nil
		case "none":
			return choiceNone, true, nil
		case "required":
			return choiceRequired, true, nil
		}
		return 0, false, badRequest("tool_choice", `want "none", "auto", "required" or a function object, got %q`, s)
	}
	if raw[0] != '{' {
		return 0, false, badRequest("tool_choice", `want "none", "auto", "required" or a function object`)
	}
	return 0, false, nil
}

// parseToolChoice reads tool_choice: "none", "auto", "required" or
// {"type":"function","function":{"name":...}}. Absent means auto.
func parseToolChoice(raw json.RawMessage) (toolChoiceKind, string, error) {
	if kind, ok, err := toolChoiceWord(raw); ok || err != nil {
		return kind, "", err
	}
	var c struct {
		Type     *string `json:"type"`
		Function *struct {
			Name *string `json:"name"`
		} `json:"function"`
	}
	if err := unmarshalAt(raw, &c, "tool_choice"); err != nil {
		return 0, "", err
	}
	switch {
	case c.Type == nil:
		return 0, "", badRequest("tool_choice.type", "required")
	case *c.Type != "function":
		return 0, "", badRequest("tool_choice.type", `only "function" is supported, got %q`, *c.Type)
	case c.Function == nil:
		return 0, "", badRequest("tool_choice.function", "required")
	case c.Function.Name == nil || *c.Function.Name == "":
		return 0, "", badRequest("tool_choice.function.name", "required")
	}
	return choiceNamed, *c.Function.Name, nil
}

// messagePiece validates chat message i and returns its text piece for
// counting and hashing: the content, then each tool call's name and
// arguments (as a chat template renders them), so a conversation that
// resends its history, tool calls included, hashes its resent part alike.
// A tool message needs tool_call_id and content; only an assistant message
// may carry tool_calls.
func messagePiece(i int, m *wireMessage) (string, error) {
	text, err := messageText(m.Content)
	if err != nil {
		return "", badRequest(messageField(i, "content"), "%v", err)
	}
	if m.Role == "tool" {
		if m.ToolCallID == nil || *m.ToolCallID == "" {
			return "", badRequest(messageField(i, "tool_call_id"), "required for role tool")
		}
		if isNull(m.Content) {
			return "", badRequest(messageField(i, "content"), "required for role tool")
		}
	}
	if isNull(m.ToolCalls) {
		return text, nil
	}
	field := messageField(i, "tool_calls")
	if m.Role != "assistant" {
		return "", badRequest(field, "allowed only on role assistant, got role %q", m.Role)
	}
	var calls []json.RawMessage
	if json.Unmarshal(m.ToolCalls, &calls) != nil {
		return "", badRequest(field, "want an array of tool calls")
	}
	var b strings.Builder
	b.WriteString(text)
	for j, raw := range calls {
		f := field + "[" + strconv.Itoa(j) + "]"
		if len(raw) == 0 || raw[0] != '{' {
			return "", badRequest(f, "want a tool call object")
		}
		var c struct {
			ID       *string `json:"id"`
			Type     *string `json:"type"`
			Function *struct {
				Name      *string `json:"name"`
				Arguments *string `json:"arguments"`
			} `json:"function"`
		}
		if err := unmarshalAt(raw, &c, f); err != nil {
			return "", err
		}
		switch {
		case c.ID == nil || *c.ID == "":
			return "", badRequest(f+".id", "required")
		case c.Type != nil && *c.Type != "function":
			return "", badRequest(f+".type", `only "function" is supported, got %q`, *c.Type)
		case c.Function == nil:
			return "", badRequest(f+".function", "required")
		case c.Function.Name == nil || *c.Function.Name == "":
			return "", badRequest(f+".function.name", "required")
		}
		// Whitespace is free to tokenize.Approx: the separators add no
		// tokens, they only keep the name and arguments apart.
		b.WriteByte('\n')
		b.WriteString(*c.Function.Name)
		if c.Function.Arguments != nil {
			b.WriteByte(' ')
			b.WriteString(*c.Function.Arguments)
		}
	}
	return b.String(), nil
}

func messageField(i int, name string) string {
	return "messages[" + strconv.Itoa(i) + "]." + name
}

// parseToolCallsHeader reads ToolCallsHeader's value: comma-separated tool
// names, trimmed. A blank value means no header (nil, nil).
func parseToolCallsHeader(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	names := strings.Split(v, ",")
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if names[i] == "" {
			return nil, badRequest(ToolCallsHeader, "tool name %d of %d is empty", i+1, len(names))
		}
	}
	return names, nil
}

// Salts keep the tool-call decision, the tool picked and the natural
// output length (all drawn from the prompt's hash) independent.
const (
	saltToolDecide = 0x5bd1e9955bd1e995
	saltToolPick   = 0xc2b2ae3d27d4eb4f
)

// toolCall is one call the simulated model answers with: the chunk pieces
// that open its entries in delta.tool_calls, built once per request.
type toolCall struct {
	id   string
	name string
	// head opens the call's first entry, up to its arguments' text:
	// {"index":i,"id":"call_…","type":"function","function":{"name":"…","arguments":"
	head []byte
	// cont opens a later entry: {"index":i,"function":{"arguments":"
	cont []byte
	// open starts the arguments: {"key":" raw, and escaped as JSON string
	// content for the chunks.
	open, openEsc []byte
}

// decideCalls picks the tools the answer calls, as indices into g.tools;
// nil answers with content. The header's list wins; otherwise a request
// whose last message is the user's calls one tool when tool_choice forces
// it ("required" or a named function) or, under "auto", with probability
// share, decided by hash (the prompt's content hash: the same prompt always
// decides alike). The tool is the named one, else one picked by the hash.
func decideCalls(g *genRequest, hash uint64, share float64) ([]int, *apiError) {
	if g.forcedCalls != nil {
		if !g.chat {
			return nil, badRequest(ToolCallsHeader, "tool calls are answered on /v1/chat/completions only")
		}
		if len(g.tools) == 0 {
			return nil, badRequest(ToolCallsHeader, "names tools but the request declares none")
		}
		idx := make([]int, len(g.forcedCalls))
		for i, name := range g.forcedCalls {
			idx[i] = g.toolIndex(name)
			if idx[i] < 0 {
				return nil, badRequest(ToolCallsHeader, "%q is not a declared tool", name)
			}
		}
		return idx, nil
	}
	if len(g.tools) == 0 || g.toolChoice == choiceNone || g.lastRole != "user" {
		return nil, nil
	}
	if g.toolChoice == choiceAuto {
		u := float64(sim.Mix64(hash^saltToolDecide)>>11) / (1 << 53) // [0, 1)
		if !(u < share) {
			return nil, nil
		}
	}
	if g.toolChoice == choiceNamed {
		return []int{g.toolIndex(g.toolChoiceName)}, nil
	}
	return []int{int(sim.Mix64(hash^saltToolPick) % uint64(len(g.tools)))}, nil
}

func (g *genRequest) toolIndex(name string) int {
	for i, t := range g.tools {
		if t.name == name {
			return i
		}
	}
	return -1
}

// makeCalls builds the calls of one answer. Their ids are "call_" and 16
// hex digits of a hash of the response id, the prompt's hash and the call's
// index: deterministic for a request, distinct across a run's requests
// (whose response ids differ).
func makeCalls(tools []toolDef, idx []int, respID string, hash uint64) []toolCall {
	calls := make([]toolCall, len(idx))
	base := fnv64(sim.Mix64(hash), []byte(respID))
	for i, ti := range idx {
		t := tools[ti]
		id := callID(base, i)
		nameJSON := jsonString(t.name)
		c := toolCall{id: id, name: t.name}
		c.head = append(c.head, `{"index":`...)
		c.head = strconv.AppendInt(c.head, int64(i), 10)
		c.head = append(c.head, `,"id":"`...)
		c.head = append(c.head, id...)
		c.head = append(c.head, `","type":"function","function":{"name":`...)
		c.head = append(c.head, nameJSON...)
		c.head = append(c.head, `,"arguments":"`...)
		c.cont = append(c.cont, `{"index":`...)
		c.cont = strconv.AppendInt(c.cont, int64(i), 10)
		c.cont = append(c.cont, `,"function":{"arguments":"`...)
		c.open = append(append(append(c.open, '{'), jsonString(t.argKey)...), `:"`...)
		esc := jsonString(string(c.open))
		c.openEsc = esc[1 : len(esc)-1]
		calls[i] = c
	}
	return calls
}

func callID(base uint64, i int) string {
	var b [len("call_") + 16]byte
	copy(b[:], "call_")
	const hexDigits = "0123456789abcdef"
	v := sim.Mix64(base + uint64(i)*0x9e3779b97f4a7c15)
	for k := len(b) - 1; k >= len("call_"); k-- {
		b[k] = hexDigits[v&15]
		v >>= 4
	}
	return string(b[:])
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// appendToolArgs appends the arguments text that tokens [from, to) of call
// c make (escaped as JSON string content when esc). Token 0 of a call is its
// name (it comes with the call's head and no arguments, but "{}" for a
// one-token call); then `{"key":"w1`, ` w2`, ..., and the last token closes
// the object, so a call's whole arguments are {"key":"w1 w2 ... wn"}. Words
// are filler words, cycling from a point that depends on seq.
func appendToolArgs(dst []byte, c *toolCall, esc bool, seq uint64, c0, perCall, from, to int) []byte {
	for k := from; k < to; k++ {
		if k == 0 {
			if perCall == 1 {
				dst = append(dst, "{}"...)
			}
			continue
		}
		if k == 1 {
			if esc {
				dst = append(dst, c.openEsc...)
			} else {
				dst = append(dst, c.open...)
			}
		} else {
			dst = append(dst, ' ')
		}
		dst = append(dst, fillerWords[(seq*7+uint64(c0+k))%uint64(len(fillerWords))]...)
		if k == perCall-1 {
			if esc {
				dst = append(dst, `\"}`...)
			} else {
				dst = append(dst, `"}`...)
			}
		}
	}
	return dst
}

// appendToolDelta appends the entries of delta.tool_calls (without the
// brackets) for output tokens [from, from+n) of an answer of calls of
// perCall tokens each: one entry per call the tokens touch, the first of a
// call carrying its id and name.
func appendToolDelta(dst []byte, calls []toolCall, seq uint64, perCall, from, n int) []byte {
	first := len(dst)
	for pc := range callPieces(len(calls), perCall, from, n) {
		if len(dst) > first {
			dst = append(dst, ',')
		}
		c := &calls[pc.call]
		if pc.from == 0 {
			dst = append(dst, c.head...)
		} else {
			dst = append(dst, c.cont...)
		}
		dst = appendToolArgs(dst, c, true, seq, pc.call*perCall, perCall, pc.from, pc.to)
		dst = append(dst, `"}}`...)
	}
	return dst
}

// callPiece is the part of one tool call that a run of output tokens
// covers: call's tokens [from, to), counted within the call.
type callPiece struct{ call, from, to int }

// callPieces splits output tokens [from, from+n) of an answer of calls
// tool calls, perCall tokens each, into the pieces of each call they
// cover, in order; tokens past the last call are none. Every wire (chat,
// Responses, Messages) streams an answer's calls piece by piece.
func callPieces(calls, perCall, from, n int) iter.Seq[callPiece] {
	return func(yield func(callPiece) bool) {
		for t, end := from, from+n; t < end; {
			ci := t / perCall
			if ci >= calls {
				return
			}
			stop := min(end, (ci+1)*perCall)
			if !yield(callPiece{call: ci, from: t - ci*perCall, to: stop - ci*perCall}) {
				return
			}
			t = stop
		}
	}
}

// wireToolCall is a tool call in a non-streamed answer's message.
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wholeToolCalls returns the calls that generated tokens made, with their
// arguments so far (whole, unless the answer was cut by max_tokens).
func wholeToolCalls(calls []toolCall, seq uint64, perCall, generated int) []wireToolCall {
	var out []wireToolCall
	var buf []byte
	for ci := range calls {
		from := ci * perCall
		if from >= generated {
			break
		}
		buf = appendToolArgs(buf[:0], &calls[ci], false, seq, from, perCall, 0, min(perCall, generated-from))
		w := wireToolCall{ID: calls[ci].id, Type: "function"}
		w.Function.Name = calls[ci].name
		w.Function.Arguments = string(buf)
		out = append(out, w)
	}
	return out
}
