package simrun

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/session"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// DefaultMaxToolRounds caps a turn's tool rounds when SessionLoad.MaxToolRounds
// is 0: enough for the agent loops traces record, and a bound on a share
// that would otherwise call tools forever.
const DefaultMaxToolRounds = 8

// DefaultToolResultTokens is the length in tokens of a tool result the
// session does not give, for calls decided by the engine's
// sim.Config.ToolCallShare.
const DefaultToolResultTokens = 64

// SessionLoad is a run of sessions (conversations, agent loops) in virtual
// time, the counterpart of the wall-clock driver's run.SessionLoad: sessions
// arrive open-loop, and inside a session the turns are closed-loop — a turn
// is sent when the previous answer has ended and the user's think time has
// passed, its prompt carrying the earlier turns as the server answered them
// (runlog.HistoryServer).
type SessionLoad struct {
	// Sessions is the set to run; NumSessions of them run (0: the set's
	// Len), session i being Sessions.Session(i % Len).
	Sessions    workload.SessionSet
	NumSessions int
	// Rate is the sessions' arrival rate in sessions/s (0: every session
	// due at once, MaxConcurrent pacing them); Burstiness is the gamma
	// shape of the gaps (0: 1, Poisson). Sessions with their own arrival
	// (Session.HasArrival, traces) keep it.
	Rate, Burstiness float64
	// Sample and SampleEvery sample the engine's state as Load's do.
	Sample      func(at int64, s sim.Snapshot)
	SampleEvery time.Duration
	// MaxConcurrent caps the sessions in progress (0: none). A session the
	// cap holds back starts when one ends; its records' Intended keep the
	// arrival (it counts in Result.DelayedArrivals), except without a
	// schedule (Rate 0, no arrivals of its own), where it is due when the
	// slot frees.
	MaxConcurrent int
	// MaxContext caps a request's prompt plus the turn's recorded reply
	// length (Turn.OutputTokens), in tokens (0: none): the earliest turns
	// (message, tool rounds and answer) are left out of the history until
	// it fits, for good — the system prompt and the current turn always
	// stay — and Record.HistoryDropped counts the turns left out.
	MaxContext int
	// MaxToolRounds caps a turn's tool rounds (0: DefaultMaxToolRounds;
	// < 0: none, every turn is one request); the final request of the turn
	// is sent after the last round allowed, as a client that gave up on
	// tools would.
	MaxToolRounds int
	// ToolLatency gives how long a call takes that the session does not
	// time (ToolCall.Latency 0, or a call decided by the engine's
	// sim.Config.ToolCallShare), for
	// session index (in the run), turn index (into Turns) and call index
	// (into the turn's ToolCalls; 0 for a decided call); nil means instant.
	ToolLatency func(session, turn, call int) time.Duration
	// ToolResultTokens likewise gives a result's length in tokens where
	// ToolCall.ResultTokens is 0; nil leaves a recorded call's result
	// empty, as its ToolCall says, and gives a decided call
	// DefaultToolResultTokens.
	ToolResultTokens func(session, turn, call int) int
	// Seed keys the arrival schedule, natural lengths and decided tool
	// calls.
	Seed int64
	// NaturalStop lets a final answer stop before Turn.OutputTokens when
	// its natural length (sim.NaturalLength) is shorter, treating the
	// recorded length as max_tokens; false generates exactly the recorded
	// length. A turn of unknown length (0) always gets its natural one.
	NaturalStop bool
	// Index is copied into every Record (the sweep level index).
	Index int
	// Retry, RetryAfter, Timeout and KeepAbandoned are Load's: a turn's
	// request that timed out or was rejected is sent again as the policy
	// says (the same request, its history unchanged, "-a<k>" after its id),
	// and the session fails only when its last attempt does.
	Retry         *loadgen.RetryPolicy
	RetryAfter    time.Duration
	Timeout       time.Duration
	KeepAbandoned bool
}

// SessionResult is a Result with the sessions' own counts.
type SessionResult struct {
	// Result counts the requests: a session's turns and tool rounds.
	// DelayedArrivals counts sessions the MaxConcurrent cap started late.
	Result
	// Sessions is the number of sessions started; SessionsCompleted those
	// whose every request succeeded; SessionsFailed those a failed
	// request ended (a cancelled one included). The rest were cut by
	// cancellation between two requests.
	Sessions, SessionsCompleted, SessionsFailed int
}

// RunSessions runs load's sessions against eng in virtual time, as Run does
// a dataset, and calls emit with each request's Record the moment (in
// virtual time) it ends. A turn's requests are "s<i>-t<k>" (i the session's
// index in the run, k its turn from 1) and, after tool rounds,
// "s<i>-t<k>-r<round>"; records carry SessionID (the session's ID, with
// "#2", "#3"… on later cycles through the set), Turn, ToolRound and
// HistoryDropped. A failed request ends its session (with
// SessionLoad.Retry, once its last attempt failed): its later requests are
// not sent. emit owns the record; an emit error stops the run and is
// returned. When ctx is cancelled, requests in flight are aborted and
// emitted as cancelled, and ctx's error is returned with the result so far.
//
// A prompt is made of segments (system prompt, each message, answer, tool
// call and tool result), and RunSessions describes its full blocks to the
// engine by block hashes whose tokens are identified by (segment, offset),
// so the engine's prefix cache finds a conversation's earlier turns, and a
// system prompt shared by sessions, exactly where a real server's would.
// The hashes run on over the output each request will generate (the
// answer, a tool call), keyed as the next request resends it, because the
// engine caches generated blocks as vLLM does: turn k+1 finds turn k's
// answer too, not only its prompt. Reasoning is hashed as its own segment,
// which no later prompt resends.
//
// The tool-call settings come from the engine (sim.Config.ToolCallShare,
// ToolCallTokens): a session that declares Tools and says of a turn's
// calls nothing has its first answer be one tool call in that share of
// turns, by a deterministic draw for (Seed, session, turn); a call is
// ToolCallTokens hidden tokens.
//
// The same inputs give identical records.
func RunSessions(ctx context.Context, eng *sim.Engine, load SessionLoad, emit func(*runlog.Record) error) (SessionResult, error) {
	return runSessions(ctx, &single{e: eng}, load, emit)
}

// runSessions is RunSessions over one engine or a cluster.
func runSessions(ctx context.Context, eng engine, load SessionLoad, emit func(*runlog.Record) error) (SessionResult, error) {
	switch {
	case load.Sessions == nil || load.Sessions.Len() <= 0:
		return SessionResult{}, errors.New("simrun: empty session set")
	case load.NumSessions < 0:
		return SessionResult{}, checkErr("NumSessions", load.NumSessions, "want ≥ 0")
	case load.MaxConcurrent < 0:
		return SessionResult{}, checkErr("MaxConcurrent", load.MaxConcurrent, "want ≥ 0")
	case load.MaxContext < 0:
		return SessionResult{}, checkErr("MaxContext", load.MaxContext, "want ≥ 0")
	case load.Timeout < 0:
		return SessionResult{}, checkErr("Timeout", load.Timeout, "want ≥ 0 (0: none)")
	case math.IsNaN(load.Rate) || math.IsInf(load.Rate, 0) || load.Rate < 0:
		return SessionResult{}, checkErr("Rate", load.Rate, "want ≥ 0 (0: all at once)")
	}
	r := &runner{eng: eng, load: Load{Seed: load.Seed, Index: load.Index, Sample: load.Sample, SampleEvery: load.SampleEvery,
		Retry: load.Retry, RetryAfter: load.RetryAfter, Timeout: load.Timeout, KeepAbandoned: load.KeepAbandoned},
		emit: emit, inflight: map[string]*flight{}}
	defer r.sampleEnd()
	cfg := eng.config()
	f := &sessionFeed{r: r, load: &load, cfg: cfg, n: load.NumSessions, maxRounds: load.MaxToolRounds}
	r.sessions = f
	if f.n == 0 {
		f.n = load.Sessions.Len()
	}
	if f.maxRounds == 0 {
		f.maxRounds = DefaultMaxToolRounds
	}
	// Without prefix caching no hashes are built.
	if cfg.EnablePrefixCaching {
		f.block = cfg.BlockSize
	}
	if load.Rate > 0 {
		f.arrivals = workload.NewArrivals(load.Rate, load.Burstiness, load.Seed)
	}
	err := r.phase(ctx, f)
	res := f.res
	res.Result = r.result()
	return res, err
}

// seg is a run of prompt tokens with one identity: token i of it is
// (key, i), whatever precedes it.
type seg struct {
	key    uint64
	tokens int
}

// convo is one session in progress: its prompt as segments, where it is in
// its turns, and the block hashes of its prompt so far.
type convo struct {
	idx  int // the session's index in the run
	id   string
	sess workload.Session

	segs []seg
	ends []int // ends[i]: tokens of segs[:i+1]
	// total is the prompt's length in tokens: the sum of segs.
	total int
	// system is the system prompt's length (its segment, if any, is
	// segs[0]); turns[i] is the index in segs where kept turn i begins,
	// the last being the current turn.
	system  int
	turns   []int
	dropped int
	// hashes are the chained hashes of the prompt's leading full blocks,
	// kept from request to request: a later prompt extends the earlier
	// one, so only its new blocks are hashed.
	hashes []uint64

	// w is where the session is in its turns and tool rounds.
	w        *session.Walk
	rounds   [][]plannedCall
	intended int64 // of the request due next or in flight
	latency  int64 // tool wait after the tool-call answer in flight
	// attempt is the retries sent of the request due next or in flight
	// (0: its first attempt), orig the first attempt's id and retryDue
	// when the next retry is due (set by runner.retryLater).
	attempt  int
	orig     string
	retryDue int64
}

// plannedCall is one tool call of a turn, its latency and result length
// decided.
type plannedCall struct {
	name    string
	latency int64 // ns
	result  int   // tokens
}

// sessionFeed is RunSessions' feed: session starts in index order, under
// the MaxConcurrent cap, and the sessions' next requests, never held back.
type sessionFeed struct {
	r         *runner
	load      *SessionLoad
	cfg       sim.Config // the engine's, resolved: tool calls, reasoning
	n         int        // sessions to run
	maxRounds int
	block     int // engine block size for hashes; 0: prefix caching off
	arrivals  *workload.Arrivals

	started  int // sessions started
	peeked   bool
	nextSess workload.Session // session started next, when peeked
	nextDue  int64            // its arrival
	active   int              // sessions in progress
	pending  dueSends[*convo]
	res      SessionResult
}

var _ feed = (*sessionFeed)(nil)

// peekStart returns the arrival of the next session when the cap lets it
// start.
func (f *sessionFeed) peekStart() (int64, bool) {
	if f.started >= f.n || f.load.MaxConcurrent > 0 && f.active >= f.load.MaxConcurrent {
		return 0, false
	}
	if !f.peeked {
		f.nextSess = f.load.Sessions.Session(f.started % f.load.Sessions.Len())
		switch {
		case f.nextSess.HasArrival:
			f.nextDue = int64(f.nextSess.Arrival)
		case f.arrivals != nil:
			f.nextDue = int64(f.arrivals.Next())
		default:
			f.nextDue = 0
		}
		f.peeked = true
	}
	return f.nextDue, true
}

func (f *sessionFeed) next() (int64, bool) {
	t, _, ok := f.pending.pick(f.peekStart)
	return t, ok
}

func (f *sessionFeed) admit(by int64, inclusive bool, sendAt int64) error {
	return f.pending.admit(by, inclusive, sendAt, f.peekStart, f.start, f.send)
}

// schedule queues c's next request at t.
func (f *sessionFeed) schedule(c *convo, t int64) { f.pending.push(t, c) }

// start begins the peeked session at `at` and queues its first turn.
func (f *sessionFeed) start(at int64) {
	sess, due := f.nextSess, f.nextDue
	f.peeked, f.nextSess = false, workload.Session{}
	i := f.started
	f.started++
	intended := due
	if at > due && f.load.MaxConcurrent > 0 {
		// The cap held it back (or, in a trace out of order, the session
		// before it; the wall-clock driver starts them in order too).
		if f.arrivals == nil && !sess.HasArrival {
			intended = at // unpaced: due when a slot frees, as an unpaced request is
		} else {
			f.r.res.DelayedArrivals++
		}
	}
	f.res.Sessions++
	if len(sess.Turns) == 0 {
		f.res.SessionsCompleted++ // nothing to send; a valid session has turns
		return
	}
	id := sess.ID
	if k := i / f.load.Sessions.Len(); k > 0 {
		id += "#" + strconv.Itoa(k+1)
	}
	c := &convo{idx: i, id: id, sess: sess}
	if sess.SystemTokens > 0 || sess.System != "" {
		n := sess.SystemTokens
		if n <= 0 {
			n = tokenize.Approx{}.Count(sess.System)
		}
		// Synthesized system prompts are prefix-stable (Session.SystemText),
		// so they share one key; a given text is its own.
		key := mix(mix(uint64(f.load.Seed), kindSystem), 0x73797374656d)
		if sess.System != "" {
			key = mix(kindSystem, textHash(sess.System))
		}
		c.push(seg{key: key, tokens: n})
		c.system = c.total
	}
	f.active++
	c.w = session.New(sess, i, intended, f.maxRounds, session.FromTurnSend)
	f.beginTurn(c)
	c.intended = c.w.Due()
	f.schedule(c, max(c.intended, at))
}

// beginTurn adds the walk's turn's message to the prompt and plans its tool
// rounds.
func (f *sessionFeed) beginTurn(c *convo) {
	turn := c.w.Turn()
	t := &c.sess.Turns[turn]
	c.turns = append(c.turns, len(c.segs))
	n := t.InputTokens
	if n <= 0 {
		n = tokenize.Approx{}.Count(t.Content)
	}
	key := f.key(kindUser, c.idx, turn, 0, 0)
	if t.Content != "" {
		// The same text is the same tokens to the server, as when a cycled
		// session resends its recorded message.
		key = mix(kindUser, textHash(t.Content))
	}
	c.push(seg{key: key, tokens: n})
	c.rounds = c.rounds[:0]
	if f.maxRounds < 0 {
		return
	}
	call := 0
	for _, round := range t.ToolRounds() {
		if len(c.rounds) == f.maxRounds {
			break
		}
		p := make([]plannedCall, len(round))
		for j, tc := range round {
			p[j] = plannedCall{name: tc.Name, latency: int64(tc.Latency), result: tc.ResultTokens}
			if p[j].latency == 0 && f.load.ToolLatency != nil {
				p[j].latency = int64(max(f.load.ToolLatency(c.idx, turn, call), 0))
			}
			if p[j].result == 0 && f.load.ToolResultTokens != nil {
				p[j].result = max(f.load.ToolResultTokens(c.idx, turn, call), 0)
			}
			call++
		}
		c.rounds = append(c.rounds, p)
	}
	if len(t.ToolCalls) > 0 || len(c.sess.Tools) == 0 || f.cfg.ToolCallShare <= 0 {
		return
	}
	h := f.key(kindShare, c.idx, turn, 0, 0)
	if float64(h>>11)/(1<<53) >= f.cfg.ToolCallShare {
		return
	}
	p := plannedCall{name: c.sess.Tools[sim.Mix64(h)%uint64(len(c.sess.Tools))], result: DefaultToolResultTokens}
	if f.load.ToolLatency != nil {
		p.latency = int64(max(f.load.ToolLatency(c.idx, turn, 0), 0))
	}
	if f.load.ToolResultTokens != nil {
		p.result = max(f.load.ToolResultTokens(c.idx, turn, 0), 0)
	}
	c.rounds = append(c.rounds, []plannedCall{p})
}

// send adds c's next request to the engine at `at`.
func (f *sessionFeed) send(c *convo, at int64) error {
	turn, round := c.w.Turn(), c.w.Round()
	t := &c.sess.Turns[turn]
	if c.attempt == 0 {
		c.w.Sent(at) // a retry's send is not the one a later turn counts from
	}
	if m := f.load.MaxContext; m > 0 {
		for c.total+t.OutputTokens > m && len(c.turns) > 1 {
			c.dropTurn(f.block)
		}
	}
	id := c.w.ID("")
	rec := &runlog.Record{
		ID:                    id,
		Level:                 f.load.Index,
		Intended:              c.intended,
		Sent:                  at,
		RequestedPromptTokens: c.total,
		MaxTokens:             t.OutputTokens,
		SessionID:             c.id,
		Turn:                  turn + 1,
		ToolRound:             round,
		History:               runlog.HistoryServer,
		HistoryDropped:        c.dropped,
	}
	if c.attempt > 0 {
		rec.ID = c.orig + "-a" + strconv.Itoa(c.attempt+1)
		rec.Attempt, rec.RetryOf = c.attempt+1, c.orig
	}
	var out, hidden int
	if round < len(c.rounds) {
		// A tool-call answer: the calls' names and arguments are hidden
		// tokens, as a streaming client sees tool-call deltas.
		calls := c.rounds[round]
		out = len(calls) * f.cfg.ToolCallTokens
		hidden = out
		rec.FinishReason = "tool_calls"
		rec.ToolCalls = make([]runlog.ToolCall, len(calls))
		c.latency = 0
		for j, p := range calls {
			rec.ToolCalls[j] = runlog.ToolCall{ID: "call-" + id + "-" + strconv.Itoa(j), Name: p.name}
			c.latency = max(c.latency, p.latency) // the calls run concurrently
		}
	} else {
		out, rec.FinishReason = t.OutputTokens, "length"
		natural := sim.NaturalLength(uint64(f.load.Seed)^f.key(kindAnswer, c.idx, turn, 0, 1), sim.DefaultNaturalMedian)
		if out <= 0 || (f.load.NaturalStop && natural < out) {
			out, rec.FinishReason = natural, "stop"
		}
	}
	if c.attempt == 0 {
		f.r.res.Sent++
	}
	q := sim.Request{ID: rec.ID, PromptTokens: c.total, OutputTokens: out, ReasoningTokens: hidden}
	if f.block > 0 {
		// The output as the engine generates it: a tool call is all
		// hidden and resent whole; an answer is the engine's reasoning
		// default (resent never), then the visible text (resent as the
		// next turn's history, under the same key).
		think, reply := 0, out
		if hidden == 0 {
			think = f.cfg.ReasoningFor(out)
			reply = out - think
		}
		q.BlockHashes = c.blockHashes(f.block,
			seg{key: f.key(kindThink, c.idx, turn, round, 0), tokens: think},
			seg{key: f.replyKey(c), tokens: reply})
		q.HashBlockTokens = f.block
	}
	return f.r.add(&flight{rec: rec, out: out, conv: c, attempt: c.attempt + 1}, q)
}

// ended moves c on after its request rec ended: the next request of the
// turn after the tool wait, the next turn after the think time, or the
// session's end.
func (f *sessionFeed) ended(c *convo, rec *runlog.Record) {
	if rec.Retried {
		// The same request again after the backoff (runner.retryLater).
		c.intended = c.retryDue
		f.schedule(c, c.retryDue)
		return
	}
	c.attempt = 0
	if !rec.OK() {
		c.w.Ended(false, rec.End, false, 0)
		f.active--
		f.res.SessionsFailed++
		return
	}
	if turn, round := c.w.Turn(), c.w.Round(); round < len(c.rounds) {
		rec.ToolLatencyNs = c.latency
		c.push(seg{key: f.replyKey(c), tokens: rec.CompletionTokens})
		for j, p := range c.rounds[round] {
			c.push(seg{key: f.key(kindResult, c.idx, turn, round, j), tokens: p.result})
		}
		// The rounds planned are within the cap: the walk goes on to the
		// next round after the tools' wait.
		c.w.Ended(true, rec.End, true, time.Duration(c.latency))
		c.intended = c.w.Due()
		f.schedule(c, c.intended)
		return
	}
	// The history carries what the user saw: reasoning is not resent.
	c.push(seg{key: f.replyKey(c), tokens: rec.CompletionTokens - rec.ReasoningTokens})
	if c.w.Ended(true, rec.End, false, 0); c.w.Done() {
		f.active--
		f.res.SessionsCompleted++
		return
	}
	f.beginTurn(c)
	c.intended = c.w.Due()
	f.schedule(c, c.intended)
}

// push appends a segment to c's prompt; empty ones add nothing.
func (c *convo) push(s seg) {
	if s.tokens <= 0 {
		return
	}
	c.segs = append(c.segs, s)
	c.total += s.tokens
	c.ends = append(c.ends, c.total)
}

// dropTurn leaves the earliest kept turn out of c's prompt. The blocks
// after the system prompt's full ones (of block tokens) change, so their
// hashes go.
func (c *convo) dropTurn(block int) {
	lo, hi := c.turns[0], c.turns[1]
	c.segs = slices.Delete(c.segs, lo, hi)
	c.ends = c.ends[:0]
	c.total = 0
	for _, s := range c.segs {
		c.total += s.tokens
		c.ends = append(c.ends, c.total)
	}
	c.turns = c.turns[1:]
	for i := range c.turns {
		c.turns[i] -= hi - lo
	}
	if block > 0 {
		c.hashes = c.hashes[:min(len(c.hashes), c.system/block)]
	}
	c.dropped++
}

// blockHashes returns the chained hashes of the full blocks of b tokens of
// c's prompt followed by out, the output the request will generate. A
// block's hash covers its pieces (segment key, offset, length) and its
// parent's hash, so equal hashes mean equal prefixes, as vLLM's chained
// block hashes do. The partial last block has none: only full blocks are
// cached.
//
// The prompt's hashes are kept from request to request, so only its new
// blocks are hashed; the output's, from the block where the prompt ends,
// are hashed each time, as the next prompt may resend only part of the
// output (not its reasoning). The engine keeps the slice while the request
// lives; c changes it (the next request's hashes overwrite the output's; a
// dropped turn rewrites it) only for its next request, after this one
// ended and the engine let go of it.
func (c *convo) blockHashes(b int, out ...seg) []uint64 {
	c.extendHashes(b)
	kept, segs, total := len(c.hashes), len(c.segs), c.total
	for _, s := range out {
		c.push(s)
	}
	c.extendHashes(b)
	hs := c.hashes
	c.hashes, c.segs, c.ends, c.total = c.hashes[:kept], c.segs[:segs], c.ends[:segs], total
	return hs
}

// extendHashes appends to c.hashes those of c's full blocks of b tokens
// that it lacks.
func (c *convo) extendHashes(b int) {
	full := c.total / b
	j := len(c.hashes)
	if j >= full {
		return
	}
	var parent uint64 = 0x6a09e667f3bcc908
	if j > 0 {
		parent = c.hashes[j-1]
	}
	p := j * b
	si, _ := slices.BinarySearch(c.ends, p+1) // first segment ending after p
	for ; j < full; j++ {
		hi := p + b
		h := uint64(0x3c6ef372fe94f82b)
		for p < hi {
			for c.ends[si] <= p {
				si++
			}
			start := c.ends[si] - c.segs[si].tokens
			n := min(hi, c.ends[si]) - p
			h = mix(mix(mix(h, c.segs[si].key), uint64(p-start)), uint64(n))
			p += n
		}
		parent = mix(parent, h)
		c.hashes = append(c.hashes, parent)
	}
}

// Segment kinds, in keys, so that no two kinds of segment share tokens.
const (
	kindSystem uint64 = iota + 1
	kindUser
	kindAnswer
	kindCall
	kindResult
	kindShare // not a segment: the draw of a decided tool call
	kindThink // an answer's reasoning, which no later prompt resends
)

// replyKey is the key of the output of c's request in flight, the walk's
// round of its turn: a tool call or the turn's answer. The request's hashes and
// the next prompt, which resends it, both take it from here, so they agree.
func (f *sessionFeed) replyKey(c *convo) uint64 {
	turn, round := c.w.Turn(), c.w.Round()
	if round < len(c.rounds) {
		return f.key(kindCall, c.idx, turn, round, 0)
	}
	return f.key(kindAnswer, c.idx, turn, round, 0)
}

// key identifies a segment of session idx's run (or a draw for it): the
// same kind, turn, round and j give the same key within a run's seed.
func (f *sessionFeed) key(kind uint64, idx, turn, round, j int) uint64 {
	h := mix(uint64(f.load.Seed), kind)
	h = mix(h, uint64(idx))
	h = mix(h, uint64(turn))
	h = mix(h, uint64(round))
	return mix(h, uint64(j))
}

// mix combines two 64-bit values (splitmix64 over a ^ b·φ).
func mix(a, b uint64) uint64 { return sim.Mix64(a ^ (b * 0x9e3779b97f4a7c15)) }

// textHash is FNV-1a over s: a text's identity that does not depend on the
// process, so runs repeat.
func textHash(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}
