package sim

import (
	"errors"

	"github.com/goodput/goodput/internal/runlog"
)

// Request is one request submitted to the engine.
type Request struct {
	// ID identifies the request; it must be unique among live requests.
	ID string
	// PromptTokens is the input length in tokens (> 0).
	PromptTokens int
	// OutputTokens is how many tokens the request generates before it
	// finishes (> 0): max_tokens, or its natural length.
	OutputTokens int
	// ReasoningTokens is how many of the first output tokens are hidden
	// reasoning (thinking models); 0 for none, in which case the engine's
	// Config.ReasoningTokens default applies.
	ReasoningTokens int
	// BlockHashes optionally identifies consecutive blocks of the request's
	// sequence for the prefix cache: hash i covers tokens [i*B, (i+1)*B) of
	// the prompt followed by the output, where B = HashBlockTokens. They
	// may stop inside the prompt (the rest is private to the request) or
	// run on over the output the request will generate: as in vLLM, whose
	// block hashes run over prompt and output token ids, a block of
	// generated tokens joins the prefix cache once its tokens are computed,
	// so a later prompt that resends this prompt and its answer (the next
	// turn of a conversation) finds it. A hash whose block straddles the
	// prompt's end names the output tokens in it too. Hashes past prompt +
	// output are ignored; nil means the request shares nothing.
	BlockHashes []uint64
	// HashBlockTokens is the tokens per BlockHashes entry (512 for Mooncake
	// traces); 0 means the engine's block size.
	HashBlockTokens int
	// Priority is the request's class: lower values are scheduled first
	// (vLLM's convention; 0 = interactive, 1 = batch, ...). It only matters
	// with Config.Priority set.
	Priority int
	// KVReady says the prompt's KV arrives computed, with the first output
	// token already generated: the decode side of a prefill/decode split,
	// whose prefill instance ran the prompt and sent its KV. The engine
	// allocates the prompt's blocks at admission but spends no prefill
	// compute on them; its first step is the decode that feeds the first
	// token back and emits the second. OutputTokens still counts the whole
	// output (so it must be ≥ 2); the first token is not reported again
	// (no event, not in GenerationTokens, no PromptTokens counted), and the
	// finished Timing has PrefillNs 0 and DecodeNs from the first
	// scheduling. The prefix cache is not consulted for the arriving
	// blocks; a preempted request recomputes its prompt and output here,
	// as vLLM's decode instance does.
	KVReady bool
}

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of Event.
const (
	// EventTokens reports Tokens new tokens generated for ID in this
	// iteration; the first one ends prefill.
	EventTokens EventKind = iota + 1
	// EventFinished reports that ID finished; Timing is set.
	EventFinished
	// EventRejected reports that ID was refused by admission control
	// (waiting queue full at Add, queued longer than MaxQueueTime); Err
	// says why. It comes from the next Step, possibly one that returns
	// end == now. A server answers it with 429 and Retry-After. (Requests
	// that can never be served — longer than MaxModelLen — are refused
	// by Add's error instead, a 400.)
	EventRejected
	// EventPreempted reports that ID was preempted: its KV blocks were
	// freed and its prompt and generated tokens will be recomputed.
	EventPreempted
)

// String returns the kind's lower-case name, as scenario scripts spell it.
func (k EventKind) String() string {
	switch k {
	case EventTokens:
		return "tokens"
	case EventFinished:
		return "finished"
	case EventRejected:
		return "rejected"
	case EventPreempted:
		return "preempted"
	}
	return "unknown"
}

// Event is one thing that happened to a request during a Step.
type Event struct {
	// ID is the request's id.
	ID string
	// Kind says what happened.
	Kind EventKind
	// Tokens is, for EventTokens, the tokens generated this iteration:
	// 1, or with speculative decoding the accepted drafts + 1.
	Tokens int
	// Hidden is, for EventTokens, true when these tokens are reasoning (not
	// visible to the user).
	Hidden bool
	// Cached is the prompt tokens served from the prefix cache; set on the
	// request's first EventTokens.
	Cached int
	// Timing is, for EventFinished, the engine's view of the request:
	// queue, prefill and decode ns, preemptions, cached tokens.
	Timing *runlog.ServerTiming
	// Err is, for EventRejected, why the request was refused.
	Err string
	// RetryAfterNs is, for EventRejected, the wait the refuser advertises
	// before a retry can be served (a gateway's rate limit knows it); 0
	// means it says nothing, and the run's default applies.
	RetryAfterNs int64
}

// Snapshot is the engine's gauges and cumulative counters, for /metrics
// and reports.
type Snapshot struct {
	// Running is the number of requests holding KV blocks and being
	// scheduled.
	Running int
	// Waiting is the number of requests queued (new or preempted).
	Waiting int
	// KVUsage is the fraction of KV blocks in use by running requests
	// (0..1; cached free blocks do not count).
	KVUsage float64
	// PrefixQueryTokens is the cumulative prompt tokens looked up in the
	// prefix cache.
	PrefixQueryTokens int64
	// PrefixHitTokens is the cumulative prompt tokens found there.
	PrefixHitTokens int64
	// Preemptions is the cumulative number of preemptions.
	Preemptions int64
	// PromptTokens is the cumulative prompt tokens of requests that got
	// their first token (as vLLM counts prompt_tokens_total).
	PromptTokens int64
	// GenerationTokens is the cumulative generated tokens.
	GenerationTokens int64
	// Finished is the cumulative number of finished requests.
	Finished int64
	// Rejected is the cumulative number of rejected requests.
	Rejected int64
	// SpecDraftTokens is the cumulative draft tokens verified by
	// speculative decoding (0 with it off).
	SpecDraftTokens int64
	// SpecAcceptedTokens is the cumulative draft tokens accepted; over
	// SpecDraftTokens it is the measured acceptance rate.
	SpecAcceptedTokens int64
}

// Add adds o's gauges and counters to s, KVUsage too: a fleet's sum of its
// engines', whose caller turns KVUsage into the mean it reports.
func (s *Snapshot) Add(o Snapshot) {
	s.Running += o.Running
	s.Waiting += o.Waiting
	s.KVUsage += o.KVUsage
	s.AddCounters(o)
}

// AddCounters adds o's cumulative counters to s, not its gauges: what a
// replica removed from a fleet still counts for.
func (s *Snapshot) AddCounters(o Snapshot) {
	s.PrefixQueryTokens += o.PrefixQueryTokens
	s.PrefixHitTokens += o.PrefixHitTokens
	s.Preemptions += o.Preemptions
	s.PromptTokens += o.PromptTokens
	s.GenerationTokens += o.GenerationTokens
	s.Finished += o.Finished
	s.Rejected += o.Rejected
	s.SpecDraftTokens += o.SpecDraftTokens
	s.SpecAcceptedTokens += o.SpecAcceptedTokens
}

// ErrInvalidRequest is wrapped by every error Add returns: the request
// itself is wrong (a server answers 400).
var ErrInvalidRequest = errors.New("invalid request")

// Engine is the simulated serving engine: a synchronous, deterministic state
// machine. It is not safe for concurrent use; one goroutine owns it.
type Engine struct {
	core
}
