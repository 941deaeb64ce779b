// Package runlog holds goodput's one data model: the per-request Record, the
// run's metadata, the JSON Lines codec that stores them, the merging of
// records files onto one clock (Merge: the levels of a sweep, the shards of
// a distributed run), and the metric definitions (TTFT, TTP, ITL, TPOT,
// E2E, response time) computed from a Record. Every producer (bench, sim,
// proxy) writes Records and every consumer (stats, report, compare) reads
// them, so a metric is defined exactly once, here.
//
// Times are nanoseconds from the run's start on the monotonic clock.
// Record and Meta values are not safe for concurrent mutation; Writer is safe
// for concurrent use.
package runlog

import (
	"slices"
	"time"
)

// ErrorClass names why a request failed. The empty class means success.
type ErrorClass string

// The error classes a request can end with.
const (
	ErrNone         ErrorClass = ""
	ErrConnect      ErrorClass = "connect"       // could not connect (refused, DNS, TLS)
	ErrConnectReset ErrorClass = "connect_reset" // connection reset before a response (e.g. full listen backlog)
	ErrHTTP4xx      ErrorClass = "http_4xx"      // 4xx status other than 429
	ErrHTTP429      ErrorClass = "http_429"      // rate limited
	ErrHTTP5xx      ErrorClass = "http_5xx"      // server error status
	ErrStream       ErrorClass = "stream_error"  // error event or broken stream after a 200
	ErrMalformed    ErrorClass = "malformed"     // a chunk that is not the JSON we expect
	ErrTimeout      ErrorClass = "timeout"       // the whole request exceeded --timeout
	ErrIdleTimeout  ErrorClass = "idle_timeout"  // no bytes for longer than the idle timeout
	ErrCancelled    ErrorClass = "cancelled"     // the run was stopped (Ctrl-C, duration reached)
)

// ErrNotEventStream is the class of a streamed request answered 200 with
// neither an event stream nor JSON (e.g. a gateway's HTML page).
const ErrNotEventStream ErrorClass = "not_event_stream"

// The error classes of a response the bench client would not follow or
// read to its end.
const (
	// ErrRedirect is a 3xx answer not followed: to another origin (scheme,
	// host or port), a same-origin one without --follow-redirects, or one
	// that would turn the POST into a GET.
	ErrRedirect ErrorClass = "redirect"
	// ErrRedirectLoop is a chain of followed redirects that came back to a
	// URL already visited or grew past ten.
	ErrRedirectLoop ErrorClass = "redirect_loop"
	// ErrBadResponse is a response that is not readable HTTP: a status
	// line or header that does not parse, headers over the client's limit,
	// a connection cut inside them, or a content coding not decoded.
	ErrBadResponse ErrorClass = "bad_response"
	// ErrRunaway is a stream that carried far more than was asked (more
	// tokens than max(4 × max_tokens, max_tokens + 1024), or the client's
	// cap without max_tokens), or one event or byte count beyond any sane
	// size: the client stopped reading it.
	ErrRunaway ErrorClass = "runaway"
)

// ErrorClasses lists every failure class in a stable order, for reports.
var ErrorClasses = []ErrorClass{
	ErrConnect, ErrConnectReset, ErrHTTP4xx, ErrHTTP429, ErrHTTP5xx,
	ErrStream, ErrMalformed, ErrTimeout, ErrIdleTimeout, ErrCancelled,
	ErrNotEventStream, ErrRedirect, ErrRedirectLoop, ErrBadResponse, ErrRunaway,
}

// TokenSource says where a Record's token counts came from.
type TokenSource string

// Token count sources.
const (
	// TokensUsage means the server's usage object gave the counts.
	TokensUsage TokenSource = "usage"
	// TokensCounted means the client counted them (one per chunk, or with a
	// tokenizer); chunk counting can undercount when a server merges tokens.
	TokensCounted TokenSource = "counted"
)

// Chunk is one token-carrying piece of a streamed response.
type Chunk struct {
	// T is the arrival time of the complete event, ns from the run start.
	T int64
	// Tokens is how many generated tokens the chunk carries (≥ 1).
	Tokens int32
	// Visible is true for content the user sees; false for hidden tokens
	// (reasoning, <think> text, tool-call arguments).
	Visible bool
}

// ServerTiming is the server's own view of a request: the simulated
// engine's truth, or what a real server reported with its answer (vLLM's
// per-request metrics, llama.cpp's timings); nil when the server said
// nothing.
type ServerTiming struct {
	// ArrivalNs is when the engine received the request, ns from run start.
	ArrivalNs int64 `json:"arrival_ns"`
	// QueueNs is the time spent waiting before first being scheduled.
	QueueNs int64 `json:"queue_ns"`
	// PrefillNs is from first scheduled to the first generated token.
	PrefillNs int64 `json:"prefill_ns"`
	// DecodeNs is from the first to the last generated token.
	DecodeNs int64 `json:"decode_ns"`
	// Preemptions counts how often the request was evicted and recomputed.
	Preemptions int `json:"preemptions"`
	// CachedTokens is the prompt tokens served from the prefix cache.
	CachedTokens int `json:"cached_tokens"`
	// QueueUnknown says the server reported no queue time (llama.cpp's
	// timings have none): QueueNs is 0 for want of a figure, not a
	// measured 0.
	QueueUnknown bool `json:"queue_unknown,omitempty"`
	// KVTransferNs is, on a simulated prefill/decode split, the time from
	// the first token on the prefill replica to the prompt's KV arriving
	// at the decode side (waiting for the link included); DecodeNs
	// includes it. 0 elsewhere (omitted).
	KVTransferNs int64 `json:"kv_transfer_ns,omitempty"`
	// DecodeReplica is, on a prefill/decode split, the replica (from 1)
	// that decoded the request; Record.Replica is then its prefill
	// replica. 0 elsewhere (omitted).
	DecodeReplica int `json:"decode_replica,omitempty"`
}

// HistorySource says where a session turn's earlier answers came from.
type HistorySource string

// History sources.
const (
	// HistoryServer resends what the server actually answered, so a prefix
	// cache sees what it would see in production.
	HistoryServer HistorySource = "server"
	// HistoryRecorded resends the dataset's recorded answers.
	HistoryRecorded HistorySource = "recorded"
	// HistoryChained resends nothing: each request names the server's
	// previous answer (Responses' previous_response_id) and carries only
	// the turn's new messages, so the history lives on the server.
	HistoryChained HistorySource = "chained"
)

// Record is one request's measurement, written the moment the request ends.
type Record struct {
	// ID is the request id (sent as x-request-id).
	ID string `json:"id"`
	// Level is the index of the load level the request belongs to (0 outside
	// a sweep).
	Level int `json:"level"`
	// Replica is the replica of a simulated cluster that served the
	// request, numbered from 1; 0 outside a cluster.
	Replica int `json:"replica,omitempty"`
	// Priority is the request's priority class (0 interactive, 1 batch,
	// ...), as the workload's class mix gave it; 0 when it gave none.
	Priority int `json:"priority,omitempty"`
	// Degraded says how a gateway degraded the request under overload:
	// "max_tokens" (output capped), "reasoning" (hidden reasoning cut) or
	// "small_model" (routed to a smaller model's pool); "" not degraded.
	Degraded string `json:"degraded,omitempty"`
	// Model is the model the request named, where one run's requests may
	// name different models (live traffic through the proxy); "" when the
	// run's Meta.Model says it for all.
	Model string `json:"model,omitempty"`
	// Warmup marks requests excluded from results.
	Warmup bool `json:"warmup,omitempty"`

	// Intended is when the arrival schedule wanted the request sent, ns.
	Intended int64 `json:"intended_ns"`
	// Sent is when the request was actually written, ns.
	Sent int64 `json:"sent_ns"`
	// ConnectNs is time spent establishing a new connection for this request
	// (0 when a pooled connection was reused). It comes before Sent, which
	// is stamped once the connection is in hand, so it is outside TTFT and
	// E2E (and inside the response time, measured from Intended).
	ConnectNs int64 `json:"connect_ns,omitempty"`
	// Chunks holds every token-carrying chunk in arrival order.
	Chunks []Chunk `json:"chunks"`
	// End is when the stream ended ([DONE], EOF or error), ns.
	End int64 `json:"end_ns"`

	// PromptTokens is the input length in tokens.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the output length in tokens (reasoning included).
	CompletionTokens int `json:"completion_tokens"`
	// ReasoningTokens is the hidden part of CompletionTokens, if known.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// CachedTokens is the prompt tokens the server served from its prefix
	// cache (usage.prompt_tokens_details.cached_tokens).
	CachedTokens int `json:"cached_tokens,omitempty"`
	// TokenSource says whether the counts came from usage or were counted.
	TokenSource TokenSource `json:"token_source,omitempty"`
	// UsageRejected says why the server's usage was not believed (negative,
	// far above what the stream carried, decreasing), so the counts were
	// counted instead; empty when usage was trusted or absent.
	UsageRejected string `json:"usage_rejected,omitempty"`
	// RequestedPromptTokens is the prompt length the workload asked for (0
	// when unknown), to measure prompt-synthesis mismatch.
	RequestedPromptTokens int `json:"requested_prompt_tokens,omitempty"`
	// MaxTokens is the output cap sent with the request (0 for none).
	MaxTokens int `json:"max_tokens,omitempty"`

	// Status is the HTTP status (0 when no response arrived).
	Status int `json:"status"`
	// Redirects counts the same-origin redirects followed on the way to
	// the answer (bench --follow-redirects); 0 when none.
	Redirects int `json:"redirects,omitempty"`
	// WholeAnswer marks a request answered with one whole body, not a
	// stream: sent with --no-stream, or a streamed request whose server
	// ignored "stream": true. Its one chunk at the body's arrival carries
	// every token, so its E2E is measured but its TTFT, TTP, TPOT and ITL
	// are not (the methods report them absent).
	WholeAnswer bool `json:"whole_answer,omitempty"`
	// FinishReason is the last finish_reason seen.
	FinishReason string `json:"finish_reason,omitempty"`
	// ErrorClass is empty for success, else why the request failed.
	ErrorClass ErrorClass `json:"error_class,omitempty"`
	// Error is a one-line human message for a failure.
	Error string `json:"error,omitempty"`
	// GeneratedText is the visible text the server generated (the content
	// of every chunk, as vLLM's generated_text), kept only when asked for
	// (bench --save-detailed); empty otherwise.
	GeneratedText string `json:"generated_text,omitempty"`
	// ToolCalls are the tool calls the model answered with (id and name;
	// the arguments only when text is kept, as GeneratedText); nil when it
	// answered with none.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`

	// SessionID names the session (a conversation, an agent loop) the
	// request is a turn of; "" outside a session.
	SessionID string `json:"session_id,omitempty"`
	// Turn is the turn's number in its session, from 1 (0 outside one);
	// ToolRound counts the tool results sent back within the turn before
	// this request (0: the user's message itself).
	Turn      int `json:"turn,omitempty"`
	ToolRound int `json:"tool_round,omitempty"`
	// History says what the turn's history carried as the earlier answers:
	// HistoryServer (the text the server returned) or HistoryRecorded (the
	// dataset's); "" outside a session.
	History HistorySource `json:"history,omitempty"`
	// HistoryDropped counts the earliest turns left out of this request's
	// history to keep it within the run's context cap (0: none).
	HistoryDropped int `json:"history_dropped,omitempty"`
	// JobNode is, on a request of an agent job replayed from its graph
	// (package jobgraph; SessionID names the job), the request's id in
	// the job; "" otherwise. JobAfter are the ids of the job's requests it
	// waited for and JobGapNs the wait after the last of them ended (tool
	// latency, think time), ns: with the records' send and end times they
	// rebuild the job's graph and its critical path.
	JobNode  string   `json:"job_node,omitempty"`
	JobAfter []string `json:"job_after,omitempty"`
	JobGapNs int64    `json:"job_gap_ns,omitempty"`
	// JobImpliedCached is the prompt tokens the trace's KV block hash ids
	// imply an unbounded prefix cache holds for this request
	// (jobgraph.Job.CacheHits); nil when the job's trace has no hash ids.
	JobImpliedCached *int `json:"job_implied_cached,omitempty"`

	// RetryAfterNs is the wait a rate-limited answer (HTTP 429, or a 503
	// that said when to come back) advertised — Retry-After, retry-after-ms,
	// or the reset of the limit OpenAI's x-ratelimit-* or Anthropic's
	// anthropic-ratelimit-* headers give — in ns; 0 when it gave none.
	RetryAfterNs int64 `json:"retry_after_ns,omitempty"`
	// Attempt numbers a client's retry of a failed request (2 for the first
	// retry; 0 for a request's first attempt) and RetryOf is the id of the
	// request it retries. Retried marks an attempt that failed and was
	// sent again: it counts as an attempt, not as the request's outcome
	// (the last attempt is).
	Attempt int    `json:"attempt,omitempty"`
	RetryOf string `json:"retry_of,omitempty"`
	Retried bool   `json:"retried,omitempty"`
	// ResponseID is the server's id of the answer where a later request
	// may continue from it (Responses' previous_response_id); "" otherwise.
	ResponseID string `json:"response_id,omitempty"`
	// Hop is, on goodput proxy's records, when the answer reached the
	// proxy and when it went on downstream; nil elsewhere (and in records
	// written before it existed).
	Hop *HopTiming `json:"hop,omitempty"`
	// Embeddings is how many inputs an embeddings answer embedded (0 for a
	// generated answer). Such a request has no tokens out: its E2E is its
	// whole latency, from the send to the answer (End).
	Embeddings int `json:"embeddings,omitempty"`

	// ToolLatencyNs is how long the client waited on the tools of the tool
	// calls this request answered with (the longest of calls run
	// concurrently), before it sent their results in the turn's next
	// request; 0 when it made none or the session ended there.
	ToolLatencyNs int64 `json:"tool_latency_ns,omitempty"`

	// Server is the server's own view of the request (see ServerTiming);
	// nil when it reported none.
	Server *ServerTiming `json:"server,omitempty"`
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.ErrorClass == ErrNone }

// Shift moves every time of r by d ns (later for d > 0): Intended, Sent,
// End, each chunk's T and Server.ArrivalNs; durations (ConnectNs, the
// server's queue, prefill and decode times) stay. It changes r's chunks
// and server timing in place, so a record sharing them (a shallow copy)
// moves too: shift a CopyTo copy to keep the original.
func (r *Record) Shift(d int64) {
	r.Intended += d
	r.Sent += d
	r.End += d
	for i := range r.Chunks {
		r.Chunks[i].T += d
	}
	if r.Server != nil {
		r.Server.ArrivalNs += d
	}
}

// CopyTo makes dst a deep copy of r, sharing nothing with it: r's chunks
// are copied into dst's chunk storage and its server timing into dst's,
// each reused when dst has one of its own (not r's, as in a shallow copy
// of r), so a caller copying record after record into one dst allocates
// only to grow it. Whatever else shares dst's storage sees it overwritten.
func (r *Record) CopyTo(dst *Record) {
	if dst == r {
		return
	}
	chunks, server := dst.Chunks, dst.Server
	if cap(chunks) > 0 && len(r.Chunks) > 0 && &chunks[:1][0] == &r.Chunks[0] {
		chunks = nil // r's own storage
	}
	if server == r.Server {
		server = nil
	}
	*dst = *r
	if r.Chunks != nil {
		if chunks == nil {
			chunks = make([]Chunk, 0, len(r.Chunks))
		}
		dst.Chunks = append(chunks[:0], r.Chunks...)
	}
	if r.Server != nil {
		if server == nil {
			server = new(ServerTiming)
		}
		*server = *r.Server
		dst.Server = server
	}
	if r.ToolCalls != nil {
		dst.ToolCalls = slices.Clone(r.ToolCalls) // rare: a fresh copy costs nothing that matters
	}
	if r.JobAfter != nil {
		dst.JobAfter = slices.Clone(r.JobAfter)
	}
	if r.JobImpliedCached != nil {
		v := *r.JobImpliedCached
		dst.JobImpliedCached = &v
	}
}

// firstToken returns the index of the first token-carrying chunk, or -1.
func (r *Record) firstToken() int {
	for i := range r.Chunks {
		if r.Chunks[i].Tokens > 0 {
			return i
		}
	}
	return -1
}

func (r *Record) lastToken() int {
	for i := len(r.Chunks) - 1; i >= 0; i-- {
		if r.Chunks[i].Tokens > 0 {
			return i
		}
	}
	return -1
}

// TTFT is the time from sending to the first chunk carrying a generated token
// (content or reasoning). ok is false when no token arrived.
func (r *Record) TTFT() (d time.Duration, ok bool) {
	i := r.firstToken()
	if i < 0 || r.WholeAnswer {
		return 0, false
	}
	return time.Duration(r.Chunks[i].T - r.Sent), true
}

// TTP (time to publish) is the time from sending to the first chunk carrying
// a visible token. ok is false when nothing visible arrived.
func (r *Record) TTP() (d time.Duration, ok bool) {
	if r.WholeAnswer {
		return 0, false
	}
	for _, c := range r.Chunks {
		if c.Tokens > 0 && c.Visible {
			return time.Duration(c.T - r.Sent), true
		}
	}
	return 0, false
}

// E2E is the time from sending to the last token-carrying chunk (not [DONE],
// not a usage-only chunk); for an embeddings answer, to the answer. ok is
// false when no token arrived.
func (r *Record) E2E() (d time.Duration, ok bool) {
	if r.Embeddings > 0 {
		return time.Duration(r.End - r.Sent), r.OK()
	}
	i := r.lastToken()
	if i < 0 {
		return 0, false
	}
	return time.Duration(r.Chunks[i].T - r.Sent), true
}

// ResponseTime is E2E measured from the intended send time, so the client's
// own backlog counts (no coordinated omission).
func (r *Record) ResponseTime() (d time.Duration, ok bool) {
	if r.Embeddings > 0 {
		return time.Duration(r.End - r.Intended), r.OK()
	}
	i := r.lastToken()
	if i < 0 {
		return 0, false
	}
	return time.Duration(r.Chunks[i].T - r.Intended), true
}

// SendLag is how late the request left relative to its schedule.
func (r *Record) SendLag() time.Duration { return time.Duration(r.Sent - r.Intended) }

// OutputTokens is the number of generated tokens: CompletionTokens when set,
// else the sum over chunks.
func (r *Record) OutputTokens() int {
	if r.CompletionTokens > 0 {
		return r.CompletionTokens
	}
	n := 0
	for _, c := range r.Chunks {
		n += int(c.Tokens)
	}
	return n
}

// TPOT is (last token time − first token time) / (output tokens − 1). ok is
// false for requests with fewer than two output tokens.
func (r *Record) TPOT() (d time.Duration, ok bool) {
	n := r.OutputTokens()
	first, last := r.firstToken(), r.lastToken()
	if n < 2 || first < 0 || r.WholeAnswer {
		return 0, false
	}
	return time.Duration((r.Chunks[last].T - r.Chunks[first].T) / int64(n-1)), true
}

// ITLs appends to dst every gap between consecutive token-carrying chunks
// (vLLM's ITL) and returns it.
func (r *Record) ITLs(dst []time.Duration) []time.Duration {
	if r.WholeAnswer {
		return dst
	}
	prev := int64(-1)
	for _, c := range r.Chunks {
		if c.Tokens <= 0 {
			continue
		}
		if prev >= 0 {
			dst = append(dst, time.Duration(c.T-prev))
		}
		prev = c.T
	}
	return dst
}

// TokenITLs appends to dst the per-token gaps: each chunk gap divided by the
// tokens the later chunk carries, once per token. With one token per chunk
// it equals ITLs.
func (r *Record) TokenITLs(dst []time.Duration) []time.Duration {
	if r.WholeAnswer {
		return dst
	}
	prev := int64(-1)
	for _, c := range r.Chunks {
		if c.Tokens <= 0 {
			continue
		}
		if prev >= 0 {
			g := time.Duration((c.T - prev) / int64(c.Tokens))
			for range c.Tokens {
				dst = append(dst, g)
			}
		}
		prev = c.T
	}
	return dst
}

// FirstTokenAt returns the absolute time (ns from run start) of the first
// token, or -1.
func (r *Record) FirstTokenAt() int64 {
	if i := r.firstToken(); i >= 0 {
		return r.Chunks[i].T
	}
	return -1
}

// LastTokenAt returns the absolute time (ns from run start) of the last
// token, or -1.
func (r *Record) LastTokenAt() int64 {
	if i := r.lastToken(); i >= 0 {
		return r.Chunks[i].T
	}
	return -1
}

// StatusClass is the error class of a request answered with HTTP status
// code (not 200): 429 is rate limiting, other 4xx client errors, 5xx server
// errors; anything else is a broken exchange.
func StatusClass(code int) ErrorClass {
	switch {
	case code == 429:
		return ErrHTTP429
	case code >= 500 && code < 600:
		return ErrHTTP5xx
	case code >= 400 && code < 500:
		return ErrHTTP4xx
	}
	return ErrStream
}

// ToolCall is one tool call a model made, as the OpenAI tool_calls array
// carries it: the call's id (what the tool result answers with
// tool_call_id), the function's name and its arguments (JSON text).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}
