package openai

import (
	"math"
	"strconv"

	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
)

// noTiming is the Timing of a chunk that reported none (wire.NoTiming),
// kept here as the decoders compare and assign it per chunk.
var noTiming = wire.NoTiming()

// maxServerMs bounds a believable reported duration (ms): a year. Above it
// a value is taken as not given rather than overflowing a count of ns.
const maxServerMs = 365 * 24 * 3600 * 1e3

// msToNs converts a reported duration in ms to ns; -1 for a value that
// cannot be a duration (negative, NaN, beyond maxServerMs).
func msToNs(ms float64) int64 {
	if !(ms >= 0 && ms <= maxServerMs) {
		return -1
	}
	return int64(math.Round(ms * 1e6))
}

// Reset implements EventDecoder: an OpenAI chunk stands on its own, so
// there is nothing to forget.
func (d *ChunkDecoder) Reset() {}

var unknownError = []byte("unknown error")

// ChunkDecoder decodes chunks without building a document: a single pass
// over the bytes that validates the whole payload as JSON, skips what goodput
// does not need and unescapes only the strings it keeps. A ChunkDecoder is
// reusable and allocates nothing per chunk once its buffer has grown; it is
// not safe for concurrent use. The zero value is ready to use.
type ChunkDecoder struct {
	p parser
	// calls holds the tool_calls elements of every choice parsed in the
	// current Decode (a choice keeps its range); out is Chunk.ToolCalls'
	// storage.
	calls []callSpans
	out   []wire.ToolCallDelta
}

// callSpans locates one tool_calls element's strings.
type callSpans struct {
	index          int
	id, name, args jsonscan.Span
}

// choiceState is one element of "choices" while it is being parsed; only
// the first one whose index is 0 (or absent) is kept.
type choiceState struct {
	index             int64
	content, text     jsonscan.Span
	reasoningContent  jsonscan.Span
	reasoning         jsonscan.Span
	finish            jsonscan.Span
	toolArgs          int
	role, hasIndexInt bool
	// callsFrom and callsTo are the choice's range of the decoder's calls.
	callsFrom, callsTo int
}

// Decode parses one chunk payload into c, overwriting all of c. It returns
// an error wrapping ErrMalformed when data is not a valid JSON object; the
// caller decides what that means for the request (a [DONE] sentinel is not
// JSON and must be handled before calling Decode).
func (d *ChunkDecoder) Decode(data []byte, c *wire.Chunk) error {
	return d.decode(data, c, false)
}

// DecodeResponse parses the body of a non-streamed completion ("stream":
// false) into c, as Decode does a chunk: a chat choice's "message" is read
// as a chunk's "delta" is (content, reasoning, tool calls), so c holds the
// whole generated text and the final usage. In a streamed chunk "message"
// is ignored, so a server that also sends it cannot double the text.
func (d *ChunkDecoder) DecodeResponse(data []byte, c *wire.Chunk) error {
	return d.decode(data, c, true)
}

func (d *ChunkDecoder) decode(data []byte, c *wire.Chunk, whole bool) error {
	*c = wire.Chunk{}
	d.calls = d.calls[:0]
	var callsFrom, callsTo int
	p := &d.p
	p.d, p.whole = d, whole
	var (
		content, text, reasoningContent, reasoning, finish jsonscan.Span
		errMsg, topMsg                                     jsonscan.Span
		isErr, objectIsError                               bool
		vllmTiming, llamaTiming                            = noTiming, noTiming
	)
	err := p.Document(data, func(k []byte) (err error) {
		switch string(k) {
		case "choices":
			var ch choiceState
			var found bool
			c.HasChoices, found, err = p.choices(&ch)
			content, text, reasoningContent, reasoning, finish = jsonscan.Span{}, jsonscan.Span{}, jsonscan.Span{}, jsonscan.Span{}, jsonscan.Span{}
			c.ToolArgs, c.Role = 0, false
			callsFrom, callsTo = 0, 0
			if found {
				content, text, finish = ch.content, ch.text, ch.finish
				reasoningContent, reasoning = ch.reasoningContent, ch.reasoning
				c.ToolArgs, c.Role = ch.toolArgs, ch.role
				callsFrom, callsTo = ch.callsFrom, ch.callsTo
			}
		case "usage":
			c.Usage, err = p.usage()
		case "metrics":
			vllmTiming, err = p.timing(vllmTimingKeys)
		case "timings":
			llamaTiming, err = p.timing(llamaTimingKeys)
		case "error":
			isErr, errMsg, err = p.errorValue()
		case "object":
			var s jsonscan.Span
			var ok bool
			s, ok, err = p.Str()
			objectIsError = ok && string(d.bytes(s)) == "error"
		case "message":
			topMsg, _, err = p.Str()
		default:
			err = p.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}

	c.Timing = mergeTiming(vllmTiming, llamaTiming)
	c.Content = d.bytes(content)
	if len(c.Content) == 0 {
		c.Content = d.bytes(text)
	}
	c.Reasoning = d.bytes(reasoningContent)
	if len(c.Reasoning) == 0 {
		c.Reasoning = d.bytes(reasoning)
	}
	c.FinishReason = d.bytes(finish)
	if callsTo > callsFrom {
		d.out = d.out[:0]
		for _, cs := range d.calls[callsFrom:callsTo] {
			d.out = append(d.out, wire.ToolCallDelta{Index: cs.index, ID: d.bytes(cs.id), Name: d.bytes(cs.name), Arguments: d.bytes(cs.args)})
		}
		c.ToolCalls = d.out
	}
	if isErr || objectIsError {
		switch {
		case !errMsg.Empty():
			c.ErrMessage = d.bytes(errMsg)
		case objectIsError && !topMsg.Empty():
			c.ErrMessage = d.bytes(topMsg)
		default:
			c.ErrMessage = unknownError
		}
	}
	return nil
}

// bytes materialises a span; nil when empty.
func (d *ChunkDecoder) bytes(s jsonscan.Span) []byte { return d.p.Bytes(s) }

// parser is the scanning state of one Decode.
type parser struct {
	jsonscan.Scanner
	d     *ChunkDecoder
	whole bool // a non-streamed response: read a choice's "message" as its delta
}

// choices parses the "choices" value. It reports whether it was a
// non-empty array and whether a choice with index 0 (or no index) was found,
// which is then in ch. A non-array value is skipped.
func (p *parser) choices(ch *choiceState) (nonEmpty, found bool, err error) {
	if p.Peek() != '[' {
		return false, false, p.Skip()
	}
	more, err := p.OpenArray()
	nonEmpty = more
	for ; more && err == nil; more, err = p.NextElement() {
		if p.Peek() != '{' || found {
			if err = p.Skip(); err != nil {
				return false, false, err
			}
			continue
		}
		*ch = choiceState{}
		if err = p.choice(ch); err != nil {
			return false, false, err
		}
		found = !ch.hasIndexInt || ch.index == 0
	}
	return nonEmpty, found, err
}

// choice parses one element of "choices".
func (p *parser) choice(ch *choiceState) error {
	_, err := p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "index":
			ch.index, ch.hasIndexInt, err = p.Int()
		case "delta", "message":
			if string(k) == "message" && !p.whole {
				return p.Skip()
			}
			ch.content, ch.reasoningContent, ch.reasoning = jsonscan.Span{}, jsonscan.Span{}, jsonscan.Span{}
			ch.toolArgs, ch.role = 0, false
			ch.callsFrom, ch.callsTo = 0, 0
			return p.delta(ch)
		case "text":
			ch.text, _, err = p.Str()
		case "finish_reason":
			ch.finish, _, err = p.Str()
		default:
			err = p.Skip()
		}
		return err
	})
	return err
}

// delta parses a choice's "delta" object (or, in a non-streamed response,
// its "message"); any other value is skipped.
func (p *parser) delta(ch *choiceState) error {
	var toolCalls, functionCall int
	_, err := p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "content":
			ch.content, _, err = p.Str()
		case "reasoning_content":
			ch.reasoningContent, _, err = p.Str()
		case "reasoning":
			ch.reasoning, _, err = p.Str()
		case "role":
			_, ch.role, err = p.Str()
		case "tool_calls":
			ch.callsFrom = len(p.d.calls)
			toolCalls, err = p.toolCalls()
			ch.callsTo = len(p.d.calls)
		case "function_call":
			functionCall, _, _, err = p.function()
		default:
			err = p.Skip()
		}
		return err
	})
	ch.toolArgs = toolCalls + functionCall
	return err
}

// toolCalls sums the function text of every element of "tool_calls" and
// records each object element's strings in the decoder's calls.
func (p *parser) toolCalls() (int, error) {
	if p.Peek() != '[' {
		return 0, p.Skip()
	}
	total := 0
	more, err := p.OpenArray()
	for pos := 0; more && err == nil; more, err = p.NextElement() {
		var n int
		if n, err = p.toolCall(pos); err != nil {
			return 0, err
		}
		total += n
		pos++
	}
	return total, err
}

// toolCall returns the function text length of one tool_calls element (at
// position pos of the array); a non-object element counts 0 and is not
// recorded.
func (p *parser) toolCall(pos int) (n int, err error) {
	cs := callSpans{index: pos}
	var isObject bool
	isObject, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "function":
			n, cs.name, cs.args, err = p.function()
		case "id":
			cs.id, _, err = p.Str()
		case "index":
			var i int64
			var ok bool
			cs.index = pos // a repeated key's last value counts, as in encoding/json
			if i, ok, err = p.Int(); ok && i >= 0 && i <= maxCallIndex {
				cs.index = int(i)
			}
		default:
			err = p.Skip()
		}
		return err
	})
	if isObject && err == nil {
		p.d.calls = append(p.d.calls, cs)
	}
	return n, err
}

// maxCallIndex bounds a believable tool call index; larger ones are taken
// as the element's position.
const maxCallIndex = 1 << 16

// function returns the unescaped length of a function object's name plus
// arguments, and their spans; a non-object value counts 0.
func (p *parser) function() (n int, name, args jsonscan.Span, err error) {
	_, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "name":
			name, _, err = p.Str()
		case "arguments":
			args, _, err = p.Str()
		default:
			err = p.Skip()
		}
		return err
	})
	return name.Len() + args.Len(), name, args, err
}

// usage parses the "usage" value; null or a non-object gives Present false.
func (p *parser) usage() (wire.Usage, error) {
	var u wire.Usage
	var err error
	u.Present, err = p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "prompt_tokens":
			u.PromptTokens, err = p.IntValue()
		case "completion_tokens":
			u.CompletionTokens, err = p.IntValue()
		case "prompt_tokens_details":
			u.CachedTokens, err = p.MemberInt("cached_tokens")
		case "completion_tokens_details":
			u.ReasoningTokens, err = p.MemberInt("reasoning_tokens")
		default:
			err = p.Skip()
		}
		return err
	})
	return u, err
}

// timingKeys names the members of one server's timing object that hold
// each Timing field ("" where it has none).
type timingKeys struct{ queue, prefill, decode, cached, processed string }

var (
	vllmTimingKeys  = timingKeys{queue: "queue_time_ms", prefill: "time_to_first_token_ms", decode: "generation_time_ms"}
	llamaTimingKeys = timingKeys{prefill: "prompt_ms", decode: "predicted_ms", cached: "cache_n", processed: "prompt_n"}
)

// timing parses a server's timing object named by keys; null or a
// non-object gives noTiming. A repeated key's last value counts, as in
// encoding/json.
func (p *parser) timing(keys timingKeys) (wire.Timing, error) {
	t := noTiming
	var err error
	t.Present, err = p.Members(func(k []byte) (err error) {
		if len(k) == 0 {
			return p.Skip() // the keys a server lacks are ""
		}
		switch string(k) {
		case keys.queue:
			t.QueueNs, err = p.millis()
		case keys.prefill:
			t.PrefillNs, err = p.millis()
		case keys.decode:
			t.DecodeNs, err = p.millis()
		case keys.cached:
			t.CachedTokens, err = p.count(wire.MaxUsageTokens)
		case keys.processed:
			var n int
			n, err = p.count(wire.MaxUsageTokens)
			t.PromptN = max(n, 0)
		case "kv_transfer_time_ms":
			t.KVTransferNs, err = p.millis()
		case "decode_engine":
			t.DecodeEngine, err = p.count(runlog.MaxReplica)
		default:
			err = p.Skip()
		}
		return err
	})
	if !t.Present {
		return noTiming, err
	}
	return t, err
}

// count returns a whole number in [0, limit], or -1 for any other value.
func (p *parser) count(limit int64) (int, error) {
	n, ok, err := p.Int()
	if !ok || n < 0 || n > limit {
		return -1, err
	}
	return int(n), err
}

// millis returns a number of milliseconds as ns, or -1 for any other value
// or one that cannot be a duration.
func (p *parser) millis() (int64, error) {
	if c := p.Peek(); c != '-' && (c < '0' || c > '9') {
		return -1, p.Skip()
	}
	start := p.Pos()
	if _, _, err := p.Number(); err != nil {
		return -1, err
	}
	// A number literal is short: the conversion of a slice this small to a
	// string that does not escape stays on the stack.
	v, err := strconv.ParseFloat(string(p.Data()[start:p.Pos()]), 64)
	if err != nil {
		return -1, nil // out of float64's range: valid JSON, no duration
	}
	return msToNs(v), nil
}

// mergeTiming combines the two servers' objects field by field, vLLM's
// first (a server sending both is a proxy or a simulator of both).
func mergeTiming(vllm, llama wire.Timing) wire.Timing {
	t := vllm
	t.Present = vllm.Present || llama.Present
	if t.PrefillNs < 0 {
		t.PrefillNs = llama.PrefillNs
	}
	if t.DecodeNs < 0 {
		t.DecodeNs = llama.DecodeNs
	}
	t.CachedTokens, t.PromptN = llama.CachedTokens, llama.PromptN
	return t
}

// errorValue parses a top-level "error" member: an object or a string means
// an error (null, as some servers send in every chunk, does not); its
// message is error.message for an object, or the string itself.
func (p *parser) errorValue() (isErr bool, msg jsonscan.Span, err error) {
	switch p.Peek() {
	case '"':
		msg, _, err = p.Str()
		return true, msg, err
	case '{':
		_, err = p.Members(func(k []byte) (err error) {
			if string(k) == "message" {
				msg, _, err = p.Str()
				return err
			}
			return p.Skip()
		})
		return true, msg, err
	}
	return false, jsonscan.Span{}, p.Skip()
}

// PerTokenChunks reports that OpenAI's chunks carry whole tokens (see
// wire.PerTokenChunks).
func (*ChunkDecoder) PerTokenChunks() bool { return true }
