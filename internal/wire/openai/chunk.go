package openai

import (
	"math"
	"strconv"

	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/runlog"
)

// Usage is the token accounting a server reports in a chunk's "usage"
// object. Counts are tokens; zero means absent (or reported as zero).
type Usage struct {
	// Present is true when the chunk had a non-null "usage" object.
	Present bool
	// PromptTokens is usage.prompt_tokens.
	PromptTokens int
	// CompletionTokens is usage.completion_tokens (reasoning included).
	CompletionTokens int
	// ReasoningTokens is usage.completion_tokens_details.reasoning_tokens.
	ReasoningTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens.
	CachedTokens int
}

// Timing is the per-request timing a server reported about itself, read
// from the top-level objects two servers send (typically only in a
// stream's last chunk, and in a whole response):
//
//   - vLLM's "metrics" (--enable-per-request-metrics; the PerRequestMetrics
//     of vllm/entrypoints/generate/base): queue_time_ms (queued to first
//     scheduled), time_to_first_token_ms (first scheduled to first token:
//     despite its name it excludes the queue) and generation_time_ms (first
//     to last token). vLLM attaches it to a stream's usage chunk.
//   - llama.cpp's "timings" (tools/server result_timings): prompt_ms
//     (prompt processing, ending with the first token), predicted_ms (first
//     to last token) and cache_n (prompt tokens reused from its cache).
//
// Durations are ns, converted from the servers' milliseconds (rounded to
// the nearest ns); a field is -1 when no object gave it (a null, a
// negative or a non-number counts as not given). Where both objects give a
// duration, vLLM's is used.
type Timing struct {
	// Present is true when the chunk had a "metrics" or "timings" object,
	// whatever it held.
	Present bool
	// QueueNs is the time before first being scheduled (vLLM
	// queue_time_ms); llama.cpp reports none.
	QueueNs int64
	// PrefillNs is from first being scheduled to the first generated token
	// (vLLM time_to_first_token_ms, else llama.cpp prompt_ms).
	PrefillNs int64
	// DecodeNs is from the first to the last generated token (vLLM
	// generation_time_ms, else llama.cpp predicted_ms).
	DecodeNs int64
	// CachedTokens is the prompt tokens served from the server's cache
	// (llama.cpp cache_n; vLLM reports them in usage instead).
	CachedTokens int
	// PromptN is the prompt tokens the server processed, those not served
	// from its cache (llama.cpp's prompt_n); 0 when not given — llama.cpp
	// always processes at least the prompt's last token. With the usage's
	// prompt_tokens it gives the cached tokens of a llama.cpp too old to
	// send cache_n.
	PromptN int
	// KVTransferNs and DecodeEngine are, from goodput's simulated
	// prefill/decode split, the KV transfer's time (kv_transfer_time_ms)
	// and the replica (from 1, its engine label) that decoded the request
	// (decode_engine); -1 when not given, as from any other server.
	KVTransferNs int64
	DecodeEngine int
}

// noTiming is the Timing of a chunk that reported none.
var noTiming = Timing{QueueNs: -1, PrefillNs: -1, DecodeNs: -1, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}

// NoTiming is the Timing of a chunk that reported none (every field -1;
// a zero Timing would read as timings of 0 ns), for other protocols'
// decoders.
func NoTiming() Timing { return noTiming }

// Given reports whether t holds at least one reported value.
func (t Timing) Given() bool {
	return t.QueueNs >= 0 || t.PrefillNs >= 0 || t.DecodeNs >= 0 || t.CachedTokens >= 0 || t.PromptN > 0
}

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

// Chunk is what goodput needs from one streamed chunk (the JSON payload of a
// "data:" event) of /v1/chat/completions or /v1/completions. Only the choice
// with index 0 is read (goodput always sends n=1). Byte slices alias the
// decoded payload or the decoder's buffer and are valid until the next
// Decode with the same ChunkDecoder; they are nil when empty.
type Chunk struct {
	// Content is the generated visible text, unescaped: delta.content, or
	// the completions API's text when delta.content is empty.
	Content []byte
	// Reasoning is hidden reasoning text, unescaped: delta.reasoning_content
	// (vLLM, SGLang, DeepSeek) or, when that is empty, delta.reasoning
	// (newer vLLM, OpenRouter, Ollama). Servers that send both send the same
	// text twice, so it is never counted twice.
	Reasoning []byte
	// ToolArgs is the number of bytes of tool-call text in the delta: the
	// unescaped function name and arguments of every delta.tool_calls entry
	// and of the legacy delta.function_call. They are generated but hidden
	// tokens.
	ToolArgs int
	// ToolCalls are the delta's tool_calls entries (nil when none), for a
	// caller that follows the calls: an agent loop sends each call's result
	// back under its id. The bytes alias the payload or the decoder's
	// buffer, as Content does.
	ToolCalls []ToolCallDelta
	// Role is true when the delta carried a role string (typically only the
	// first chunk, which carries no token).
	Role bool
	// FinishReason is the choice's finish_reason; nil while generating.
	FinishReason []byte
	// HasChoices is true when "choices" is a non-empty array. Usage-only
	// chunks have "choices":[].
	HasChoices bool
	// Usage is the chunk's usage object, if any.
	Usage Usage
	// Timing is the server's per-request timing, if the chunk carried one
	// (every field -1 when it did not).
	Timing Timing
	// ErrMessage is non-empty when the payload is an error: an "error"
	// member that is an object or a string, or vLLM's
	// {"object":"error","message":...}.
	// It holds the server's message, or "unknown error" when it gave none.
	ErrMessage []byte
	// End is set by protocols whose stream ends with an event of their own
	// (Anthropic's message_stop, Responses' response.completed) rather than
	// OpenAI's [DONE]: the answer is complete.
	End bool
	// ResponseID is the server's id of the answer when the protocol lets a
	// later request continue from it (Responses' previous_response_id).
	ResponseID []byte
	// Inputs is the number of inputs a non-generating answer covers (the
	// vectors of an embeddings answer); 0 for generated answers.
	Inputs int
}

// EventDecoder reads one wire protocol's answers into Chunks: Decode one
// streamed event's data, DecodeResponse a whole (non-streamed) body. A
// decoder may keep state across the events of one stream (the kind of each
// content block, the prompt counts of a start event); Reset forgets it
// before the next stream. ChunkDecoder is the OpenAI chat and completions
// one; other protocols plug theirs into the same meter and client.
type EventDecoder interface {
	Decode(data []byte, c *Chunk) error
	DecodeResponse(data []byte, c *Chunk) error
	Reset()
}

// Reset implements EventDecoder: an OpenAI chunk stands on its own, so
// there is nothing to forget.
func (d *ChunkDecoder) Reset() {}

// ToolCallDelta is one element of a delta's "tool_calls": a streamed call
// arrives in pieces, the first with its id and function name, the next ones
// with fragments of its arguments, all under the same index.
type ToolCallDelta struct {
	// Index is the call's "index" (its position among the answer's calls);
	// the element's position in the array when absent.
	Index int
	// ID, Name and Arguments are the unescaped "id", "function.name" and
	// "function.arguments" fragments; nil when absent.
	ID, Name, Arguments []byte
}

// ErrMalformed is wrapped by every error Decode returns: the payload is not
// valid JSON, or not a JSON object.
var ErrMalformed = jsonscan.ErrMalformed

var unknownError = []byte("unknown error")

// ErrorText is an error event's text as a record keeps it: "kind: message"
// (built in *buf, reused across events), or whichever of the two was
// given, or none. Protocols name the kind differently (Anthropic's type,
// Responses' code) but join it the same way.
func ErrorText(buf *[]byte, kind, msg, none []byte) []byte {
	switch {
	case len(kind) > 0 && len(msg) > 0:
		*buf = append(append(append((*buf)[:0], kind...), ": "...), msg...)
		return *buf
	case len(msg) > 0:
		return msg
	case len(kind) > 0:
		return kind
	}
	return none
}

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
	out   []ToolCallDelta
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
func (d *ChunkDecoder) Decode(data []byte, c *Chunk) error {
	return d.decode(data, c, false)
}

// DecodeResponse parses the body of a non-streamed completion ("stream":
// false) into c, as Decode does a chunk: a chat choice's "message" is read
// as a chunk's "delta" is (content, reasoning, tool calls), so c holds the
// whole generated text and the final usage. In a streamed chunk "message"
// is ignored, so a server that also sends it cannot double the text.
func (d *ChunkDecoder) DecodeResponse(data []byte, c *Chunk) error {
	return d.decode(data, c, true)
}

func (d *ChunkDecoder) decode(data []byte, c *Chunk, whole bool) error {
	*c = Chunk{}
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
			d.out = append(d.out, ToolCallDelta{Index: cs.index, ID: d.bytes(cs.id), Name: d.bytes(cs.name), Arguments: d.bytes(cs.args)})
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
func (p *parser) usage() (Usage, error) {
	var u Usage
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
func (p *parser) timing(keys timingKeys) (Timing, error) {
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
			t.CachedTokens, err = p.count(maxUsageTokens)
		case keys.processed:
			var n int
			n, err = p.count(maxUsageTokens)
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
func mergeTiming(vllm, llama Timing) Timing {
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
