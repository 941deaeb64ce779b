package anthropic

import (
	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/wire"
)

// Decoder reads the Messages API's answers into wire.Chunks, for
// wire.StreamMeter (SetDecoder) and wire.MeasureWhole. It is
// written on jsonscan: one pass over an event that validates it as JSON,
// skips what goodput does not need and unescapes only the strings it keeps,
// so a stream is decoded without allocating once its buffers have grown.
//
// The event type is the data's "type" member (not the SSE event name).
// What each event gives:
//
//	message_start         Usage: PromptTokens = input_tokens +
//	                      cache_read_input_tokens + cache_creation_input_tokens
//	                      (input_tokens excludes the cached ones),
//	                      CachedTokens = cache_read, CompletionTokens 0
//	content_block_start   text → Content, thinking → Reasoning,
//	                      redacted_thinking → ToolArgs += len(data),
//	                      tool_use → ToolCalls {Index: block index, ID, Name}
//	                      and ToolArgs += len(name)
//	content_block_delta   text_delta → Content, thinking_delta → Reasoning,
//	                      input_json_delta → ToolCalls {Index, Arguments} and
//	                      ToolArgs += len(partial_json); signature_delta and
//	                      citations_delta carry no token
//	message_delta         Usage with CompletionTokens = output_tokens (and
//	                      prompt counts it repeats, which replace
//	                      message_start's); stop_reason is kept for
//	                      message_stop
//	message_stop          End, with FinishReason: stop_reason in OpenAI's
//	                      words (end_turn, stop_sequence → stop; max_tokens →
//	                      length; tool_use → tool_calls; others as given)
//	error                 ErrMessage "type: message"
//	ping, others          nothing (a newer event is skipped, not an error)
//
// The finish reason waits for message_stop because the API always ends a
// stream with it: a stream cut after message_delta then has no finish
// reason and fails as cut, as one cut anywhere else does.
//
// redacted_thinking's data is encrypted thinking: generated, hidden output,
// so its bytes count as hidden, but in ToolArgs (a byte count) rather than
// Reasoning, which holds text a reader could show or tokenize. A tool the
// API runs itself (server_tool_use, mcp_tool_use) is hidden output too, but
// no call the client answers, so it gives no ToolCalls.
//
// The message id is not reported as Chunk.ResponseID: the API has no way
// to continue from an earlier answer, and a record's ResponseID says that
// one can.
//
// A Decoder keeps, across the events of one stream, the kind of each
// content block, the prompt counts and the stop reason; Reset forgets
// them. It is not safe for concurrent use; the zero value is ready.
type Decoder struct {
	p jsonscan.Scanner
	// blocks is the kind of each content block started, by index.
	blocks []blockKind
	// input, cacheRead and cacheCreation are the prompt counts (tokens)
	// reported so far.
	input, cacheRead, cacheCreation int
	// stop is message_delta's stop_reason in OpenAI's words (aliasing a
	// constant or stopBuf), for message_stop.
	stop, stopBuf []byte
	errBuf        []byte
	out           [1]wire.ToolCallDelta
	// content, reasoning and calls gather a whole answer's blocks.
	content, reasoning []byte
	calls              []wire.ToolCallDelta
}

var _ wire.EventDecoder = (*Decoder)(nil)

// blockKind is what a content block holds.
type blockKind uint8

const (
	blockOther blockKind = iota
	blockText
	blockThinking
	blockRedacted
	blockToolUse
	// blockServerTool is a tool the API runs itself.
	blockServerTool
)

// kindOf is the kind a content block's type names.
func kindOf(typ []byte) blockKind {
	switch string(typ) {
	case "text":
		return blockText
	case "thinking":
		return blockThinking
	case "redacted_thinking":
		return blockRedacted
	case "tool_use":
		return blockToolUse
	case "server_tool_use", "mcp_tool_use":
		return blockServerTool
	}
	return blockOther
}

// maxIndex bounds a believable content block index; a larger one (or any
// other value) is taken as 0 rather than grow the decoder's memory.
const maxIndex = 1 << 16

// maxCount bounds a token count as read, so sums of counts cannot
// overflow; a count this large is still far beyond what the meter believes.
const maxCount = 1 << 40

// Reset implements wire.EventDecoder: it forgets the stream's blocks,
// prompt counts and stop reason.
func (d *Decoder) Reset() {
	d.blocks = d.blocks[:0]
	d.input, d.cacheRead, d.cacheCreation = 0, 0, 0
	d.stop = nil
}

// Finish reasons in OpenAI's words.
var (
	finishStop      = []byte("stop")
	finishLength    = []byte("length")
	finishToolCalls = []byte("tool_calls")
)

// unknownError is the message of an error that gave none.
var unknownError = []byte("unknown error")

// finishReason is a stop_reason in OpenAI's words: a constant, or the
// reason itself copied into *buf (it must outlive the event's bytes).
func finishReason(reason []byte, buf *[]byte) []byte {
	switch string(reason) {
	case "":
		return nil
	case "end_turn", "stop_sequence":
		return finishStop
	case "max_tokens":
		return finishLength
	case "tool_use":
		return finishToolCalls
	}
	*buf = append((*buf)[:0], reason...)
	return *buf
}

// event is what one streamed event's members held; every field is
// overwritten by a repeated member, as a JSON object's last value counts.
type event struct {
	typ      jsonscan.Span
	index    int
	block    block
	delta    delta
	msgUsage usage // message.usage (message_start)
	usage    usage // usage (message_delta)
	err      apiError
}

// block is a content block object.
type block struct {
	typ, text, thinking, data, id, name jsonscan.Span
	// input is the raw JSON of the block's input (whole answers).
	input []byte
}

// delta is a content_block_delta's or message_delta's delta object.
type delta struct {
	typ, text, thinking, partialJSON, stopReason jsonscan.Span
}

// usage is a usage object; a count is given only when it is an integer.
type usage struct {
	present                                bool
	input, output, cacheRead, cacheWrite   int
	hasInput, hasOutput, hasRead, hasWrite bool
}

// apiError is an "error" member: an object with a type and a message, or a
// string (a gateway's).
type apiError struct {
	present  bool
	typ, msg jsonscan.Span
}

// Decode implements wire.EventDecoder: it reads one event's data into c,
// overwriting all of c. Data that is not a JSON object is an error
// wrapping openai.ErrMalformed.
func (d *Decoder) Decode(data []byte, c *wire.Chunk) error {
	*c = wire.Chunk{Timing: wire.NoTiming()}
	p := &d.p
	var e event
	err := p.Document(data, func(k []byte) (err error) {
		switch string(k) {
		case "type":
			e.typ, _, err = p.Str()
		case "index":
			e.index, err = p.Count(maxIndex)
		case "content_block":
			e.block, err = d.block()
		case "delta":
			e.delta, err = d.delta()
		case "message":
			e.msgUsage = usage{}
			_, err = p.Members(func(k []byte) error {
				if string(k) == "usage" {
					var err error
					e.msgUsage, err = d.usage()
					return err
				}
				return p.Skip()
			})
		case "usage":
			e.usage, err = d.usage()
		case "error":
			e.err, err = d.apiError()
		default:
			err = p.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	typ := p.Bytes(e.typ)
	switch string(typ) {
	case "content_block_delta":
		d.contentDelta(&e, c)
	case "content_block_start":
		d.blockStart(&e, c)
	case "message_start":
		if u := e.msgUsage; u.present {
			d.input, d.cacheRead, d.cacheCreation = u.input, u.cacheRead, u.cacheWrite
			c.Usage = d.promptUsage()
		}
	case "message_delta":
		if r := p.Bytes(e.delta.stopReason); len(r) > 0 {
			d.stop = finishReason(r, &d.stopBuf)
		}
		if u := e.usage; u.present {
			if u.hasInput {
				d.input = u.input
			}
			if u.hasRead {
				d.cacheRead = u.cacheRead
			}
			if u.hasWrite {
				d.cacheCreation = u.cacheWrite
			}
			c.Usage = d.promptUsage()
			if u.hasOutput {
				c.Usage.CompletionTokens = u.output
			}
		}
	case "message_stop":
		c.End = true
		c.FinishReason = d.stop
	case "error":
		c.ErrMessage = d.errMessage(e.err)
	case "":
		// No type: a gateway's own error object, not an Anthropic event.
		if e.err.present {
			c.ErrMessage = d.errMessage(e.err)
		}
	}
	return nil
}

// promptUsage is a usage report of the prompt counts known so far.
func (d *Decoder) promptUsage() wire.Usage {
	return wire.Usage{
		Present:      true,
		PromptTokens: d.input + d.cacheRead + d.cacheCreation,
		CachedTokens: d.cacheRead,
	}
}

// blockStart handles content_block_start: the block's initial text, and
// its kind for the deltas that follow.
func (d *Decoder) blockStart(e *event, c *wire.Chunk) {
	p := &d.p
	kind := kindOf(p.Bytes(e.block.typ))
	if e.index >= len(d.blocks) {
		d.blocks = append(d.blocks, make([]blockKind, e.index+1-len(d.blocks))...)
	}
	d.blocks[e.index] = kind
	switch kind {
	case blockText:
		c.Content = p.Bytes(e.block.text)
	case blockThinking:
		c.Reasoning = p.Bytes(e.block.thinking)
	case blockRedacted:
		c.ToolArgs = e.block.data.Len()
	case blockToolUse:
		d.out[0] = wire.ToolCallDelta{Index: e.index, ID: p.Bytes(e.block.id), Name: p.Bytes(e.block.name)}
		c.ToolCalls = d.out[:]
		c.ToolArgs = e.block.name.Len()
	case blockServerTool:
		c.ToolArgs = e.block.name.Len()
	}
}

// contentDelta handles content_block_delta.
func (d *Decoder) contentDelta(e *event, c *wire.Chunk) {
	p := &d.p
	switch string(p.Bytes(e.delta.typ)) {
	case "text_delta":
		c.Content = p.Bytes(e.delta.text)
	case "thinking_delta":
		c.Reasoning = p.Bytes(e.delta.thinking)
	case "input_json_delta":
		c.ToolArgs = e.delta.partialJSON.Len()
		if e.index < len(d.blocks) && d.blocks[e.index] == blockServerTool {
			return // the API's own tool: no call to answer
		}
		d.out[0] = wire.ToolCallDelta{Index: e.index, Arguments: p.Bytes(e.delta.partialJSON)}
		c.ToolCalls = d.out[:]
	}
}

// errMessage is an error's text: "type: message", or whichever of the two
// it gave, or "unknown error".
func (d *Decoder) errMessage(e apiError) []byte {
	return wire.ErrorText(&d.errBuf, d.p.Bytes(e.typ), d.p.Bytes(e.msg), unknownError)
}

// block reads a content block object (any other value is skipped and
// gives the zero block).
func (d *Decoder) block() (b block, err error) {
	p := &d.p
	_, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "type":
			b.typ, _, err = p.Str()
		case "text":
			b.text, _, err = p.Str()
		case "thinking":
			b.thinking, _, err = p.Str()
		case "data":
			b.data, _, err = p.Str()
		case "id":
			b.id, _, err = p.Str()
		case "name":
			b.name, _, err = p.Str()
		case "input":
			b.input = nil
			if p.Peek() != '{' {
				return p.Skip()
			}
			start := p.Pos()
			if err = p.Skip(); err == nil {
				b.input = p.Data()[start:p.Pos():p.Pos()]
			}
		default:
			err = p.Skip()
		}
		return err
	})
	return b, err
}

// delta reads a delta object.
func (d *Decoder) delta() (dl delta, err error) {
	p := &d.p
	_, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "type":
			dl.typ, _, err = p.Str()
		case "text":
			dl.text, _, err = p.Str()
		case "thinking":
			dl.thinking, _, err = p.Str()
		case "partial_json":
			dl.partialJSON, _, err = p.Str()
		case "stop_reason":
			dl.stopReason, _, err = p.Str()
		default:
			err = p.Skip()
		}
		return err
	})
	return dl, err
}

// usage reads a usage object; null or a non-object is not present.
func (d *Decoder) usage() (u usage, err error) {
	p := &d.p
	u.present, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "input_tokens":
			u.input, u.hasInput, err = d.count()
		case "output_tokens":
			u.output, u.hasOutput, err = d.count()
		case "cache_read_input_tokens":
			u.cacheRead, u.hasRead, err = d.count()
		case "cache_creation_input_tokens":
			u.cacheWrite, u.hasWrite, err = d.count()
		default:
			err = p.Skip()
		}
		return err
	})
	return u, err
}

// count reads a token count: an integer literal, clamped to ±maxCount (a
// negative one is kept for the meter to reject); ok is false for any other
// value (null: not reported).
func (d *Decoder) count() (n int, ok bool, err error) {
	v, ok, err := d.p.Int()
	if !ok {
		return 0, false, err
	}
	return int(max(min(v, maxCount), -maxCount)), true, nil
}

// apiError reads an "error" member: an object's type and message, or a
// string; null and other values are no error.
func (d *Decoder) apiError() (e apiError, err error) {
	p := &d.p
	switch p.Peek() {
	case '"':
		e.present = true
		e.msg, _, err = p.Str()
		return e, err
	case '{':
		e.present = true
		_, err = p.Members(func(k []byte) (err error) {
			switch string(k) {
			case "type":
				e.typ, _, err = p.Str()
			case "message":
				e.msg, _, err = p.Str()
			default:
				err = p.Skip()
			}
			return err
		})
		return e, err
	}
	return e, p.Skip()
}

// DecodeResponse implements wire.EventDecoder: it reads a whole
// (non-streamed) answer into c. A message gives its text blocks as Content,
// thinking as Reasoning, redacted thinking and tool_use as hidden
// ToolArgs, each tool_use as a ToolCalls entry (Index: the block's
// position; Arguments: its input's JSON text as the body has it), usage
// (prompt counts as message_start's) and stop_reason; an error object
// ({"type":"error","error":{…}}) gives ErrMessage.
func (d *Decoder) DecodeResponse(data []byte, c *wire.Chunk) error {
	*c = wire.Chunk{Timing: wire.NoTiming()}
	p := &d.p
	d.content, d.reasoning, d.calls = d.content[:0], d.reasoning[:0], d.calls[:0]
	var (
		typ, stop jsonscan.Span
		u         usage
		apiErr    apiError
		toolArgs  int
	)
	err := p.Document(data, func(k []byte) (err error) {
		switch string(k) {
		case "type":
			typ, _, err = p.Str()
		case "content":
			d.content, d.reasoning, d.calls, toolArgs = d.content[:0], d.reasoning[:0], d.calls[:0], 0
			if p.Peek() != '[' {
				return p.Skip()
			}
			more, err := p.OpenArray()
			for pos := 0; more && err == nil; more, err = p.NextElement() {
				var b block
				if b, err = d.block(); err != nil {
					return err
				}
				toolArgs += d.wholeBlock(&b, pos)
				pos++
			}
			return err
		case "stop_reason":
			stop, _, err = p.Str()
		case "usage":
			u, err = d.usage()
		case "error":
			apiErr, err = d.apiError()
		default:
			err = p.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if string(p.Bytes(typ)) == "error" || apiErr.present {
		c.ErrMessage = d.errMessage(apiErr)
		return nil
	}
	if len(d.content) > 0 {
		c.Content = d.content
	}
	if len(d.reasoning) > 0 {
		c.Reasoning = d.reasoning
	}
	if len(d.calls) > 0 {
		c.ToolCalls = d.calls
	}
	c.ToolArgs = toolArgs
	c.FinishReason = finishReason(p.Bytes(stop), &d.stopBuf)
	if u.present {
		c.Usage = wire.Usage{
			Present:          true,
			PromptTokens:     u.input + u.cacheRead + u.cacheWrite,
			CachedTokens:     u.cacheRead,
			CompletionTokens: u.output,
		}
	}
	return nil
}

// wholeBlock adds content block b (at position pos of the answer's
// content) to the answer being gathered, returning its hidden tool-call
// bytes.
func (d *Decoder) wholeBlock(b *block, pos int) (toolArgs int) {
	p := &d.p
	switch kindOf(p.Bytes(b.typ)) {
	case blockText:
		d.content = append(d.content, p.Bytes(b.text)...)
	case blockThinking:
		d.reasoning = append(d.reasoning, p.Bytes(b.thinking)...)
	case blockRedacted:
		return b.data.Len()
	case blockToolUse:
		d.calls = append(d.calls, wire.ToolCallDelta{Index: pos, ID: p.Bytes(b.id), Name: p.Bytes(b.name), Arguments: b.input})
		return b.name.Len() + len(b.input)
	case blockServerTool:
		return b.name.Len() + len(b.input)
	}
	return 0
}
