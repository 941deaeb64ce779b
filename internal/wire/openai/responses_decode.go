package openai

import (
	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/wire"
)

// ResponsesDecoder reads the Responses API's answers into Chunks, written
// on jsonscan as ChunkDecoder is: a stream is decoded without allocating
// once its buffers have grown. The event type is the data's "type" member.
// What each event gives:
//
//	response.created, .in_progress, .queued    ResponseID = response.id
//	response.output_item.added                 a function_call item:
//	                                           ToolCalls {Index: output_index,
//	                                           ID: call_id, Name}, ToolArgs +=
//	                                           len(name); other items nothing
//	response.output_text.delta, .refusal.delta Content = delta (visible)
//	response.reasoning_summary_text.delta,
//	response.reasoning_text.delta              Reasoning = delta
//	response.function_call_arguments.delta     ToolCalls {Index: output_index,
//	                                           Arguments: delta}, ToolArgs
//	response.completed                         ResponseID, Usage, FinishReason
//	                                           (tool_calls when the answer
//	                                           made a function call, else
//	                                           stop), End
//	response.incomplete                        as completed, FinishReason
//	                                           length for max_output_tokens,
//	                                           else incomplete_details.reason
//	response.failed                            ErrMessage from response.error
//	error                                      ErrMessage "code: message"
//	*.done, others                             nothing
//
// The .done events and the completed response's "output" repeat text that
// was streamed already, so their text is never read (the output is looked
// at only for the kinds of its items). Usage's input_tokens includes the
// cached ones (input_tokens_details.cached_tokens), unlike Anthropic's.
//
// A ResponsesDecoder remembers across one stream's events whether a
// function call was seen; Reset forgets it. It is not safe for concurrent
// use; the zero value is ready.
type ResponsesDecoder struct {
	p       jsonscan.Scanner
	sawCall bool
	out     [1]wire.ToolCallDelta
	errBuf  []byte
	// content, reasoning and calls gather a whole answer's output.
	content, reasoning []byte
	calls              []wire.ToolCallDelta
	whole              bool
	toolArgs           int
}

var _ wire.EventDecoder = (*ResponsesDecoder)(nil)

// Reset implements EventDecoder.
func (d *ResponsesDecoder) Reset() { d.sawCall = false }

// Finish reasons in chat completions' words.
var (
	finishStop       = []byte("stop")
	finishLength     = []byte("length")
	finishToolCalls  = []byte("tool_calls")
	finishIncomplete = []byte("incomplete")
	responseFailed   = []byte("response failed")
)

// responsesEvent is what one event's members held; a repeated member's
// last value counts, as in a JSON object.
type responsesEvent struct {
	typ, delta  jsonscan.Span
	outputIndex int
	item        responsesItem
	resp        responseObject
	// err is the error event's own code and message; nested its "error"
	// object, which some servers send instead (and which wins).
	err, nested responsesError
}

// responsesItem is an output item, as far as it is read.
type responsesItem struct {
	typ, callID, name, arguments jsonscan.Span
}

// responseObject is a response object, as far as it is read.
type responseObject struct {
	id, status, reason jsonscan.Span
	usage              wire.Usage
	err                responsesError
	hasCall            bool // its output has a function_call item
}

// responsesError is an error object's code and message.
type responsesError struct {
	present   bool
	code, msg jsonscan.Span
}

// Decode implements EventDecoder: it reads one event's data into c,
// overwriting all of c. Data that is not a JSON object is an error
// wrapping ErrMalformed.
func (d *ResponsesDecoder) Decode(data []byte, c *wire.Chunk) error {
	*c = wire.Chunk{Timing: noTiming} // the API reports no server timing
	d.whole = false
	p := &d.p
	var e responsesEvent
	err := p.Document(data, func(k []byte) (err error) {
		switch string(k) {
		case "type":
			e.typ, _, err = p.Str()
		case "delta":
			e.delta, _, err = p.Str()
		case "output_index":
			e.outputIndex, err = p.Count(maxCallIndex)
		case "item":
			e.item, err = d.item()
		case "response":
			e.resp, err = d.response()
		case "code":
			e.err.code, _, err = p.Str()
		case "message":
			e.err.msg, _, err = p.Str()
		case "error":
			e.nested, err = d.errorObject()
		default:
			err = p.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	switch string(p.Bytes(e.typ)) {
	case "response.output_text.delta", "response.refusal.delta":
		c.Content = p.Bytes(e.delta)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		c.Reasoning = p.Bytes(e.delta)
	case "response.function_call_arguments.delta":
		c.ToolArgs = e.delta.Len()
		d.out[0] = wire.ToolCallDelta{Index: e.outputIndex, Arguments: p.Bytes(e.delta)}
		c.ToolCalls = d.out[:]
	case "response.output_item.added":
		if string(p.Bytes(e.item.typ)) == "function_call" {
			d.sawCall = true
			c.ToolArgs = e.item.name.Len()
			d.out[0] = wire.ToolCallDelta{Index: e.outputIndex, ID: p.Bytes(e.item.callID), Name: p.Bytes(e.item.name)}
			c.ToolCalls = d.out[:]
		}
	case "response.created", "response.in_progress", "response.queued":
		c.ResponseID = p.Bytes(e.resp.id)
	case "response.completed", "response.incomplete":
		d.final(&e.resp, c, string(p.Bytes(e.typ)) == "response.incomplete")
		c.End = true
	case "response.failed":
		c.ResponseID = p.Bytes(e.resp.id)
		c.ErrMessage = d.errMessage(e.resp.err, responseFailed)
	case "error":
		if e.nested.present {
			e.err = e.nested
		}
		c.ErrMessage = d.errMessage(e.err, unknownError)
	}
	return nil
}

// final fills c from the response of a completed or incomplete answer.
func (d *ResponsesDecoder) final(r *responseObject, c *wire.Chunk, incomplete bool) {
	p := &d.p
	c.ResponseID = p.Bytes(r.id)
	c.Usage = r.usage
	switch reason := p.Bytes(r.reason); {
	case !incomplete && (d.sawCall || r.hasCall):
		c.FinishReason = finishToolCalls
	case !incomplete:
		c.FinishReason = finishStop
	case string(reason) == "max_output_tokens":
		c.FinishReason = finishLength
	case len(reason) > 0:
		c.FinishReason = reason
	default:
		c.FinishReason = finishIncomplete
	}
}

// errMessage is an error's text: "code: message", or whichever it gave,
// or none.
func (d *ResponsesDecoder) errMessage(e responsesError, none []byte) []byte {
	return wire.ErrorText(&d.errBuf, d.p.Bytes(e.code), d.p.Bytes(e.msg), none)
}

// response reads a response object (any other value gives the zero one).
func (d *ResponsesDecoder) response() (r responseObject, err error) {
	p := &d.p
	_, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "id":
			r.id, _, err = p.Str()
		case "status":
			r.status, _, err = p.Str()
		case "usage":
			r.usage, err = d.usage()
		case "incomplete_details":
			r.reason = jsonscan.Span{}
			_, err = p.Members(func(k []byte) (err error) {
				if string(k) == "reason" {
					r.reason, _, err = p.Str()
					return err
				}
				return p.Skip()
			})
		case "error":
			r.err, err = d.errorObject()
		case "output":
			r.hasCall, err = d.output()
		default:
			err = p.Skip()
		}
		return err
	})
	return r, err
}

// output walks a response's output items, reporting whether one is a
// function call. Streamed, only their kinds are read (their text was
// streamed already); whole, their text and calls are gathered.
func (d *ResponsesDecoder) output() (hasCall bool, err error) {
	p := &d.p
	if d.whole {
		d.content, d.reasoning, d.calls, d.toolArgs = d.content[:0], d.reasoning[:0], d.calls[:0], 0
	}
	if p.Peek() != '[' {
		return false, p.Skip()
	}
	more, err := p.OpenArray()
	for pos := 0; more && err == nil; more, err = p.NextElement() {
		var it responsesItem
		if it, err = d.item(); err != nil {
			return false, err
		}
		if string(p.Bytes(it.typ)) == "function_call" {
			hasCall = true
			if d.whole {
				d.calls = append(d.calls, wire.ToolCallDelta{Index: pos, ID: p.Bytes(it.callID), Name: p.Bytes(it.name), Arguments: p.Bytes(it.arguments)})
				d.toolArgs += it.name.Len() + it.arguments.Len()
			}
		}
		pos++
	}
	return hasCall, err
}

// item reads an output item (any other value gives the zero one). In a
// whole answer the text of its content and summary parts is gathered as
// it comes, by each part's own type.
func (d *ResponsesDecoder) item() (it responsesItem, err error) {
	p := &d.p
	_, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "type":
			it.typ, _, err = p.Str()
		case "call_id":
			it.callID, _, err = p.Str()
		case "name":
			it.name, _, err = p.Str()
		case "arguments":
			it.arguments, _, err = p.Str()
		case "content", "summary":
			if !d.whole {
				return p.Skip()
			}
			err = d.parts()
		default:
			err = p.Skip()
		}
		return err
	})
	return it, err
}

// parts gathers the text of an item's content or summary parts: output
// text and refusals are visible, reasoning and summaries hidden.
func (d *ResponsesDecoder) parts() error {
	p := &d.p
	if p.Peek() != '[' {
		return p.Skip()
	}
	more, err := p.OpenArray()
	for ; more && err == nil; more, err = p.NextElement() {
		var typ, text, refusal jsonscan.Span
		if _, err = p.Members(func(k []byte) (err error) {
			switch string(k) {
			case "type":
				typ, _, err = p.Str()
			case "text":
				text, _, err = p.Str()
			case "refusal":
				refusal, _, err = p.Str()
			default:
				err = p.Skip()
			}
			return err
		}); err != nil {
			return err
		}
		switch string(p.Bytes(typ)) {
		case "output_text":
			d.content = append(d.content, p.Bytes(text)...)
		case "refusal":
			d.content = append(d.content, p.Bytes(refusal)...)
		case "summary_text", "reasoning_text":
			d.reasoning = append(d.reasoning, p.Bytes(text)...)
		}
	}
	return err
}

// usage reads a response's usage; null or a non-object is not present.
func (d *ResponsesDecoder) usage() (u wire.Usage, err error) {
	p := &d.p
	u.Present, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "input_tokens":
			u.PromptTokens, err = d.p.IntValue()
		case "output_tokens":
			u.CompletionTokens, err = d.p.IntValue()
		case "input_tokens_details":
			u.CachedTokens, err = d.p.MemberInt("cached_tokens")
		case "output_tokens_details":
			u.ReasoningTokens, err = d.p.MemberInt("reasoning_tokens")
		default:
			err = p.Skip()
		}
		return err
	})
	return u, err
}

// errorObject reads an error object's code (or, lacking one, its type)
// and message; null and other values are no error.
func (d *ResponsesDecoder) errorObject() (e responsesError, err error) {
	p := &d.p
	var typ jsonscan.Span
	e.present, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "code":
			e.code, _, err = p.Str()
		case "type":
			typ, _, err = p.Str()
		case "message":
			e.msg, _, err = p.Str()
		default:
			err = p.Skip()
		}
		return err
	})
	if e.code.Empty() {
		e.code = typ
	}
	return e, err
}

// DecodeResponse implements EventDecoder: it reads a whole (non-streamed)
// response object into c: the output's message text (and refusals) as
// Content, reasoning summaries and text as Reasoning, function calls as
// ToolCalls (Index: the item's position) and hidden ToolArgs, usage, the
// finish reason its status implies (as the stream's last event would
// give it) and id as ResponseID. A failed response, or an error body
// ({"error":{…}}), gives ErrMessage.
func (d *ResponsesDecoder) DecodeResponse(data []byte, c *wire.Chunk) error {
	*c = wire.Chunk{Timing: noTiming} // the API reports no server timing
	d.whole, d.sawCall = true, false
	d.content, d.reasoning, d.calls, d.toolArgs = d.content[:0], d.reasoning[:0], d.calls[:0], 0
	p := &d.p
	p.Reset(data)
	if err := p.Object(); err != nil {
		return err
	}
	// A response object is the body itself.
	r, err := d.response()
	if err != nil {
		return err
	}
	if err := p.End(); err != nil {
		return err
	}
	status := string(p.Bytes(r.status))
	if r.err.present || status == "failed" {
		c.ResponseID = p.Bytes(r.id)
		c.ErrMessage = d.errMessage(r.err, responseFailed)
		return nil
	}
	d.final(&r, c, status == "incomplete")
	if len(d.content) > 0 {
		c.Content = d.content
	}
	if len(d.reasoning) > 0 {
		c.Reasoning = d.reasoning
	}
	if len(d.calls) > 0 {
		c.ToolCalls = d.calls
	}
	c.ToolArgs = d.toolArgs
	return nil
}
