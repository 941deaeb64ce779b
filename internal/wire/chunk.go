// Package wire is goodput's protocol-neutral wire client. Its vocabulary
// says what a request carries (Request, Message), what a protocol is
// (Protocol, BodyOptions) and what a protocol's decoder reads out of one
// event (Chunk, Usage, Timing, through an EventDecoder). Its Client sends
// requests of any Protocol over HTTP and fills a runlog.Record with every
// token-carrying chunk's arrival time: the connection pool and warm-up, the
// timing, the idle watch, redirects, runaway caps, rate-limit waits and the
// failure classes are the same for every protocol, and StreamMeter turns
// decoded chunks into a record for the client and the proxy alike. Each
// protocol is a package under it (wire/openai, wire/anthropic), and
// wire/protocols is their one table.
//
// A Client is safe for concurrent use once set up (SetModel and
// SetContinuousUsage, which Resolve calls, come before any request); one
// Stream call measures one request.
package wire

import "github.com/goodput/goodput/internal/jsonscan"

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

// Reported says whether t holds at least one value the server reported.
func (t Timing) Reported() bool {
	return t.QueueNs >= 0 || t.PrefillNs >= 0 || t.DecodeNs >= 0 || t.CachedTokens >= 0 || t.PromptN > 0
}

// Chunk is what goodput needs from one streamed event of any protocol
// (the JSON payload of a "data:" event), in the words of OpenAI's chat
// and completions chunks, whose decoder (openai.ChunkDecoder) reads only
// the choice with index 0 (goodput always sends n=1). Byte slices alias
// the decoded payload or the decoder's buffer and are valid until the
// next Decode with the same decoder; they are nil when empty.
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
// before the next stream. openai.ChunkDecoder is the OpenAI chat and
// completions one; other protocols plug theirs into the same meter and
// client.
type EventDecoder interface {
	Decode(data []byte, c *Chunk) error
	DecodeResponse(data []byte, c *Chunk) error
	Reset()
}

// PerTokenChunks is implemented by an EventDecoder whose protocol cuts its
// stream at token boundaries, so every token-carrying chunk carries at
// least one whole token (OpenAI's chunks: one token each, or several under
// speculative decoding). A decoder without it (Anthropic's text deltas may
// split a token) has its per-chunk counts checked less strictly.
type PerTokenChunks interface {
	PerTokenChunks() bool
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
var ErrMalformed = jsonscan.ErrMalformed

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
