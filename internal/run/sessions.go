package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/session"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// SessionLoad is a run of sessions (conversations) instead of independent
// requests: sessions arrive open-loop, and inside a session the turns are
// closed-loop — a turn is sent when the previous reply has ended and the
// user's think time has passed, its history carrying the earlier turns.
type SessionLoad struct {
	// Set is the sessions; NumSessions of them run (0: the set's Len),
	// cycling past its end.
	Set         workload.SessionSet
	NumSessions int
	// Rate is the sessions' arrival rate, sessions/s (0: every session due
	// at once, MaxConcurrent paces them); Burstiness the gamma shape of the
	// gaps (0: 1). Sets with arrival times (traces) keep their own.
	Rate, Burstiness float64
	// MaxConcurrent caps the sessions in progress (0: none).
	MaxConcurrent int
	// History says what later turns resend as the earlier answers: the
	// text the server returned (runlog.HistoryServer, the default, so a
	// prefix cache sees what it would in production) or the recorded
	// replies (runlog.HistoryRecorded, where the set has them).
	History runlog.HistorySource
	// MaxContext caps a turn's request, history plus the reply asked for,
	// in tokens (0: none): the earliest turns are left out until it fits
	// (the system prompt and the turn's own message always stay), and each
	// record counts the turns left out (HistoryDropped).
	MaxContext int
	// MaxToolRounds caps the tool rounds of one turn (0:
	// DefaultMaxToolRounds): past it the turn ends with the calls answered
	// but no further request.
	MaxToolRounds int
	// ToolLatency (ms) and ToolResultLen (tokens) are drawn for tool calls
	// the sessions do not plan (a real model's own calls); nil: instant
	// tools and DefaultToolResultTokens.
	ToolLatency, ToolResultLen workload.Dist
	// Jobs, when set instead of Set, are agent jobs replayed from their
	// graphs (see jobs.go): Rate, Burstiness, MaxConcurrent and
	// NumSessions apply to them, the rest does not. JobsName names them.
	Jobs     []jobgraph.Job
	JobsName string
}

// label describes the load for a level's Label: "sessions NAME: ...".
func (s *SessionLoad) label() string {
	what, unit := "sessions", "sessions"
	if s.Jobs != nil {
		what, unit = "agent jobs", "jobs"
	}
	rate := "all due at once"
	if s.Jobs != nil && s.Rate == 0 {
		rate = "at their recorded starts"
	}
	if s.Rate > 0 {
		b := s.Burstiness
		if b <= 0 {
			b = 1
		}
		rate = fmt.Sprintf("%s %s/s, burstiness %s", strconv.FormatFloat(s.Rate, 'f', -1, 64), unit, strconv.FormatFloat(b, 'f', -1, 64))
	}
	conc := "no cap on " + unit + " in progress"
	if s.MaxConcurrent > 0 {
		conc = fmt.Sprintf("at most %d in progress", s.MaxConcurrent)
	}
	return fmt.Sprintf("%s %s: %s, %s", what, s.name(), rate, conc)
}

// sessionsRun is what the sessions of one run share: the text of turns
// that give only a length (the same for a seed, session and turn, whatever
// runs before), token counting, the progress watch and a note given once.
type sessionsRun struct {
	seed  int64
	w     *wall // the target the sessions' requests go to
	synth *tokenize.Synthesizer
	tok   tokenize.Tokenizer
	// watch is the caller's view of the run's requests (a progress line).
	watch Watch
}

func (sr *sessionsRun) text(session, turn, n int) string {
	rng := rand.New(rand.NewPCG(uint64(sr.seed), uint64(session)<<20|uint64(turn)))
	return sr.synth.Text(n, rng)
}

// newSessionsRun loads the tokenizer and the synthesizer whose text the
// sessions' (or jobs') requests carry where the workload gives only a
// length.
func (w *wall) newSessionsRun(c *Config) (*sessionsRun, error) {
	tok, err := tokenize.Load(c.Workload.Options.Tokenizer)
	if err != nil {
		return nil, &ConfigError{Field: "Tokenizer", Err: err}
	}
	synth, err := tokenize.NewSynthesizer(tok)
	if err != nil {
		return nil, &ConfigError{Field: "Tokenizer", Err: err}
	}
	return &sessionsRun{seed: c.Seed, synth: synth, tok: tok, w: w}, nil
}

// schedule is the load's arrivals (nil without a rate: all due at once,
// or at their recorded starts) and its cap's slots, share(cap) of them
// (nil without a cap).
func (s *SessionLoad) schedule(seed int64, share func(int) int) (*workload.Arrivals, chan struct{}) {
	var arrivals *workload.Arrivals
	if s.Rate > 0 {
		b := s.Burstiness
		if b <= 0 {
			b = 1
		}
		arrivals = workload.NewArrivals(s.Rate, b, seed)
	}
	var slots chan struct{}
	if s.MaxConcurrent > 0 {
		slots = make(chan struct{}, share(s.MaxConcurrent))
	}
	return arrivals, slots
}

// runSessions runs the sessions of s as level 0, on the run's level runner.
func (r *runner) runSessions(ctx context.Context, s *SessionLoad) (levelData, error) {
	return r.lr.sessions(ctx, r, s)
}

// sessions runs the sessions of s in virtual time as level 0.
func (v *virtual) sessions(ctx context.Context, r *runner, s *SessionLoad) (levelData, error) {
	c := r.cfg
	col := newCollector(c.Stats, false, nil, nil)
	r.fan.setLevel(col)
	defer r.fan.setLevel()
	var res simrun.SessionResult
	var err error
	if s.Jobs != nil {
		res, err = v.runJobs(ctx, s, r.fan)
	} else {
		res, err = v.runSessions(ctx, s, r.fan)
	}
	switch {
	case err != nil && r.interrupted(ctx):
		r.cancelled = true
	case err != nil && r.fan.error() != nil:
		// A sink failed: finish reports it; the records so far count.
	case err != nil:
		return levelData{}, fmt.Errorf("simulation: %w", err)
	}
	r.sent += res.Sent
	lv := c.Load
	lv.Label = s.label()
	lv.DelayedArrivals = res.DelayedArrivals
	lv.Fleet = v.fleets[0]
	return col.data(0, lv), nil
}

// sessions runs the sessions of s over the wall target as level 0.
func (w *wall) sessions(ctx context.Context, r *runner, s *SessionLoad) (levelData, error) {
	if s.Jobs != nil {
		return w.jobs(ctx, r, s)
	}
	c := r.cfg
	n := s.NumSessions
	if n <= 0 {
		n = s.Set.Len()
	}
	sr, err := w.newSessionsRun(c)
	if err != nil {
		return levelData{}, err
	}
	col := newCollector(c.Stats, false, nil, nil)
	r.fan.setLevel(col)
	defer r.fan.setLevel()
	arrivals, slots := s.schedule(c.Seed, c.Shard.Share)
	if c.Hooks.Level != nil {
		watch := c.Hooks.Level(ctx, 0, 0) // the turns to come are not known ahead
		sr.watch = watch
		defer watch.Stop()
	}
	warmConns := s.MaxConcurrent
	if warmConns <= 0 {
		warmConns = min(n, defaultWarm)
	}
	w.warm(ctx, c.Shard.Share(warmConns))
	t0 := w.now()
	if at, on := w.sync.take(); on {
		// The shards' sessions arrive on one schedule, from the start.
		t0 = at
		loadgen.SleepUntil(ctx, w.now, t0)
	}
	cpu := startCPU(w.embedded)
	sent, delayed := w.dispatch(ctx, n, t0, slots, func(i int) (time.Duration, bool, bool) {
		sess := s.Set.Session(i % s.Set.Len())
		var due time.Duration
		switch {
		case sess.HasArrival:
			due = sess.Arrival
		case arrivals != nil:
			due = arrivals.Next()
		}
		// Another shard's session: its arrival is drawn all the same.
		skip := c.Shard != nil && i%c.Shard.Count != c.Shard.Index
		return due, arrivals == nil && !sess.HasArrival, skip
	}, func(i int, intended int64) int {
		return r.session(ctx, i, s.Set.Session(i%s.Set.Len()), intended, s, sr)
	})
	return r.sessionsLevel(ctx, col, s, cpu, sent, delayed), nil
}

// dispatch starts n sessions (or jobs) on the wall clock from t0: unit i
// is due at t0 + due(i) (skip: not this process's, another shard's), then
// takes a slot of the cap when there is one — an unpaced unit is then due
// when it got the slot, a paced one held past its arrival counts as
// delayed (its lag shows in its requests) — and runs run(i, intended) in
// its own goroutine. It returns the requests they sent, once all are
// done, and the delayed count.
func (w *wall) dispatch(ctx context.Context, n int, t0 int64, slots chan struct{},
	due func(i int) (d time.Duration, unpaced, skip bool), run func(i int, intended int64) int) (sent, delayed int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < n && ctx.Err() == nil; i++ {
		d, unpaced, skip := due(i)
		if skip {
			continue
		}
		if !loadgen.SleepUntil(ctx, w.now, t0+int64(d)) {
			break
		}
		intended := t0 + int64(d)
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			switch {
			case unpaced:
				intended = w.now()
			case w.now()-intended > int64(time.Millisecond):
				delayed++
			}
		}
		wg.Add(1)
		go func(i int, intended int64) {
			defer wg.Done()
			if slots != nil {
				defer func() { <-slots }()
			}
			k := run(i, intended)
			mu.Lock()
			sent += k
			mu.Unlock()
		}(i, intended)
	}
	wg.Wait()
	return sent, delayed
}

// sessionsLevel is level 0 of a wall-clock session (or job) run that sent
// sent requests with delayed arrivals held by the cap: the run's load
// labelled by s, the client's CPU, a shard's share; a cancelled context
// (not a sink's failure) marks the run cancelled.
func (r *runner) sessionsLevel(ctx context.Context, col *collector, s *SessionLoad, cpu cpuMeter, sent, delayed int) levelData {
	c := r.cfg
	r.sent += sent
	lv := c.Load
	lv.Label = s.label()
	lv.ClientCPU, lv.DelayedArrivals = cpu.share(), delayed
	if sh := c.Shard; sh != nil {
		lv = sh.Level(lv, sent)
	}
	if ctx.Err() != nil && r.fan.error() == nil {
		r.cancelled = true
	}
	return col.data(0, lv)
}

// session runs one session's turns in order and returns the requests it
// sent. A failed request ends the session: later turns are not sent (the
// session counts as failed), and every request sent has its record.
func (r *runner) session(ctx context.Context, idx int, sess workload.Session, start int64, load *SessionLoad,
	sr *sessionsRun) int {
	w, c := sr.w, r.cfg
	history := load.History
	if history == "" {
		history = runlog.HistoryServer
	}
	h := &sessionHistory{}
	if sys, err := sess.SystemText(c.Seed, sr.synth); err == nil && sys != "" {
		h.system = &histTurn{msgs: []workload.Message{{Role: "system", Content: sys}}, size: sr.tok.Count(sys)}
	}
	tools := sessionTools(sess)
	maxRounds := load.MaxToolRounds
	if maxRounds <= 0 {
		maxRounds = DefaultMaxToolRounds
	}
	sent := 0
	walk := session.New(sess, idx, start, maxRounds, session.FromLastSend)
	// With a chained history the server holds the conversation: a request
	// names the last answer (chainID) and carries only what came after it
	// (pending). An answer without an id falls back to resending it all.
	chained := history == runlog.HistoryChained
	var chainID string
	var pending []workload.Message
	if h.system != nil {
		pending = append(pending, h.system.msgs...)
	}
	for !walk.Done() {
		ti := walk.Turn()
		turn := &sess.Turns[ti]
		content := turn.Content
		if content == "" {
			content = sr.text(idx, ti, turn.InputTokens)
		}
		size := turn.InputTokens // the loader's count of the content, or the length written
		if size <= 0 {
			size = sr.tok.Count(content)
		}
		h.cur = histTurn{msgs: []workload.Message{{Role: "user", Content: content}}, size: size}
		pending = append(pending, h.cur.msgs...)
		rounds := turn.ToolRounds()
		for {
			round := walk.Round()
			if load.MaxContext > 0 {
				h.fit(load.MaxContext - turn.OutputTokens)
			}
			intended := walk.Due()
			if !loadgen.SleepUntil(ctx, w.now, intended) {
				return sent
			}
			id := walk.ID(w.prefix)
			req := workload.Request{Messages: h.messages(), OutputTokens: turn.OutputTokens, Tools: tools, Session: sess.ID}
			if chained && chainID != "" {
				req.Messages, req.PreviousResponseID = pending, chainID
			}
			if round < len(rounds) {
				req.ExpectedToolCalls = make([]string, len(rounds[round]))
				for j, tc := range rounds[round] {
					req.ExpectedToolCalls[j] = tc.Name
				}
				// A call's arguments must not be cut by the final answer's length.
				req.OutputTokens = max(turn.OutputTokens, minToolRoundTokens)
			}
			stamp := func(rec *runlog.Record) {
				rec.SessionID, rec.Turn, rec.ToolRound, rec.History, rec.HistoryDropped = sess.ID, ti+1, round, history, h.dropped
			}
			rec := r.sessionRequest(ctx, id, req, intended, sr)
			stamp(rec)
			rec = r.retryTurn(ctx, rec, id, req, sr, stamp)
			sent++
			calls := rec.ToolCalls
			if rec.OK() && len(calls) > 0 {
				if bad := undeclared(calls, tools); bad != "" {
					rec.ErrorClass = runlog.ErrBadResponse
					rec.Error = fmt.Sprintf("tool call of %q, which the request did not declare (declared: %s)", bad, strings.Join(tools, ", "))
				}
			}
			var wait time.Duration
			var results []workload.Message
			var resultSize int
			if rec.OK() && len(calls) > 0 {
				var planned []workload.ToolCall
				if round < len(rounds) {
					planned = rounds[round]
				}
				wait, results, resultSize = sr.toolResults(idx, ti, round, calls, planned, load)
				if round < maxRounds {
					rec.ToolLatencyNs = int64(wait)
				}
			}
			answer := rec.GeneratedText
			if history == runlog.HistoryRecorded && turn.RecordedReply != "" && len(calls) == 0 {
				answer = turn.RecordedReply
			}
			if !c.Output.KeepText {
				rec.GeneratedText = ""
				for k := range rec.ToolCalls {
					rec.ToolCalls[k].Arguments = ""
				}
			}
			_ = r.fan.Record(rec)
			if sr.watch != nil {
				_ = sr.watch.Record(rec)
			}
			walk.Sent(rec.Sent)
			if walk.Ended(rec.OK(), rec.End, len(calls) > 0, wait); !rec.OK() {
				return sent
			}
			if chained {
				chainID, pending = rec.ResponseID, nil
				if chainID == "" {
					chained = false // the server gave nothing to chain from
				}
				if len(calls) > 0 {
					pending = append(pending, results...)
				}
			}
			if len(calls) == 0 {
				answerSize := rec.CompletionTokens - rec.ReasoningTokens
				if history == runlog.HistoryRecorded && turn.RecordedReply != "" {
					answerSize = sr.tok.Count(answer)
				}
				h.cur.add(workload.Message{Role: "assistant", Content: answer}, max(answerSize, 0))
				break
			}
			// The calls and their results join the history whether or not
			// another request follows, so that it stays one a chat
			// template accepts (every call answered).
			h.cur.add(assistantCalls(calls), rec.CompletionTokens)
			h.cur.msgs = append(h.cur.msgs, results...)
			h.cur.size += resultSize
			if walk.Round() == 0 {
				break // the cap (the walk moved to the next turn): the turn ends without a visible answer
			}
		}
		h.past = append(h.past, h.cur)
	}
	return sent
}

// DefaultMaxToolRounds caps the tool rounds of one turn when
// SessionLoad.MaxToolRounds is 0: an agent whose model keeps calling tools
// is cut off, as real agent loops are. It is the virtual-time driver's.
const DefaultMaxToolRounds = simrun.DefaultMaxToolRounds

// minToolRoundTokens is the least max_tokens a request that the workload
// expects to be answered with tool calls asks for.
const minToolRoundTokens = 256

// retryTurn retries a turn's failed request as Config.Retry says (the
// client's retries, as in a plain run): each retried attempt is recorded,
// stamped as the turn's, and the last attempt is returned as the turn's
// record.
func (r *runner) retryTurn(ctx context.Context, rec *runlog.Record, id string, req workload.Request, sr *sessionsRun, stamp func(*runlog.Record)) *runlog.Record {
	p := r.cfg.Retry
	if p == nil {
		return rec
	}
	var rng *rand.Rand
	for k := 1; k <= p.Max && !rec.OK() && loadgen.Retryable(rec) && ctx.Err() == nil; k++ {
		if rng == nil {
			rng = rand.New(rand.NewPCG(uint64(r.cfg.Seed), loadgen.HashID(id)))
		}
		due := sr.w.now() + int64(p.Wait(k, rec, rng))
		rec.Retried = true
		_ = r.fan.Record(rec)
		if sr.watch != nil {
			_ = sr.watch.Record(rec)
		}
		if !loadgen.SleepUntil(ctx, sr.w.now, due) {
			now := sr.w.now()
			next := &runlog.Record{ID: id + "-a" + strconv.Itoa(k+1), Attempt: k + 1, RetryOf: id, Intended: due, Sent: now, End: now,
				ErrorClass: runlog.ErrCancelled, Error: "cancelled while backing off before a retry"}
			stamp(next)
			return next
		}
		next := r.sessionRequest(ctx, id, req, due, sr)
		next.ID, next.Attempt, next.RetryOf = id+"-a"+strconv.Itoa(k+1), k+1, id
		stamp(next)
		rec = next
	}
	return rec
}

// sessionRequest sends one request of a session and returns its record.
func (r *runner) sessionRequest(ctx context.Context, id string, req workload.Request, intended int64, sr *sessionsRun) *runlog.Record {
	w := sr.w
	call, err := w.backend.Prepare(id, req)
	rec := &runlog.Record{Intended: intended} // the backend keeps it, and resets the rest
	if err != nil {
		rec.ID, rec.Sent, rec.End = id, w.now(), w.now()
		rec.ErrorClass, rec.Error = runlog.ErrMalformed, "preparing the request: "+err.Error()
		return rec
	}
	if sr.watch != nil {
		sr.watch.Sent()
	}
	call(ctx, rec)
	return rec
}

// histTurn is one turn's messages in a session's history and their length
// in tokens.
type histTurn struct {
	msgs []workload.Message
	size int
}

func (t *histTurn) add(m workload.Message, size int) {
	t.msgs = append(t.msgs, m)
	t.size += size
}

// sessionHistory is what a session's next request carries: the system
// prompt, the turns before, and the current turn so far.
type sessionHistory struct {
	system  *histTurn
	past    []histTurn
	cur     histTurn
	dropped int
}

// fit leaves out the earliest past turns (each with its tool rounds) while
// the history is over limit tokens; the system prompt and the current turn
// always stay.
func (h *sessionHistory) fit(limit int) {
	total := h.cur.size
	if h.system != nil {
		total += h.system.size
	}
	for _, t := range h.past {
		total += t.size
	}
	for total > limit && len(h.past) > 0 {
		total -= h.past[0].size
		h.past = h.past[1:]
		h.dropped++
	}
}

// messages returns the history as one request's messages (a fresh slice:
// the backend may keep it).
func (h *sessionHistory) messages() []workload.Message {
	n := len(h.cur.msgs)
	for _, t := range h.past {
		n += len(t.msgs)
	}
	if h.system != nil {
		n++
	}
	out := make([]workload.Message, 0, n)
	if h.system != nil {
		out = append(out, h.system.msgs...)
	}
	for _, t := range h.past {
		out = append(out, t.msgs...)
	}
	return append(out, h.cur.msgs...)
}

// sessionTools are the tools a session's requests declare: its declared
// ones, else the names its turns call (nil: a session without tools).
func sessionTools(sess workload.Session) []string {
	if len(sess.Tools) > 0 {
		return sess.Tools
	}
	var names []string
	for _, t := range sess.Turns {
		for _, c := range t.ToolCalls {
			if !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// undeclared returns the first call's name that is not among tools ("" when
// all are declared).
func undeclared(calls []runlog.ToolCall, tools []string) string {
	for _, c := range calls {
		if !slices.Contains(tools, c.Name) {
			return c.Name
		}
	}
	return ""
}

// assistantCalls is the history's message of an answer made of tool calls.
func assistantCalls(calls []runlog.ToolCall) workload.Message {
	m := workload.Message{Role: "assistant", ToolCalls: make([]workload.MessageToolCall, len(calls))}
	for i, c := range calls {
		m.ToolCalls[i] = workload.MessageToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return m
}

// DefaultToolResultTokens is the length of a tool result the workload does
// not give (SessionLoad.ToolResultLen nil), the same in virtual time.
const DefaultToolResultTokens = simrun.DefaultToolResultTokens

// toolResults runs the tools of one answer's calls: they run concurrently,
// so the wait is the longest call's latency. A call the workload planned
// (the same position in the round, the same tool) takes its latency and
// result length; others draw them from the load's distributions. The
// results are the tool messages answering each call by its id.
func (sr *sessionsRun) toolResults(session, turn, round int, calls []runlog.ToolCall, planned []workload.ToolCall,
	load *SessionLoad) (wait time.Duration, msgs []workload.Message, size int) {
	rng := rand.New(rand.NewPCG(uint64(sr.seed)^0x746f6f6c73, uint64(session)<<32|uint64(turn)<<12|uint64(round)))
	msgs = make([]workload.Message, len(calls))
	for j, c := range calls {
		var lat time.Duration
		n := DefaultToolResultTokens
		if load.ToolResultLen != nil {
			n = max(load.ToolResultLen.Sample(rng), 0)
		}
		if load.ToolLatency != nil {
			lat = time.Duration(max(load.ToolLatency.Sample(rng), 0)) * time.Millisecond
		}
		if j < len(planned) && planned[j].Name == c.Name {
			lat, n = planned[j].Latency, planned[j].ResultTokens
		}
		wait = max(wait, lat)
		text := ""
		if n > 0 {
			text = sr.synth.Text(n, rng)
		}
		msgs[j] = workload.Message{Role: "tool", ToolCallID: c.ID, Content: text}
		size += n
	}
	return wait, msgs, size
}
