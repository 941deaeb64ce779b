package openai

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
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
}

// noTiming is the Timing of a chunk that reported none.
var noTiming = Timing{QueueNs: -1, PrefillNs: -1, DecodeNs: -1, CachedTokens: -1}

// Given reports whether t holds at least one reported value.
func (t Timing) Given() bool {
	return t.QueueNs >= 0 || t.PrefillNs >= 0 || t.DecodeNs >= 0 || t.CachedTokens >= 0
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
}

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
var ErrMalformed = errors.New("malformed chunk")

// maxDepth is the deepest nesting of arrays and objects accepted, the same
// limit as encoding/json, so both agree on which documents are valid.
const maxDepth = 10000

var unknownError = []byte("unknown error")

// ChunkDecoder decodes chunks without building a document: a single pass
// over the bytes that validates the whole payload as JSON, skips what goodput
// does not need and unescapes only the strings it keeps. A ChunkDecoder is
// reusable and allocates nothing per chunk once its buffer has grown; it is
// not safe for concurrent use. The zero value is ready to use.
type ChunkDecoder struct {
	arena  []byte // unescaped string values for the current Decode
	keyBuf []byte // unescaped object key, for keys that contain escapes
	p      parser
	// calls holds the tool_calls elements of every choice parsed in the
	// current Decode (a choice keeps its range); out is Chunk.ToolCalls'
	// storage.
	calls []callSpans
	out   []ToolCallDelta
}

// callSpans locates one tool_calls element's strings.
type callSpans struct {
	index          int
	id, name, args span
}

// span locates a decoded string: data[off:end] of the payload, or of the
// arena when unescaping was needed. Offsets (not slices) survive the arena
// growing while later strings are unescaped.
type span struct {
	off, end int
	arena    bool
}

func (s span) empty() bool { return s.end == s.off }

// choiceState is one element of "choices" while it is being parsed; only
// the first one whose index is 0 (or absent) is kept.
type choiceState struct {
	index             int64
	content, text     span
	reasoningContent  span
	reasoning         span
	finish            span
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
	d.arena = d.arena[:0]
	d.calls = d.calls[:0]
	var callsFrom, callsTo int
	p := &d.p
	*p = parser{data: data, d: d, whole: whole}
	var (
		content, text, reasoningContent, reasoning, finish span
		errMsg, topMsg                                     span
		isErr, objectIsError                               bool
		vllmTiming, llamaTiming                            = noTiming, noTiming
	)
	p.ws()
	if p.pos >= len(data) || data[p.pos] != '{' {
		if p.pos >= len(data) {
			return fmt.Errorf("%w: empty payload", ErrMalformed)
		}
		if err := p.value(); err != nil {
			return err
		}
		return fmt.Errorf("%w: payload is not a JSON object", ErrMalformed)
	}
	_, err := p.members(func(k []byte) (err error) {
		switch string(k) {
		case "choices":
			var ch choiceState
			var found bool
			c.HasChoices, found, err = p.choices(&ch)
			content, text, reasoningContent, reasoning, finish = span{}, span{}, span{}, span{}, span{}
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
			var s span
			var ok bool
			s, ok, err = p.stringOrSkip()
			objectIsError = ok && string(d.bytes(s)) == "error"
		case "message":
			topMsg, _, err = p.stringOrSkip()
		default:
			err = p.value()
		}
		return err
	})
	if err != nil {
		return err
	}
	p.ws()
	if p.pos != len(data) {
		return p.syntax("after top-level value")
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
		case !errMsg.empty():
			c.ErrMessage = d.bytes(errMsg)
		case objectIsError && !topMsg.empty():
			c.ErrMessage = d.bytes(topMsg)
		default:
			c.ErrMessage = unknownError
		}
	}
	return nil
}

// bytes materialises a span; nil when empty.
func (d *ChunkDecoder) bytes(s span) []byte {
	if s.empty() {
		return nil
	}
	if s.arena {
		return d.arena[s.off:s.end:s.end]
	}
	return d.p.data[s.off:s.end:s.end]
}

// parser is the scanning state of one Decode.
type parser struct {
	data  []byte
	pos   int
	depth int
	d     *ChunkDecoder
	whole bool // a non-streamed response: read a choice's "message" as its delta
}

func (p *parser) syntax(what string) error {
	if p.pos >= len(p.data) {
		return fmt.Errorf("%w: unexpected end of JSON %s", ErrMalformed, what)
	}
	return fmt.Errorf("%w: invalid character %q at offset %d %s", ErrMalformed, p.data[p.pos], p.pos, what)
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (p *parser) peek() byte {
	p.ws()
	if p.pos >= len(p.data) {
		return 0
	}
	return p.data[p.pos]
}

func (p *parser) push() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
	}
	return nil
}

// openObject consumes '{' and reports whether a member follows.
func (p *parser) openObject() (bool, error) {
	if p.peek() != '{' {
		return false, p.syntax("looking for beginning of object")
	}
	return p.open('}')
}

// nextMember consumes ',' (true: another member follows) or '}' (false).
func (p *parser) nextMember() (bool, error) { return p.next('}', "after object member") }

// open consumes the opening bracket the caller has checked and reports
// whether the container holds anything (false: it closed at once).
func (p *parser) open(closer byte) (bool, error) {
	p.pos++
	if err := p.push(); err != nil {
		return false, err
	}
	if p.peek() == closer {
		p.pos++
		p.depth--
		return false, nil
	}
	return true, nil
}

// next consumes ',' (true: another member or element follows) or closer
// (false).
func (p *parser) next(closer byte, what string) (bool, error) {
	switch p.peek() {
	case ',':
		p.pos++
		return true, nil
	case closer:
		p.pos++
		p.depth--
		return false, nil
	}
	return false, p.syntax(what)
}

// key parses a member name and its colon. The result aliases the payload
// or the decoder's key buffer and is valid until the next key.
func (p *parser) key() ([]byte, error) {
	if p.peek() != '"' {
		return nil, p.syntax("looking for object key")
	}
	s, err := p.str(true, true)
	if err != nil {
		return nil, err
	}
	var k []byte
	if s.arena {
		k = p.d.keyBuf[s.off:s.end]
	} else {
		k = p.data[s.off:s.end]
	}
	if p.peek() != ':' {
		return nil, p.syntax("after object key")
	}
	p.pos++
	return k, nil
}

// members walks the object at the cursor, calling member with each key and
// the cursor at its value, which member must consume. Any other value is
// skipped, and obj is false.
func (p *parser) members(member func(k []byte) error) (obj bool, err error) {
	if p.peek() != '{' {
		return false, p.value()
	}
	more, err := p.openObject()
	for ; more && err == nil; more, err = p.nextMember() {
		var k []byte
		if k, err = p.key(); err != nil {
			return true, err
		}
		if err = member(k); err != nil {
			return true, err
		}
	}
	return true, err
}

// openArray consumes '[' (the caller has peeked it) and reports whether an
// element follows.
func (p *parser) openArray() (bool, error) { return p.open(']') }

// nextElement consumes ',' (true: another element follows) or ']' (false).
func (p *parser) nextElement() (bool, error) { return p.next(']', "after array element") }

// value validates and skips any JSON value.
func (p *parser) value() error {
	switch c := p.peek(); {
	case c == '"':
		_, err := p.str(false, false)
		return err
	case c == '{':
		more, err := p.openObject()
		for ; more && err == nil; more, err = p.nextMember() {
			if _, err = p.key(); err != nil {
				return err
			}
			if err = p.value(); err != nil {
				return err
			}
		}
		return err
	case c == '[':
		more, err := p.openArray()
		for ; more && err == nil; more, err = p.nextElement() {
			if err = p.value(); err != nil {
				return err
			}
		}
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.number()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.syntax("looking for beginning of value")
}

func (p *parser) literal(lit string) error {
	if len(p.data)-p.pos >= len(lit) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
		p.pos += len(lit)
		return nil
	}
	for i := 0; i < len(lit) && p.pos < len(p.data) && p.data[p.pos] == lit[i]; i++ {
		p.pos++ // point the error at the first wrong byte
	}
	return p.syntax("in literal " + lit)
}

// number validates a JSON number and returns its value when it is an
// integer literal (no fraction or exponent) that fits in int64.
func (p *parser) number() (n int64, isInt bool, err error) {
	d := p.data
	i := p.pos
	neg := false
	if d[i] == '-' {
		neg = true
		i++
	}
	if i >= len(d) || d[i] < '0' || d[i] > '9' {
		p.pos = i
		return 0, false, p.syntax("in numeric literal")
	}
	// Accumulate the magnitude; -(1<<63) is the one value whose magnitude
	// does not fit in int64.
	limit := uint64(1<<63 - 1)
	if neg {
		limit++
	}
	var u uint64
	isInt = true
	if d[i] == '0' {
		i++
	} else {
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
			v := uint64(d[i] - '0')
			if u > (limit-v)/10 {
				isInt = false // valid JSON, but not an int64
			}
			u = u*10 + v
		}
	}
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return 0, false, p.syntax("after decimal point in numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return 0, false, p.syntax("in exponent of numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	if !isInt {
		return 0, false, nil
	}
	if neg {
		return int64(-u), true, nil // two's complement: also right for -(1<<63)
	}
	return int64(u), true, nil
}

// intOrSkip returns the value of an integer literal; any other value is
// validated, skipped and reported as !ok.
func (p *parser) intOrSkip() (int64, bool, error) {
	if c := p.peek(); c == '-' || (c >= '0' && c <= '9') {
		return p.number()
	}
	return 0, false, p.value()
}

// stringOrSkip returns a string value's span; any other value is validated,
// skipped and reported as !ok.
func (p *parser) stringOrSkip() (span, bool, error) {
	if p.peek() == '"' {
		s, err := p.str(true, false)
		return s, err == nil, err
	}
	return span{}, false, p.value()
}

// str parses the string at p.pos (a '"'). With keep, it returns the span of
// its unescaped value: the raw bytes when they need no change, else a copy
// in the arena (or, for keys, in keyBuf) with escapes decoded and each
// invalid UTF-8 byte replaced by U+FFFD, as encoding/json does.
func (p *parser) str(keep, isKey bool) (span, error) {
	d := p.data
	start := p.pos + 1
	i := start
	ascii := true
	for i < len(d) {
		c := d[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			p.pos = i + 1
			if !keep || ascii || utf8.Valid(d[start:i]) {
				return span{off: start, end: i}, nil
			}
			return p.unescape(start, isKey)
		case c == '\\':
			if keep {
				return p.unescape(start, isKey)
			}
			n, err := p.escapeLen(i)
			if err != nil {
				return span{}, err
			}
			i += n
		case c < 0x20:
			p.pos = i
			return span{}, p.syntax("in string literal")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
	p.pos = i
	return span{}, p.syntax("in string literal")
}

// plainASCII marks the bytes a string can hold that need no attention:
// printable ASCII other than '"' and '\\'. A table lookup keeps the scan of
// skipped strings (ids, model names) to a load and a branch per byte.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapeLen validates the escape sequence at d[i] ('\\') and returns its
// length.
func (p *parser) escapeLen(i int) (int, error) {
	d := p.data
	if i+1 >= len(d) {
		p.pos = len(d)
		return 0, p.syntax("in string escape code")
	}
	switch d[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		for j := i + 2; j < i+6; j++ {
			if j >= len(d) || unhex(d[j]) < 0 {
				p.pos = min(j, len(d))
				return 0, p.syntax("in \\u hexadecimal character escape")
			}
		}
		return 6, nil
	}
	p.pos = i + 1
	return 0, p.syntax("in string escape code")
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// u4 decodes the \uXXXX at d[i], or returns -1 when there is none.
func u4(d []byte, i int) rune {
	if i+6 > len(d) || d[i] != '\\' || d[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range d[i+2 : i+6] {
		h := unhex(c)
		if h < 0 {
			return -1
		}
		r = r<<4 | h
	}
	return r
}

// unescape decodes the string starting at d[start] (just after its opening
// quote) into the arena or keyBuf.
func (p *parser) unescape(start int, isKey bool) (span, error) {
	d := p.data
	var out []byte
	if isKey {
		out = p.d.keyBuf[:0]
	} else {
		out = p.d.arena
	}
	off := len(out)
	i := start
	for {
		if i >= len(d) {
			p.pos = i
			return span{}, p.syntax("in string literal")
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			if isKey {
				p.d.keyBuf = out
			} else {
				p.d.arena = out
			}
			return span{off: off, end: len(out), arena: true}, nil
		case c == '\\':
			n, err := p.escapeLen(i)
			if err != nil {
				return span{}, err
			}
			switch e := d[i+1]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := u4(d, i)
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by a low one is one
					// character; anything else becomes U+FFFD and the next
					// escape is decoded on its own, as in encoding/json.
					if dec := utf16.DecodeRune(r, u4(d, i+6)); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						n += 6
						break
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += n
		case c < 0x20:
			p.pos = i
			return span{}, p.syntax("in string literal")
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d[i:i+size]...)
			}
			i += size
		}
	}
}

// choices parses the "choices" value. It reports whether it was a
// non-empty array and whether a choice with index 0 (or no index) was found,
// which is then in ch. A non-array value is skipped.
func (p *parser) choices(ch *choiceState) (nonEmpty, found bool, err error) {
	if p.peek() != '[' {
		return false, false, p.value()
	}
	more, err := p.openArray()
	nonEmpty = more
	for ; more && err == nil; more, err = p.nextElement() {
		if p.peek() != '{' || found {
			if err = p.value(); err != nil {
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
	_, err := p.members(func(k []byte) (err error) {
		switch string(k) {
		case "index":
			ch.index, ch.hasIndexInt, err = p.intOrSkip()
		case "delta", "message":
			if string(k) == "message" && !p.whole {
				return p.value()
			}
			ch.content, ch.reasoningContent, ch.reasoning = span{}, span{}, span{}
			ch.toolArgs, ch.role = 0, false
			ch.callsFrom, ch.callsTo = 0, 0
			return p.delta(ch)
		case "text":
			ch.text, _, err = p.stringOrSkip()
		case "finish_reason":
			ch.finish, _, err = p.stringOrSkip()
		default:
			err = p.value()
		}
		return err
	})
	return err
}

// delta parses a choice's "delta" object (or, in a non-streamed response,
// its "message"); any other value is skipped.
func (p *parser) delta(ch *choiceState) error {
	var toolCalls, functionCall int
	_, err := p.members(func(k []byte) (err error) {
		switch string(k) {
		case "content":
			ch.content, _, err = p.stringOrSkip()
		case "reasoning_content":
			ch.reasoningContent, _, err = p.stringOrSkip()
		case "reasoning":
			ch.reasoning, _, err = p.stringOrSkip()
		case "role":
			_, ch.role, err = p.stringOrSkip()
		case "tool_calls":
			ch.callsFrom = len(p.d.calls)
			toolCalls, err = p.toolCalls()
			ch.callsTo = len(p.d.calls)
		case "function_call":
			functionCall, _, _, err = p.function()
		default:
			err = p.value()
		}
		return err
	})
	ch.toolArgs = toolCalls + functionCall
	return err
}

// toolCalls sums the function text of every element of "tool_calls" and
// records each object element's strings in the decoder's calls.
func (p *parser) toolCalls() (int, error) {
	if p.peek() != '[' {
		return 0, p.value()
	}
	total := 0
	more, err := p.openArray()
	for pos := 0; more && err == nil; more, err = p.nextElement() {
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
	isObject, err = p.members(func(k []byte) (err error) {
		switch string(k) {
		case "function":
			n, cs.name, cs.args, err = p.function()
		case "id":
			cs.id, _, err = p.stringOrSkip()
		case "index":
			var i int64
			var ok bool
			cs.index = pos // a repeated key's last value counts, as in encoding/json
			if i, ok, err = p.intOrSkip(); ok && i >= 0 && i <= maxCallIndex {
				cs.index = int(i)
			}
		default:
			err = p.value()
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
func (p *parser) function() (n int, name, args span, err error) {
	_, err = p.members(func(k []byte) (err error) {
		switch string(k) {
		case "name":
			name, _, err = p.stringOrSkip()
		case "arguments":
			args, _, err = p.stringOrSkip()
		default:
			err = p.value()
		}
		return err
	})
	return (name.end - name.off) + (args.end - args.off), name, args, err
}

// usage parses the "usage" value; null or a non-object gives Present false.
func (p *parser) usage() (Usage, error) {
	var u Usage
	var err error
	u.Present, err = p.members(func(k []byte) (err error) {
		switch string(k) {
		case "prompt_tokens":
			u.PromptTokens, err = p.count()
		case "completion_tokens":
			u.CompletionTokens, err = p.count()
		case "prompt_tokens_details":
			u.CachedTokens, err = p.detail("cached_tokens")
		case "completion_tokens_details":
			u.ReasoningTokens, err = p.detail("reasoning_tokens")
		default:
			err = p.value()
		}
		return err
	})
	return u, err
}

// timingKeys names the members of one server's timing object that hold
// each Timing field ("" where it has none).
type timingKeys struct{ queue, prefill, decode, cached string }

var (
	vllmTimingKeys  = timingKeys{queue: "queue_time_ms", prefill: "time_to_first_token_ms", decode: "generation_time_ms"}
	llamaTimingKeys = timingKeys{prefill: "prompt_ms", decode: "predicted_ms", cached: "cache_n"}
)

// timing parses a server's timing object named by keys; null or a
// non-object gives noTiming. A repeated key's last value counts, as in
// encoding/json.
func (p *parser) timing(keys timingKeys) (Timing, error) {
	t := noTiming
	var err error
	t.Present, err = p.members(func(k []byte) (err error) {
		if len(k) == 0 {
			return p.value() // the keys a server lacks are ""
		}
		switch string(k) {
		case keys.queue:
			t.QueueNs, err = p.millis()
		case keys.prefill:
			t.PrefillNs, err = p.millis()
		case keys.decode:
			t.DecodeNs, err = p.millis()
		case keys.cached:
			var n int64
			var ok bool
			t.CachedTokens = -1
			if n, ok, err = p.intOrSkip(); ok && n >= 0 && n <= maxUsageTokens {
				t.CachedTokens = int(n)
			}
		default:
			err = p.value()
		}
		return err
	})
	if !t.Present {
		return noTiming, err
	}
	return t, err
}

// millis returns a number of milliseconds as ns, or -1 for any other value
// or one that cannot be a duration.
func (p *parser) millis() (int64, error) {
	if c := p.peek(); c != '-' && (c < '0' || c > '9') {
		return -1, p.value()
	}
	start := p.pos
	if _, _, err := p.number(); err != nil {
		return -1, err
	}
	// A number literal is short: the conversion of a slice this small to a
	// string that does not escape stays on the stack.
	v, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
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
	t.CachedTokens = llama.CachedTokens
	return t
}

// count returns an integer literal as an int, or 0 for any other value.
func (p *parser) count() (int, error) {
	n, ok, err := p.intOrSkip()
	if !ok || int64(int(n)) != n {
		return 0, err
	}
	return int(n), err
}

// detail returns the integer member name of a details object (0 if absent).
func (p *parser) detail(name string) (v int, err error) {
	_, err = p.members(func(k []byte) (err error) {
		if string(k) == name {
			v, err = p.count()
			return err
		}
		return p.value()
	})
	return v, err
}

// errorValue parses a top-level "error" member: an object or a string means
// an error (null, as some servers send in every chunk, does not); its
// message is error.message for an object, or the string itself.
func (p *parser) errorValue() (isErr bool, msg span, err error) {
	switch p.peek() {
	case '"':
		msg, err = p.str(true, false)
		return true, msg, err
	case '{':
		_, err = p.members(func(k []byte) (err error) {
			if string(k) == "message" {
				msg, _, err = p.stringOrSkip()
				return err
			}
			return p.value()
		})
		return true, msg, err
	}
	return false, span{}, p.value()
}
