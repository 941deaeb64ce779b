// Package simrun drives the simulated engine in virtual time: it replays a
// workload's arrival schedule against a sim.Engine, stepping the engine
// iteration by iteration with no clock and no sleeping, and builds the same
// per-request runlog.Records the HTTP benchmark client measures — one Chunk
// per iteration that produced tokens, stamped with the iteration's end — plus
// the engine's own truth (queue, prefill and decode time, preemptions). So
// stats and reports treat a simulated run and a measured one alike.
//
// RunSessions does the same for sessions (conversations, agent loops):
// closed-loop turns with think times and tool rounds, each turn's prompt
// carrying the history, described to the engine's prefix cache block by
// block.
//
// A run is deterministic: the same engine configuration, dataset, load and
// seed give identical records. Run and RunSessions are synchronous and use
// no goroutines; it is safe to run several at once on different engines.
package simrun

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/workload"
)

// Load is the offered load of one run (one level of a sweep).
type Load struct {
	// Level is the offered load, the one level type: RequestRate is the
	// open-loop arrival rate in requests/s, 0 meaning closed loop (every
	// request due at once, MaxConcurrency, if any, pacing them), ignored for
	// datasets with their own arrival times (traces, replayed as recorded).
	// An arrival that finds the MaxConcurrency cap full waits for a slot:
	// its Intended stays the scheduled time and Sent is when it got the
	// slot. NumPrompts is the number of measured requests; 0 means the
	// dataset's length without a duration, else as many as the duration
	// admits (dataset indexes cycle, i % Len, past its end, except for
	// traces, replayed once). NumWarmups warm-up requests run to completion
	// (closed loop, MaxConcurrency at a time) before the measured schedule
	// starts, on the dataset indexes after the measured ones so the measured
	// requests do not depend on them; their records have Warmup set. The
	// duration stops sending new measured requests once that much virtual
	// time has passed since the measured phase began (requests in flight
	// finish). Burstiness 0 means 1.
	runlog.Level
	// Seed seeds the arrival schedule.
	Seed int64
	// Retry, when set, retries a failed attempt that loadgen.Retryable
	// says is worth it — a rejection (429: a queue full, queued past its
	// limit, a rate limit) or a timeout (Timeout) — as a client would: the
	// failed attempt's record has Retried set, and the retry is sent after
	// the policy's wait, with Attempt and RetryOf linking it to the first
	// attempt. A rejection advertises a wait (Record.RetryAfterNs): the
	// rejecter's own (sim.Event.RetryAfterNs) when it says one, else
	// RetryAfter (0: DefaultRetryAfter, as goodput serve says); the retry
	// waits at least that unless the policy ignores it. A timeout
	// advertises nothing.
	Retry      *loadgen.RetryPolicy
	RetryAfter time.Duration
	// Timeout is the client's limit on a whole request, bench's --timeout
	// (0: none): a request not finished Timeout after its send ends then,
	// a timeout failure (runlog.ErrTimeout) keeping what it had received,
	// and the engine drops it — a server that notices the disconnect, as
	// vLLM does — unless KeepAbandoned.
	Timeout time.Duration
	// KeepAbandoned leaves a timed-out request running on the engine, as a
	// server that does not notice the client went away does: its work is
	// wasted (Result.Abandoned, AbandonedTokens) and holds up the queue
	// while the client's retry joins it.
	KeepAbandoned bool
	// NaturalStop lets a request stop before its asked output length when
	// its natural length (sim.NaturalLength) is shorter, as the HTTP server
	// does for a request sent without ignore_eos; false generates exactly
	// the asked length, as with ignore_eos. It applies to requests whose
	// length is only a cap (workload.Request.OutputRecorded false).
	NaturalStop bool
	// NaturalStopRecorded lets requests whose dataset recorded the output
	// length (traces, ShareGPT replies) stop early too; false generates
	// exactly the recorded length, which is what the traced server did.
	NaturalStopRecorded bool
	// Halt, when set, is asked before each measured arrival: once it says
	// true no further measured request is sent and those in flight finish
	// (a level whose --target-precision was reached).
	Halt func() bool
	// Index is copied into every Record (the sweep level index).
	Index int
	// Sample, when set, is called with the engine's state every
	// SampleEvery of virtual time from 0 (what a scraper polling the
	// server's /metrics would read), and once at the run's end.
	Sample      func(at int64, s sim.Snapshot)
	SampleEvery time.Duration
	// PriorityMix, when set, gives each request a priority class
	// (sim.Request.Priority, Record.Priority) drawn from these shares by a
	// hash of its dataset index and the seed (cluster.ClassOf), so a
	// retry keeps its first attempt's class. Run only.
	PriorityMix []float64
}

// Result summarizes a run; the Records carry the detail.
type Result struct {
	// Sent, Completed and Failed count measured requests (warm-ups not
	// included); Sent = Completed + Failed.
	Sent, Completed, Failed int
	// Warmups is the number of warm-up requests run.
	Warmups int
	// Retried counts measured attempts that failed and were sent again
	// (Load.Retry); they are in neither Completed nor Failed.
	Retried int
	// Abandoned counts measured attempts that timed out and that the
	// engine went on running (Load.KeepAbandoned); AbandonedTokens are the
	// output tokens it generated for them after the client left (warm-ups
	// included): wasted work.
	Abandoned       int
	AbandonedTokens int64
	// DelayedArrivals counts open-loop arrivals that found the in-flight
	// cap full and were sent late.
	DelayedArrivals int
	// Start is when the measured phase began and End when its last request
	// ended, in virtual ns from the run start.
	Start, End int64
	// Steps is the number of engine iterations run (warm-ups included).
	Steps int64
	// Engine is the engine's state at the end (a cluster's summed, KV
	// usage its mean).
	Engine sim.Snapshot
	// Replicas is each replica's share of a cluster run (RunCluster), by
	// index; nil for one engine.
	Replicas []cluster.ReplicaStats
}

// Duration is the measured phase's virtual length.
func (r Result) Duration() time.Duration { return time.Duration(r.End - r.Start) }

// checkErr is a load field's error in a user setting's words (the field
// of runspec that sets it), as loadgen.CheckLevel writes the level's.
func checkErr(field string, value any, why string) error {
	return fmt.Errorf("simrun: %w", setting.Errorf(field, fmt.Sprint(value), "%s", why))
}

// ErrStalled is returned when the engine holds requests but will run none
// and nothing else is due, which a correct engine never does.
var ErrStalled = errors.New("simrun: engine stalled")

// Run replays ds under load against eng in virtual time and calls emit with
// each request's Record the moment (in virtual time) it ends, in that order.
// emit owns the record and may keep it; an emit error stops the run and is
// returned. When ctx is cancelled, requests in flight are aborted and
// emitted as cancelled, and ctx's error is returned with the Result so far.
//
// eng should be fresh (or idle): virtual time starts at 0 and request ids
// are the dataset index ("w"-prefixed for warm-ups).
func Run(ctx context.Context, eng *sim.Engine, ds workload.Dataset, load Load, emit func(*runlog.Record) error) (Result, error) {
	return run(ctx, &single{e: eng}, ds, load, emit)
}

// run is Run over one engine or a cluster.
func run(ctx context.Context, eng engine, ds workload.Dataset, load Load, emit func(*runlog.Record) error) (Result, error) {
	if ds == nil || ds.Len() <= 0 {
		return Result{}, errors.New("simrun: empty dataset")
	}
	if load.Burstiness == 0 {
		load.Burstiness = 1 // the zero Load is Poisson
	}
	if err := loadgen.CheckLevel(load.Level); err != nil {
		return Result{}, fmt.Errorf("simrun: %w", err)
	}
	if load.Timeout < 0 {
		return Result{}, checkErr("Timeout", load.Timeout, "want ≥ 0 (0: none)")
	}
	trace := ds.Shape(0).HasArrival
	closed := !trace && load.RequestRate == 0
	if closed && load.NumPrompts == 0 && load.DurationS > 0 && load.MaxConcurrency == 0 {
		return Result{}, errors.New("simrun: a closed-loop run bounded only by duration needs a max concurrency (or a request rate, or num prompts)")
	}
	r := &runner{eng: eng, ds: ds, load: load, emit: emit, inflight: map[string]*flight{}}
	defer r.sampleEnd()
	n := load.NumPrompts
	if n == 0 && load.DurationS == 0 {
		n = ds.Len()
	}
	if trace && (n == 0 || n > ds.Len()) {
		n = ds.Len()
	}
	if load.NumWarmups > 0 {
		src := &source{closed: true, count: load.NumWarmups, first: n, warmup: true}
		if err := r.phase(ctx, arrivalFeed{r, src}); err != nil {
			return r.result(), err
		}
	}
	r.res.Start = r.now
	r.res.End = r.now
	src := &source{count: n, t0: r.now, duration: int64(load.Duration()), halt: load.Halt}
	switch {
	case trace:
		src.ds = ds
	case closed:
		src.closed = true
	default:
		src.arrivals = workload.NewArrivals(load.RequestRate, load.Burstiness, load.Seed)
	}
	err := r.phase(ctx, arrivalFeed{r, src})
	return r.result(), err
}

// runner is one Run's state.
type runner struct {
	eng      engine
	ds       workload.Dataset
	load     Load
	emit     func(*runlog.Record) error
	now      int64 // virtual ns
	inflight map[string]*flight
	issued   int64 // sequence of sends, to order cancelled records
	res      Result
	// prevFlights[i] is the flight of the previous iteration's event i;
	// curFlights is the spare buffer apply fills next.
	prevFlights, curFlights []*flight
	// caches keeps each replica's prevFlights and curFlights between its
	// iterations (one, for one engine).
	caches []flightCache
	// sessions is RunSessions' state, jobs RunJobs'; nil in Run.
	sessions *sessionFeed
	jobs     *jobFeed
	// nextSample is the virtual time of the next Load.Sample call,
	// lastSample that of the last one.
	nextSample, lastSample int64
	// retries are the rejected requests' next attempts, by due time; rng
	// draws their jitter.
	retries retryQueue
	rng     *rand.Rand
	// deadlines are the flights' client timeouts (Load.Timeout), earliest
	// first, ended flights left in until they surface; aborts are the ids
	// of timed-out requests to drop from the engine after the iteration
	// whose events may still name them; abandoned are those left running
	// (Load.KeepAbandoned), whose events are counted as waste.
	deadlines deadlineQueue
	aborts    []string
	abandoned map[string]bool
}

// deadlineQueue is a min-heap of flights by client deadline, then send.
type deadlineQueue []*flight

func (q deadlineQueue) Len() int { return len(q) }
func (q deadlineQueue) Less(i, j int) bool {
	return q[i].deadline < q[j].deadline || (q[i].deadline == q[j].deadline && q[i].seq < q[j].seq)
}
func (q deadlineQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *deadlineQueue) Push(x any)   { *q = append(*q, x.(*flight)) }
func (q *deadlineQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return x
}

// nextDeadline is the earliest client deadline of a flight still in
// flight; false when none.
func (r *runner) nextDeadline() (int64, bool) {
	for len(r.deadlines) > 0 {
		if f := r.deadlines[0]; !f.gone {
			return f.deadline, true
		}
		heap.Pop(&r.deadlines)
	}
	return 0, false
}

// expire times out every flight whose deadline is before by (or at it,
// when inclusive): the client gives up, so the record ends at the
// deadline with the chunks received by then, and a retry is queued as
// the policy says.
func (r *runner) expire(by int64, inclusive bool) error {
	for {
		d, ok := r.nextDeadline()
		if !ok || d > by || (!inclusive && d == by) {
			return nil
		}
		f := heap.Pop(&r.deadlines).(*flight)
		rec := f.rec
		delete(r.inflight, rec.ID)
		rec.End = d
		rec.ErrorClass, rec.Error, rec.FinishReason = runlog.ErrTimeout, "request exceeded "+r.load.Timeout.String(), ""
		if r.load.KeepAbandoned {
			if r.abandoned == nil {
				r.abandoned = map[string]bool{}
			}
			r.abandoned[rec.ID] = true
			if !rec.Warmup {
				r.res.Abandoned++
			}
		} else {
			r.aborts = append(r.aborts, rec.ID)
		}
		r.retryLater(f, d, 0)
		if err := r.end(f); err != nil {
			return err
		}
	}
}

// flushAborts drops the timed-out requests from the engine at now: the
// server notices the disconnect at its next iteration.
func (r *runner) flushAborts(now int64) {
	for _, id := range r.aborts {
		r.eng.abort(now, id)
	}
	r.aborts = r.aborts[:0]
}

// timedFeed is a feed whose next send is no later than the next client
// deadline, so that a cluster steps no further than a timeout.
type timedFeed struct {
	feed
	r *runner
}

func (t *timedFeed) next() (int64, bool) {
	n, ok := t.feed.next()
	if d, dok := t.r.nextDeadline(); dok && (!ok || d < n) {
		return d, true
	}
	return n, ok
}

// DefaultRetryAfter is the wait a rejection advertises when Load.RetryAfter
// is 0: the Retry-After goodput serve sends with its 429s.
const DefaultRetryAfter = time.Second

// retry is a failed request's next attempt (Run's; a session's next
// attempt is its next send).
type retry struct {
	due     int64
	seq     int64 // order among retries due at once
	idx     int
	attempt int    // the attempt it will be, from 2
	orig    string // the first attempt's id
	warmup  bool
}

// retryQueue is a min-heap of retries by due time, then order of rejection.
type retryQueue []retry

func (q retryQueue) Len() int { return len(q) }
func (q retryQueue) Less(i, j int) bool {
	return q[i].due < q[j].due || (q[i].due == q[j].due && q[i].seq < q[j].seq)
}
func (q retryQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *retryQueue) Push(x any)   { *q = append(*q, x.(retry)) }
func (q *retryQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// peek is the earliest retry's due time; false when none waits.
func (q retryQueue) peek() (int64, bool) {
	if len(q) == 0 {
		return 0, false
	}
	return q[0].due, true
}

// flight is a request in the engine.
type flight struct {
	rec     *runlog.Record
	seq     int64
	idx     int    // dataset index
	attempt int    // 1 for a first attempt
	out     int    // output tokens asked of the engine
	visible bool   // last chunk's visibility, to merge same-time chunks
	conv    *convo // the session the request is a turn of; nil in Run
	// job is the agent job the request is node `node` of; nil outside
	// RunJobs.
	job  *jobRun
	node int
	// deadline is when the client gives up (Load.Timeout; 0: never);
	// gone is set once the request ended for the client.
	deadline int64
	gone     bool
	// last is the last chunk's time, kept here so that merging does not
	// read the chunk back: with many requests in flight (a cluster's) it
	// is rarely still in the CPU's cache.
	last int64
}

func (r *runner) result() Result {
	res := r.res
	r.eng.fill(&res)
	return res
}

// source yields a phase's arrivals in order of intended send time.
type source struct {
	closed   bool               // no schedule: due at once, Intended = Sent
	arrivals *workload.Arrivals // open loop
	ds       workload.Dataset   // trace: the dataset's own arrival times
	t0       int64              // phase start (virtual ns)
	count    int                // arrivals to yield; 0 = unbounded (Duration)
	duration int64              // stop when due after t0+duration; 0 = none
	halt     func() bool        // stop once it says so; nil = never
	first    int                // dataset index of the first arrival
	warmup   bool

	i      int // arrivals yielded
	peeked bool
	next   int64 // intended time of arrival i
	done   bool
}

// peek returns the intended time of the next arrival, or false when the
// source is exhausted. A closed source's arrivals are all due at t0.
func (s *source) peek() (int64, bool) {
	if s.done {
		return 0, false
	}
	if (s.count > 0 && s.i >= s.count) || (s.halt != nil && s.halt()) {
		s.done = true
		return 0, false
	}
	if !s.peeked {
		switch {
		case s.closed:
			s.next = s.t0
		case s.ds != nil:
			sh := s.ds.Shape(s.first + s.i)
			s.next = s.t0 + int64(sh.Arrival)
		default:
			d := s.arrivals.Next()
			s.next = s.t0 + min(int64(d), math.MaxInt64-s.t0)
		}
		s.peeked = true
	}
	if s.duration > 0 && !s.closed && s.next-s.t0 > s.duration {
		s.done = true
		return 0, false
	}
	return s.next, true
}

// take consumes the peeked arrival, returning its dataset index.
func (s *source) take() int {
	idx := s.first + s.i
	s.i++
	s.peeked = false
	return idx
}

// feed is what a phase sends, in order of due time: Run's arrival
// schedule, or RunSessions' session starts and turns.
type feed interface {
	// next returns when the next send that may go now is due; false when
	// none can (all sent, or the rest wait for a slot to free).
	next() (int64, bool)
	// admit sends every send due by `by` (strictly before when
	// !inclusive) that may go, none before sendAt.
	admit(by int64, inclusive bool, sendAt int64) error
}

// arrivalFeed is Run's feed: a source under the in-flight cap.
type arrivalFeed struct {
	r   *runner
	src *source
}

var _ feed = arrivalFeed{}

func (a arrivalFeed) next() (int64, bool) {
	t, ok := a.src.peek()
	if rt, rok := a.r.retries.peek(); rok && (!ok || rt < t) {
		t, ok = rt, true
	}
	return t, ok && a.r.slotFree()
}

func (a arrivalFeed) admit(by int64, inclusive bool, sendAt int64) error {
	return a.r.admit(a.src, by, inclusive, sendAt)
}

// slotFree reports whether the in-flight cap admits one more request.
func (r *runner) slotFree() bool {
	return r.load.MaxConcurrency == 0 || len(r.inflight) < r.load.MaxConcurrency
}

// admit sends every arrival due by `by` (strictly before when !inclusive)
// while slots are free. sendAt is the earliest send time: an arrival due
// earlier than it waited for a slot.
func (r *runner) admit(src *source, by int64, inclusive bool, sendAt int64) error {
	for r.slotFree() {
		t, ok := src.peek()
		if rt, rok := r.retries.peek(); rok && (!ok || rt <= t) {
			// A retry due first (or with an arrival): it goes first.
			if rt > by || (!inclusive && rt == by) {
				return nil
			}
			rq := heap.Pop(&r.retries).(retry)
			if err := r.sendAttempt(rq.idx, rt, max(rt, sendAt), rq.warmup, rq.attempt, rq.orig); err != nil {
				return err
			}
			continue
		}
		if !ok || t > by || (!inclusive && t == by) {
			return nil
		}
		sent := max(t, sendAt)
		if src.closed && src.duration > 0 && sent-src.t0 >= src.duration {
			src.done = true
			return nil
		}
		idx := src.take()
		intended := t
		if src.closed {
			intended = sent // no schedule to be late against
		} else if sent > t {
			r.res.DelayedArrivals++
		}
		if err := r.send(idx, intended, sent, src.warmup); err != nil {
			return err
		}
	}
	return nil
}

// send adds dataset request idx to the engine at time sent.
func (r *runner) send(idx int, intended, sent int64, warmup bool) error {
	return r.sendAttempt(idx, intended, sent, warmup, 1, "")
}

// sendAttempt sends attempt (from 1) of dataset request idx; a retry
// (attempt ≥ 2) is named after orig, the first attempt's id.
func (r *runner) sendAttempt(idx int, intended, sent int64, warmup bool, attempt int, orig string) error {
	sh := r.ds.Shape(idx % r.ds.Len())
	id := strconv.Itoa(idx)
	switch {
	case attempt > 1:
		id = orig + "-a" + strconv.Itoa(attempt)
	case warmup:
		id = "w" + id
		r.res.Warmups++
	default:
		r.res.Sent++
	}
	out := sh.OutputTokens
	finish := "length"
	// The same distribution simserve uses, keyed by (seed, index) since
	// virtual time has no prompt text to hash.
	natural := sim.NaturalLength(uint64(r.load.Seed)^sim.Mix64(uint64(idx)+0x9e3779b97f4a7c15), sim.DefaultNaturalMedian)
	stop := r.load.NaturalStop
	if sh.OutputRecorded {
		stop = r.load.NaturalStopRecorded
	}
	if out <= 0 || (stop && natural < out) {
		out = natural
		finish = "stop"
	}
	rec := &runlog.Record{
		ID:                    id,
		Level:                 r.load.Index,
		Warmup:                warmup,
		Intended:              intended,
		Sent:                  sent,
		RequestedPromptTokens: sh.PromptTokens,
		MaxTokens:             sh.OutputTokens,
		FinishReason:          finish,
		Priority:              cluster.ClassOf(r.load.PriorityMix, r.load.Seed, idx),
	}
	if attempt > 1 {
		rec.Attempt, rec.RetryOf = attempt, orig
	}
	return r.add(&flight{rec: rec, out: out, idx: idx, attempt: attempt}, sim.Request{
		ID:              id,
		PromptTokens:    sh.PromptTokens,
		OutputTokens:    out,
		BlockHashes:     sh.BlockHashes,
		HashBlockTokens: sh.HashBlockTokens,
		Priority:        rec.Priority,
	})
}

// add submits q to the engine at f.rec.Sent and tracks it as f; a request
// the engine refuses outright ends at once, answered 400 as the HTTP
// server would.
func (r *runner) add(f *flight, q sim.Request) error {
	var session string
	switch {
	case f.conv != nil:
		session = f.conv.id
	case f.job != nil:
		session = f.job.id
	}
	replica, err := r.eng.add(f.rec.Sent, q, session)
	f.rec.Replica = replica
	if d, ok := r.eng.(degrading); ok {
		f.rec.Degraded = d.degraded()
	}
	if err != nil {
		rec := f.rec
		rec.Status, rec.ErrorClass, rec.Error = 400, runlog.ErrHTTP4xx, err.Error()
		rec.End, rec.FinishReason = rec.Sent, ""
		return r.end(f)
	}
	r.issued++
	f.seq = r.issued
	r.inflight[q.ID] = f
	if t := r.load.Timeout; t > 0 {
		f.deadline = f.rec.Sent + int64(t)
		heap.Push(&r.deadlines, f)
	}
	return nil
}

// end finishes f's record: a session's next request is scheduled (or the
// session ends) before the record is emitted, so the record carries the
// tool wait that follows it.
func (r *runner) end(f *flight) error {
	f.gone = true
	switch {
	case f.conv != nil:
		r.sessions.ended(f.conv, f.rec)
	case f.job != nil:
		r.jobs.ended(f.job, f.node, f.rec)
	}
	return r.finish(f.rec)
}

// retryLater handles f's failed attempt, ended at `at`: a rejection
// advertises its wait on the record (advertised, the rejecter's, when > 0;
// else the load's), and when the failure is retryable and the policy
// allows another attempt the record is marked retried and the retry
// queued after the policy's wait — in Run's retry queue, or as the
// session's next send.
func (r *runner) retryLater(f *flight, at, advertised int64) {
	rec := f.rec
	if rec.ErrorClass == runlog.ErrHTTP429 {
		if advertised <= 0 {
			advertised = int64(r.load.RetryAfter)
		}
		if advertised <= 0 {
			advertised = int64(DefaultRetryAfter)
		}
		rec.RetryAfterNs = advertised
	}
	p := r.load.Retry
	if p == nil || f.attempt > p.Max || !loadgen.Retryable(rec) {
		return
	}
	if r.rng == nil {
		r.rng = rand.New(rand.NewPCG(uint64(r.load.Seed), 0x7e7))
	}
	orig := rec.ID
	if rec.RetryOf != "" {
		orig = rec.RetryOf
	}
	rec.Retried = true
	due := at + int64(p.Wait(f.attempt, rec, r.rng))
	if c := f.conv; c != nil {
		// The session sends the same request again (sessionFeed.ended).
		c.attempt, c.orig, c.retryDue = f.attempt, orig, due
		return
	}
	r.issued++
	heap.Push(&r.retries, retry{due: due, seq: r.issued, idx: f.idx,
		attempt: f.attempt + 1, orig: orig, warmup: rec.Warmup})
}

// finish emits a completed record.
func (r *runner) finish(rec *runlog.Record) error {
	if rec.Retried {
		if !rec.Warmup {
			r.res.Retried++
		}
		return r.emit(rec)
	}
	if !rec.Warmup {
		if rec.OK() {
			r.res.Completed++
		} else {
			r.res.Failed++
		}
		r.res.End = max(r.res.End, rec.End)
	}
	return r.emit(rec)
}

// ctxCheckSteps is how many iterations run between context checks.
const ctxCheckSteps = 256

// phase runs fd's sends to completion.
func (r *runner) phase(ctx context.Context, fd feed) error {
	var steps int
	stepFeed := fd
	if r.load.Timeout > 0 {
		stepFeed = &timedFeed{feed: fd, r: r}
	}
	for {
		r.sampleTo(r.now)
		// Arrivals due by now that have a slot (those due earlier waited
		// for one, so they go out now).
		if err := fd.admit(r.now, true, r.now); err != nil {
			return err
		}
		if !r.eng.busy() {
			// Nothing in the engine, so nothing holds a slot: a send not
			// offered now is one of none left.
			t, ok := fd.next()
			if !ok {
				return nil
			}
			if t <= r.now {
				// Due but no slot, and nothing running to free one: the
				// cap must be held by requests that ended; cannot happen.
				return fmt.Errorf("%w: arrival due with %d in flight and an idle engine", ErrStalled, len(r.inflight))
			}
			r.sampleTo(t - 1) // the idle engine, until the arrival
			r.now = t
			continue
		}
		if steps++; steps%ctxCheckSteps == 0 && ctx.Err() != nil {
			return r.cancel(ctx)
		}
		end, batches := r.eng.step(r.now, stepFeed)
		r.res.Steps++
		if end == r.now && len(batches) == 0 {
			// Nothing runnable now: let time pass to the next arrival, or
			// to a client's timeout before it.
			t, ok := fd.next()
			if d, dok := r.nextDeadline(); dok && (!ok || d <= t) {
				r.now = max(d, r.now)
				if err := r.expire(r.now, true); err != nil {
					return err
				}
				r.flushAborts(r.now)
				continue
			}
			if !ok {
				return fmt.Errorf("%w at %v with %d requests in flight", ErrStalled, time.Duration(r.now), len(r.inflight))
			}
			r.now = max(t, r.now)
			continue
		}
		// Clients that gave up during the iteration: they saw none of its
		// output, and their retries may go out during it too.
		if err := r.expire(end, false); err != nil {
			return err
		}
		// Arrivals during the iteration: they reach the engine at their own
		// time and wait for the next iteration. (Add leaves the events
		// valid: they are only invalidated by the next Step.)
		if err := fd.admit(end, false, r.now); err != nil {
			return err
		}
		for _, b := range batches {
			if err := r.applyBatch(b, end); err != nil {
				return err
			}
		}
		r.flushAborts(end)
		r.now = end
	}
}

// apply turns one iteration's events, all at time end, into record updates.
func (r *runner) apply(evs []sim.Event, end int64) error {
	prev := r.prevFlights
	r.prevFlights = r.curFlights[:0]
	for i := range evs {
		ev := &evs[i]
		// The running batch changes little between iterations, so the
		// request at position i is usually the one there last time: a
		// string compare (same backing bytes) instead of a map lookup.
		var f *flight
		if i < len(prev) && prev[i] != nil && !prev[i].gone && prev[i].rec.ID == ev.ID {
			f = prev[i]
		} else if f = r.inflight[ev.ID]; f == nil {
			r.prevFlights = append(r.prevFlights, nil)
			if r.abandoned != nil && r.abandoned[ev.ID] {
				r.wasted(ev)
			}
			continue
		}
		r.prevFlights = append(r.prevFlights, f)
		rec := f.rec
		switch ev.Kind {
		case sim.EventTokens:
			if ev.Tokens <= 0 {
				continue
			}
			visible := !ev.Hidden
			if rec.Chunks == nil {
				// Sized at the first token, not at sending, so a long
				// waiting queue costs no chunk memory.
				rec.Chunks = make([]runlog.Chunk, 0, min(f.out, 1<<16))
			}
			if n := len(rec.Chunks); n > 0 && f.last == end && f.visible == visible {
				rec.Chunks[n-1].Tokens += int32(ev.Tokens)
			} else {
				rec.Chunks = append(rec.Chunks, runlog.Chunk{T: end, Tokens: int32(ev.Tokens), Visible: visible})
			}
			f.visible, f.last = visible, end
			rec.CompletionTokens += ev.Tokens
			if ev.Hidden {
				rec.ReasoningTokens += ev.Tokens
			}
			if ev.Cached > 0 {
				rec.CachedTokens = ev.Cached
			}
		case sim.EventFinished:
			delete(r.inflight, ev.ID)
			r.prevFlights[len(r.prevFlights)-1] = nil
			var t runlog.ServerTiming
			if ev.Timing != nil {
				t = *ev.Timing
			}
			rec.Server = &t
			rec.End = end
			rec.Status = 200
			rec.PromptTokens = rec.RequestedPromptTokens
			rec.TokenSource = runlog.TokensUsage
			if t.CachedTokens > 0 {
				rec.CachedTokens = t.CachedTokens
			}
			if err := r.end(f); err != nil {
				return err
			}
		case sim.EventRejected:
			delete(r.inflight, ev.ID)
			r.prevFlights[len(r.prevFlights)-1] = nil
			rec.End = end
			rec.Status, rec.ErrorClass, rec.Error = 429, runlog.ErrHTTP429, ev.Err
			rec.FinishReason = ""
			r.retryLater(f, end, ev.RetryAfterNs)
			if err := r.end(f); err != nil {
				return err
			}
		}
	}
	r.curFlights = prev
	return nil
}

// wasted counts an abandoned request's event: the tokens the engine made
// for a client that left, and its end.
func (r *runner) wasted(ev *sim.Event) {
	switch ev.Kind {
	case sim.EventTokens:
		r.res.AbandonedTokens += int64(max(ev.Tokens, 0))
	case sim.EventFinished, sim.EventRejected:
		delete(r.abandoned, ev.ID)
	}
}

// cancel aborts everything in flight, emits those records as cancelled (in
// send order) and returns ctx's error.
func (r *runner) cancel(ctx context.Context) error {
	fs := make([]*flight, 0, len(r.inflight))
	for _, f := range r.inflight {
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b *flight) int { return int(a.seq - b.seq) })
	for _, f := range fs {
		delete(r.inflight, f.rec.ID)
		r.eng.abort(r.now, f.rec.ID)
		f.rec.End = r.now
		f.rec.ErrorClass, f.rec.Error, f.rec.FinishReason = runlog.ErrCancelled, "run cancelled", ""
		if err := r.end(f); err != nil {
			return errors.Join(ctx.Err(), err)
		}
	}
	return ctx.Err()
}

// sampleTo calls Load.Sample for every sample time up to at (ns) with the
// engine's state now: the state holds between iterations, so a sample time
// during an iteration reads the state the iteration ended with.
func (r *runner) sampleTo(at int64) {
	every := int64(r.load.SampleEvery)
	if r.load.Sample == nil || every <= 0 {
		return
	}
	for r.nextSample <= at {
		r.load.Sample(r.nextSample, r.eng.snapshot())
		r.lastSample, r.nextSample = r.nextSample, r.nextSample+every
	}
}

// sampleEnd calls Load.Sample at the run's end too (unless a sample time
// fell on it), so the last window closes on the final state.
func (r *runner) sampleEnd() {
	if r.load.Sample == nil || r.load.SampleEvery <= 0 {
		return
	}
	r.sampleTo(r.now)
	if r.lastSample != r.now {
		r.load.Sample(r.now, r.eng.snapshot())
		r.lastSample = r.now
	}
}
