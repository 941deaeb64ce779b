package sim

import (
	"fmt"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// Step schedules and runs one iteration starting at now (ns). Every token it
// produces is emitted at end; end − now is the cost model's iteration time.
// The returned slice is valid until the next Step.
//
// With nothing runnable it returns end == now; the events are then empty
// except for rejections (a full waiting queue, MaxQueueTime exceeded),
// which are always delivered by the next Step, at end.
func (e *Engine) Step(now int64) (end int64, events []Event) {
	e.events = append(e.events[:0], e.pending...)
	e.pending = e.pending[:0]
	e.expire(now)
	e.scheduled = e.scheduled[:0]
	e.batch.Reset()
	switch e.cfg.Scheduler {
	case SchedSarathi:
		e.scheduleSarathi()
	case SchedPrefillFirst:
		e.schedulePrefillFirst()
	case SchedStatic:
		e.scheduleStatic()
	default:
		e.scheduleV1()
	}
	if len(e.scheduled) == 0 {
		return now, e.events
	}
	for _, q := range e.scheduled {
		if q.firstSched < 0 {
			q.firstSched = now
		}
		q.everSched = true
		e.batch.Add(q.sched, q.computed, q.tokens()-q.computed > 1)
		if q.draft > 0 {
			e.specRows += int(q.draft)
			e.drafts.Add(1, q.computed, false)
		}
	}
	if e.specRows > 0 {
		end = now + e.cfg.spec.StepNs(e.dep, &e.batch, e.specRows, &e.drafts)
		e.specRows = 0
		e.drafts.Reset()
	} else {
		end = now + e.dep.IterationNs(&e.batch)
	}
	e.finishStep(end)
	return end, e.events
}

// expire rejects waiting requests that were never scheduled and have
// waited longer than MaxQueueTime. It looks from the queue's head and stops
// at the first request still within its time, so a step costs O(expired).
func (e *Engine) expire(now int64) {
	limit := int64(e.cfg.MaxQueueTime)
	if limit <= 0 {
		return
	}
	for i := 0; i < e.waiting.len(); {
		q := e.waiting.at(i)
		if q.everSched {
			i++
			continue
		}
		if now-q.arrival <= limit {
			return
		}
		e.waiting.remove(i)
		e.events = append(e.events, Event{ID: q.id, Kind: EventRejected,
			Err: fmt.Sprintf("queued %v, over the %v limit", time.Duration(now-q.arrival).Round(time.Millisecond), e.cfg.MaxQueueTime)})
		e.snap.Rejected++
		e.recycle(q)
	}
}

// grow makes room for q to hold n more computed tokens, preempting the
// running request chosen by victim while blocks are short. It returns false
// when q itself had to be preempted.
func (e *Engine) grow(q *req, n int) bool {
	for {
		need := e.kv.BlocksFor(q.computed+n) - len(q.table)
		if need <= 0 {
			return true
		}
		if t, ok := e.kv.Allocate(q.table, need); ok {
			q.table = t
			return true
		}
		v := e.victim()
		e.preempt(v)
		if v == q {
			return false
		}
	}
}

// victim picks the running request to preempt: the newest (the last
// admitted), or with priority scheduling the newest of the worst class.
func (e *Engine) victim() *req {
	v := len(e.running) - 1
	if e.cfg.Priority {
		for i := v - 1; i >= 0; i-- {
			if e.running[i].priority > e.running[v].priority {
				v = i
			}
		}
	}
	return e.running[v]
}

// preempt frees q's KV and puts it at the front of the waiting queue, to be
// recomputed from scratch (its prefix may still hit the cache).
func (e *Engine) preempt(q *req) {
	for i, r := range e.running {
		if r == q {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	// A request already scheduled this step loses its slot.
	if q.sched > 0 {
		for i, r := range e.scheduled {
			if r == q {
				e.scheduled = append(e.scheduled[:i], e.scheduled[i+1:]...)
				break
			}
		}
		q.sched = 0
		q.draft = 0
	}
	if full := q.computed / e.bs; full > q.committed && e.kv.PrefixCaching() {
		e.kv.Commit(q.table, e.hashesUpTo(q, full), q.committed, full)
	}
	e.kv.Free(q.table)
	q.table = q.table[:0]
	q.committed = 0
	q.computed = 0
	q.running = false
	q.preemptions++
	e.snap.Preemptions++
	e.waiting.pushFront(q)
	e.events = append(e.events, Event{ID: q.id, Kind: EventPreempted})
}

// runOne schedules up to budget tokens of running request q; it returns the
// tokens scheduled, and preempted = true when room had to be made by
// preempting (possibly q itself).
func (e *Engine) runOne(q *req, budget int) (n int, preempted bool) {
	n = min(q.tokens()-q.computed, budget)
	if n <= 0 {
		return 0, false
	}
	draft := 0
	if e.cfg.spec != nil && n == 1 && q.generated > 0 && q.tokens()-q.computed == 1 {
		// A decode proposes drafts, no more than its output has left
		// after this step's own token, and the target verifies them all:
		// they count against the budget and need KV slots.
		draft = min(e.cfg.SpecTokens, q.output-q.generated-1, budget-1)
		n += draft
	}
	before := e.snap.Preemptions
	if !e.grow(q, n) {
		return 0, true
	}
	q.sched = n
	q.draft = uint8(draft)
	e.scheduled = append(e.scheduled, q)
	return n, e.snap.Preemptions != before
}

// admit tries to move the head of the waiting queue into running with up
// to budget tokens. whole demands the entire remaining prefill fit in
// budget (no chunking). It returns the tokens scheduled, 0 when the head
// cannot be admitted (not enough budget or KV blocks).
func (e *Engine) admit(budget int, whole bool) int {
	q := e.waiting.at(0)
	if q.kvReady {
		return e.admitReady(q)
	}
	hit := 0
	var hashes []uint64
	if q.computed == 0 && e.kv.PrefixCaching() {
		// At least the last token is always recomputed, so its logits
		// exist (vLLM's num_tokens − 1 cap).
		hashes = e.hashesUpTo(q, (q.tokens()-1)/e.bs)
		hit = e.kv.Match(hashes)
		hashes = hashes[:hit]
	}
	cached := hit * e.bs
	n := q.tokens() - cached
	if whole && n > budget {
		return 0
	}
	n = min(n, budget)
	need := e.kv.BlocksFor(cached+n) - hit
	if !e.kv.CanAllocate(need + e.freeHits(hashes)) {
		return 0
	}
	e.waiting.popFront()
	if e.kv.PrefixCaching() {
		e.snap.PrefixQueryTokens += int64(q.tokens())
		e.snap.PrefixHitTokens += int64(cached)
	}
	q.table = e.kv.Acquire(q.table, hashes)
	q.committed = hit
	q.table, _ = e.kv.Allocate(q.table, need)
	q.computed = cached
	if q.firstSched < 0 {
		q.cached = cached
	}
	q.running = true
	q.sched = n
	e.running = append(e.running, q)
	e.scheduled = append(e.scheduled, q)
	return n
}

// admitReady admits waiting-queue head q, whose prompt KV arrives
// computed (Request.KVReady): blocks for the prompt and the first token's
// slot, and one token scheduled, the decode that feeds the first token
// back. It returns 0 when the blocks are short.
func (e *Engine) admitReady(q *req) int {
	need := e.kv.BlocksFor(q.tokens())
	if !e.kv.CanAllocate(need) {
		return 0
	}
	e.waiting.popFront()
	q.table, _ = e.kv.Allocate(q.table, need)
	q.computed = q.prompt
	q.kvReady = false // from here its KV is the engine's: a preemption recomputes it
	q.running = true
	q.sched = 1
	e.running = append(e.running, q)
	e.scheduled = append(e.scheduled, q)
	return 1
}

// freeHits counts the hit blocks that sit in the free queue (acquiring
// them shrinks it).
func (e *Engine) freeHits(hashes []uint64) int {
	if len(hashes) == 0 {
		return 0
	}
	return e.kv.FreeAmong(hashes)
}

// scheduleV1 is vLLM V1's Scheduler.schedule: running requests in order,
// then (only if nobody was preempted) waiting ones, within the token budget
// and max_num_seqs.
func (e *Engine) scheduleV1() {
	budget := e.cfg.MaxNumBatchedTokens
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		q := e.running[i]
		n, p := e.runOne(q, budget)
		preempted = preempted || p
		budget -= n
		if p && !q.running {
			break // q itself was the victim: it was the last running
		}
	}
	if preempted {
		return
	}
	e.admitWaiting(budget, false)
}

// scheduleSarathi is stall-free batching: decodes, then ongoing prefills,
// then new prefills, in chunks within the budget.
func (e *Engine) scheduleSarathi() {
	budget := e.cfg.MaxNumBatchedTokens
	preempted := false
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < len(e.running) && budget > 0; i++ {
			q := e.running[i]
			decode := q.tokens()-q.computed == 1
			if (pass == 0) != decode || q.sched > 0 {
				continue
			}
			n, p := e.runOne(q, budget)
			preempted = preempted || p
			budget -= n
			if p {
				// The running list changed under us: restart the pass.
				i = -1
			}
		}
	}
	if preempted {
		return
	}
	e.admitWaiting(budget, false)
}

// schedulePrefillFirst is vLLM V0 without chunked prefill: if a waiting
// request can be admitted whole, the step runs only new prefills (decodes
// stall); otherwise it runs every running decode.
func (e *Engine) schedulePrefillFirst() {
	if e.admitWhole() {
		return
	}
	e.decodeAll()
}

// scheduleStatic admits a batch only when nothing is running, prefills it
// whole, then decodes until its longest member finishes.
func (e *Engine) scheduleStatic() {
	if len(e.running) == 0 && e.admitWhole() {
		return
	}
	e.decodeAll()
}

// admitWhole admits waiting requests whose prompts fit whole (no chunking)
// within the larger of the token budget and the model length, and reports
// whether it scheduled any.
func (e *Engine) admitWhole() bool {
	e.admitWaiting(max(e.cfg.MaxNumBatchedTokens, e.cfg.MaxModelLen), true)
	return len(e.scheduled) > 0
}

// admitWaiting admits waiting requests in order while budget tokens and
// sequence slots remain (whole prompts only, or chunks).
func (e *Engine) admitWaiting(budget int, whole bool) {
	for e.waiting.len() > 0 && budget > 0 && len(e.running) < e.cfg.MaxNumSeqs {
		n := e.admit(budget, whole)
		if n == 0 {
			break
		}
		budget -= n
	}
}

// decodeAll schedules one step of every running request, stopping if one
// had to preempt itself.
func (e *Engine) decodeAll() {
	for i := 0; i < len(e.running); i++ {
		q := e.running[i]
		_, p := e.runOne(q, 1<<30)
		if p && !q.running {
			break
		}
	}
}

// finishStep applies the iteration's results at end: computed tokens, new
// cache entries, generated tokens, finished requests.
func (e *Engine) finishStep(end int64) {
	done := 0
	for _, q := range e.scheduled {
		emit := 1
		if q.draft > 0 {
			// Only the accepted drafts' KV is kept: the target's own
			// token after them is fed back next step.
			emit += e.accepted(q)
			e.snap.SpecDraftTokens += int64(q.draft)
			e.snap.SpecAcceptedTokens += int64(emit - 1)
			q.computed += emit
			q.draft = 0
		} else {
			q.computed += q.sched
		}
		q.sched = 0
		// Blocks with a shared identity are registered as soon as their
		// tokens are computed, generated ones too: vLLM caches every full
		// block of prompt + output (allocate_slots → cache_blocks), so a
		// finished request leaves its answer findable for the next turn
		// that resends it. The last generated token is never fed back, so
		// a block it would fill is not cached (nor is it in vLLM). Private
		// blocks can only ever be found again by this same request after a
		// preemption, so they are registered then (in preempt), which
		// spares the hash map most of the traffic.
		if full := min(q.computed, q.sharedTokens()) / e.bs; full > q.committed && e.kv.PrefixCaching() {
			e.kv.Commit(q.table, e.hashesUpTo(q, full), q.committed, full)
			q.committed = full
		}
		if q.computed < q.tokens() {
			continue // a prefill chunk: no token yet
		}
		from := q.generated
		q.generated += emit
		e.snap.GenerationTokens += int64(emit)
		ev := Event{ID: q.id, Kind: EventTokens, Tokens: emit, Hidden: q.generated <= q.reasoning}
		if hidden := q.reasoning - from; hidden > 0 && hidden < emit {
			// The tokens straddle the end of the reasoning: its hidden
			// part first, then the visible rest.
			e.events = append(e.events, Event{ID: q.id, Kind: EventTokens, Tokens: hidden, Hidden: true})
			ev.Tokens = emit - hidden
		}
		if q.firstToken < 0 {
			q.firstToken = end
			ev.Cached = q.cached
			e.snap.PromptTokens += int64(q.prompt)
		}
		e.events = append(e.events, ev)
		if q.generated >= q.output {
			t := &runlog.ServerTiming{
				ArrivalNs:    q.arrival,
				QueueNs:      q.firstSched - q.arrival,
				PrefillNs:    q.firstToken - q.firstSched,
				DecodeNs:     end - q.firstToken,
				Preemptions:  q.preemptions,
				CachedTokens: q.cached,
			}
			if q.prefilled {
				// Its first token came with its KV: no prefill here,
				// decoding from its first scheduling.
				t.PrefillNs, t.DecodeNs = 0, end-q.firstSched
			}
			e.events = append(e.events, Event{ID: q.id, Kind: EventFinished, Timing: t})
			e.snap.Finished++
			e.kv.Free(q.table)
			q.table = q.table[:0]
			q.running = false
			done++
		}
	}
	if done == 0 {
		return
	}
	k := 0
	for _, q := range e.running {
		if q.running {
			e.running[k] = q
			k++
		}
	}
	clear(e.running[k:])
	e.running = e.running[:k]
	for _, q := range e.scheduled {
		if !q.running && q.generated >= q.output {
			e.recycle(q)
		}
	}
}

// accepted draws how many of q's drafts the target accepts this step: the
// leading successes of q.draft Bernoulli(SpecAcceptance) trials. Each trial
// hashes the request's id with its output position, so a run is
// reproducible and a request's acceptances do not depend on the batch it
// shared or the load (runs at different concurrency see the same draws).
func (e *Engine) accepted(q *req) int {
	seed := idHash(q.id)
	a := 0
	for ; a < int(q.draft); a++ {
		u := mix(seed, uint64(q.generated)<<5|uint64(a))
		if float64(u>>11)*0x1p-53 >= e.cfg.SpecAcceptance {
			break
		}
	}
	return a
}
