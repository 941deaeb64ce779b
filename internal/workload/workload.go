// Package workload says what to send and when: datasets of requests (with
// prompts of exact token lengths), length distributions, trace replay with
// arrival times, shared prefixes, and open-loop arrival processes.
//
// A [Dataset] is indexed: Shape(i) gives request i's lengths, arrival and
// prefix identity without building text (cheap; the virtual-time simulator
// uses it), and Request(i) adds the text. Both are deterministic for the
// dataset's seed and i, whatever order they are called in, so the same flags
// and seed give byte-identical request sequences.
//
// Datasets are safe for concurrent use once built. [Arrivals] is not.
package workload

import (
	"math/rand/v2"
	"time"
)

// Message is one chat message.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role    string
	Content string
	// ToolCalls are the calls an assistant message made (nil otherwise).
	ToolCalls []MessageToolCall
	// ToolCallID is the call a "tool" message gives the result of.
	ToolCallID string
}

// MessageToolCall is one tool call of an assistant message, as the model
// made it: what a later request resends in the history.
type MessageToolCall struct {
	// ID is the call's id, which the tool message answering it names.
	ID string
	// Name is the function called; Arguments its arguments (JSON text).
	Name, Arguments string
}

// Request is one request to send. Text fields are filled only by
// Dataset.Request (costly); Dataset.Shape gives the same request without text.
type Request struct {
	// Index is the request's index in its dataset.
	Index int
	// Prompt is the completions prompt; for chat endpoints it becomes one user
	// message unless Messages is set.
	Prompt string
	// Messages is the chat form, when the dataset has it.
	Messages []Message
	// PromptTokens is the intended prompt length in tokens (0 = unknown).
	PromptTokens int
	// OutputTokens is the output length to ask for (max_tokens), in tokens;
	// 0 leaves it to the server.
	OutputTokens int
	// OutputRecorded says OutputTokens is the length the source recorded
	// (a trace's output tokens, a ShareGPT reply's length), not only a cap:
	// a simulator generates exactly that many instead of a natural length.
	OutputRecorded bool
	// Arrival is the send time as an offset from the run start, for datasets
	// with timestamps (traces); meaningful only when HasArrival.
	Arrival time.Duration
	// HasArrival reports whether Arrival is set.
	HasArrival bool
	// BlockHashes optionally identify consecutive prompt blocks of
	// HashBlockTokens tokens: equal leading hashes mean an equal prefix
	// (shared system prompts, Mooncake hash_ids). The last block may be
	// partial.
	BlockHashes []uint64
	// HashBlockTokens is the number of tokens per BlockHashes entry.
	HashBlockTokens int
	// Tools are the names of the tools a chat request declares (nil:
	// none); a backend declares each as a function.
	Tools []string
	// ExpectedToolCalls names the tool calls the source recorded in answer
	// to this request (calls made together, in one round); nil when none or
	// unknown. A backend passes it to a simulator as a hint (goodput's
	// simulator makes exactly these calls); real models decide for
	// themselves.
	ExpectedToolCalls []string
	// PreviousResponseID names the server's stored answer this request
	// continues (Responses' previous_response_id); Messages then hold only
	// what came after it. "" for a request that carries its history.
	PreviousResponseID string
	// Session names the session (conversation, agent loop) the request
	// is a turn of; "" for none. A backend sends it for session-affinity
	// routing (openai.HeaderSession).
	Session string
}

// Dataset is an indexed, deterministic source of requests.
type Dataset interface {
	// Name identifies the dataset, e.g. "random" or "custom:prompts.jsonl".
	Name() string
	// Len is the number of distinct requests; callers cycle (i % Len) for
	// longer runs.
	Len() int
	// Shape returns request i without text; deterministic for (seed, i).
	Shape(i int) Request
	// Request returns request i with text; deterministic for (seed, i); its
	// non-text fields equal Shape(i)'s.
	Request(i int) Request
}

// Streams of the per-request random generators, so that lengths, text and
// prefixes drawn for one index do not depend on each other.
const (
	streamShape uint64 = iota + 1
	streamText
	streamPrefix
	streamBlock
	streamBust
	streamSample
)

// rngFor returns a generator determined by (seed, stream, i) alone, so any
// request can be built without building those before it.
func rngFor(seed int64, stream uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(mix(uint64(seed), stream), mix(uint64(i), stream^0x9e3779b97f4a7c15)))
}

// mix is the SplitMix64 finalizer: it spreads nearby seeds and indexes far
// apart so that PCG streams for i and i+1 are unrelated.
func mix(x, salt uint64) uint64 {
	x += salt * 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
