package sim

import (
	"fmt"
	"math"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim/costmodel"
	"github.com/goodput/goodput/internal/sim/kvcache"
)

// req is the engine's state of one request.
type req struct {
	id        string
	serial    uint64 // arrival order, also the seed of private block hashes
	prompt    int
	output    int
	reasoning int
	priority  int
	arrival   int64

	srcHashes []uint64 // Request.BlockHashes
	srcBlock  int      // Request.HashBlockTokens
	hashes    []uint64 // engine-block content hashes computed so far
	table     []int32  // KV blocks held
	committed int      // leading blocks registered in the prefix cache

	computed  int // tokens whose KV is computed (num_computed_tokens)
	generated int // output tokens produced
	sched     int // tokens scheduled this step
	running   bool
	draft     uint8 // of sched, the draft tokens to verify (≤ MaxSpecTokens); beside running to take no room

	firstSched  int64 // -1 until first scheduled
	firstToken  int64 // -1 until the first token
	preemptions int
	cached      int  // prefix-cache hit tokens at first scheduling
	everSched   bool // scheduled at least once (exempt from queue timeout)
	// kvReady: the prompt's KV arrives computed (Request.KVReady), until
	// admitted; prefilled stays set for the timing.
	kvReady, prefilled bool
}

// sharedTokens is the leading part of the sequence (prompt + output) whose
// blocks have a shared identity, described by Request.BlockHashes.
func (r *req) sharedTokens() int { return min(r.prompt+r.output, len(r.srcHashes)*r.srcBlock) }

// tokens is the sequence length the engine knows: prompt + generated.
func (r *req) tokens() int { return r.prompt + r.generated }

// deque is a ring-buffer queue of requests.
type deque struct {
	buf  []*req
	head int
	n    int
}

func (q *deque) len() int { return q.n }

func (q *deque) at(i int) *req { return q.buf[(q.head+i)%len(q.buf)] }

func (q *deque) grow() {
	if q.n < len(q.buf) {
		return
	}
	nb := make([]*req, max(16, 2*len(q.buf)))
	for i := range q.n {
		nb[i] = q.at(i)
	}
	q.buf, q.head = nb, 0
}

func (q *deque) pushBack(r *req) {
	q.grow()
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

func (q *deque) pushFront(r *req) {
	q.grow()
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = r
	q.n++
}

func (q *deque) popFront() *req {
	r := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return r
}

// insert places r at position i (0 = front).
func (q *deque) insert(i int, r *req) {
	q.pushBack(r)
	for j := q.n - 1; j > i; j-- {
		q.buf[(q.head+j)%len(q.buf)] = q.at(j - 1)
	}
	q.buf[(q.head+i)%len(q.buf)] = r
}

// remove deletes the element at position i.
func (q *deque) remove(i int) {
	for j := i; j < q.n-1; j++ {
		q.buf[(q.head+j)%len(q.buf)] = q.at(j + 1)
	}
	q.buf[(q.head+q.n-1)%len(q.buf)] = nil
	q.n--
}

// core holds the Engine's state; Engine embeds it so the contract's file
// stays short.
type core struct {
	cfg     *resolved
	dep     *costmodel.Deployment
	kv      *kvcache.Cache
	bs      int // block size
	waiting deque
	running []*req
	byID    map[string]*req
	serial  uint64

	batch     costmodel.Batch
	drafts    costmodel.Batch // the drafting decodes, one token each
	specRows  int             // draft tokens verified this step
	scheduled []*req
	events    []Event
	pending   []Event // rejections found outside a Step
	free      []*req  // recycled request structs (their slices reused)

	snap Snapshot
}

// New validates cfg and builds an engine. A bad setting gives a
// *ConfigError naming the field.
func New(cfg Config) (*Engine, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	kv, err := kvcache.New(r.numBlocks, r.BlockSize, r.EnablePrefixCaching)
	if err != nil {
		return nil, &ConfigError{Field: "NumGPUBlocksOverride", Err: err}
	}
	e := &Engine{core{cfg: r, dep: r.dep, kv: kv, bs: r.BlockSize, byID: map[string]*req{}}}
	return e, nil
}

// Add enqueues r, arriving at now (ns). It returns an error wrapping
// ErrInvalidRequest for a request the engine can never serve (bad lengths,
// longer than MaxModelLen, duplicate id). A full waiting queue is not an
// error: the request is refused with an EventRejected from the next Step.
func (e *Engine) Add(now int64, r Request) error {
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: empty id", ErrInvalidRequest)
	case r.PromptTokens <= 0:
		return fmt.Errorf("%w: %s: prompt_tokens %d must be > 0", ErrInvalidRequest, r.ID, r.PromptTokens)
	case r.OutputTokens <= 0:
		return fmt.Errorf("%w: %s: output tokens %d must be > 0", ErrInvalidRequest, r.ID, r.OutputTokens)
	case r.ReasoningTokens < 0:
		return fmt.Errorf("%w: %s: reasoning tokens %d must be ≥ 0", ErrInvalidRequest, r.ID, r.ReasoningTokens)
	case r.HashBlockTokens < 0:
		return fmt.Errorf("%w: %s: hash block tokens %d must be ≥ 0", ErrInvalidRequest, r.ID, r.HashBlockTokens)
	case r.KVReady && r.OutputTokens < 2:
		return fmt.Errorf("%w: %s: a request whose KV arrives computed has its first token already: output tokens %d must be ≥ 2", ErrInvalidRequest, r.ID, r.OutputTokens)
	case r.PromptTokens+r.OutputTokens > e.cfg.MaxModelLen:
		return fmt.Errorf("%w: %s: this model's maximum context length is %d tokens; the request needs %d (%d prompt + %d output)",
			ErrInvalidRequest, r.ID, e.cfg.MaxModelLen, r.PromptTokens+r.OutputTokens, r.PromptTokens, r.OutputTokens)
	}
	if _, dup := e.byID[r.ID]; dup {
		return fmt.Errorf("%w: %s: duplicate request id", ErrInvalidRequest, r.ID)
	}
	if e.cfg.MaxWaiting > 0 && e.waiting.len() >= e.cfg.MaxWaiting {
		e.pending = append(e.pending, Event{ID: r.ID, Kind: EventRejected,
			Err: fmt.Sprintf("waiting queue full (%d requests)", e.cfg.MaxWaiting)})
		e.snap.Rejected++
		return nil
	}
	q := e.newReq()
	e.serial++
	q.id, q.serial, q.prompt, q.output, q.priority, q.arrival = r.ID, e.serial, r.PromptTokens, r.OutputTokens, r.Priority, now
	q.reasoning = min(r.ReasoningTokens, q.output)
	if q.reasoning == 0 {
		q.reasoning = e.cfg.ReasoningFor(q.output)
	}
	if r.KVReady {
		// The first token exists: the sequence is prompt + 1, its KV
		// but the new token's computed, and it counts as the first token
		// (no prompt tokens counted here, no cache hits reported).
		q.kvReady, q.prefilled, q.generated, q.firstToken = true, true, 1, now
	}
	q.srcHashes = r.BlockHashes
	q.srcBlock = r.HashBlockTokens
	if q.srcBlock == 0 {
		q.srcBlock = e.bs
	}
	e.byID[r.ID] = q
	e.enqueue(q)
	return nil
}

func (e *Engine) newReq() *req {
	if n := len(e.free); n > 0 {
		q := e.free[n-1]
		e.free = e.free[:n-1]
		*q = req{hashes: q.hashes[:0], table: q.table[:0], firstSched: -1, firstToken: -1}
		return q
	}
	return &req{firstSched: -1, firstToken: -1}
}

func (e *Engine) recycle(q *req) {
	delete(e.byID, q.id)
	q.srcHashes = nil
	e.free = append(e.free, q)
}

// enqueue puts a new request in the waiting queue: at the back, or with
// priority scheduling after every request of the same or better class.
func (e *Engine) enqueue(q *req) {
	if !e.cfg.Priority {
		e.waiting.pushBack(q)
		return
	}
	i := e.waiting.len()
	for i > 0 && e.waiting.at(i-1).priority > q.priority {
		i--
	}
	e.waiting.insert(i, q)
}

// Abort drops request id (the client went away) and frees its KV blocks.
// No event is emitted; an unknown id is ignored.
func (e *Engine) Abort(now int64, id string) {
	q, ok := e.byID[id]
	if !ok {
		return
	}
	if q.running {
		for i, r := range e.running {
			if r == q {
				e.running = append(e.running[:i], e.running[i+1:]...)
				break
			}
		}
		e.kv.Free(q.table)
	} else {
		for i := range e.waiting.len() {
			if e.waiting.at(i) == q {
				e.waiting.remove(i)
				break
			}
		}
	}
	e.recycle(q)
}

// Config returns the engine's configuration as New resolved it: zero fields
// hold the defaults they stand for (BlockSize, MaxNumSeqs,
// MaxNumBatchedTokens, MaxModelLen, Scheduler, ToolCallTokens, ...). A
// driver reads from it the settings that shape its requests — the tool-call
// share and length, the reasoning default, the block size of the hashes it
// builds — so that they cannot disagree with the engine's.
func (e *Engine) Config() Config { return e.cfg.Config }

// Busy reports whether anything is waiting or running (or a rejection is
// still to be reported).
func (e *Engine) Busy() bool {
	return e.waiting.len() > 0 || len(e.running) > 0 || len(e.pending) > 0
}

// Snapshot returns the current gauges and cumulative counters.
func (e *Engine) Snapshot() Snapshot {
	s := e.snap
	s.Running = len(e.running)
	s.Waiting = e.waiting.len()
	s.KVUsage = e.kv.Usage()
	return s
}

// Describe returns the simulated setup for reports: model, GPU, TP, dtypes,
// scheduler and the resolved limits (KV capacity in blocks and tokens,
// max_num_seqs, max_num_batched_tokens, max_model_len, ...).
func (e *Engine) Describe() runlog.Engine {
	c := e.cfg
	d := runlog.Engine{
		Model:                c.dep.Model.Name,
		HFID:                 c.dep.Model.HFID,
		GPU:                  c.dep.GPU.Name,
		TensorParallelSize:   c.TP,
		DType:                c.DType,
		KVCacheDType:         c.dep.KVDType,
		Scheduler:            c.Scheduler,
		MaxNumSeqs:           c.MaxNumSeqs,
		MaxNumBatchedTokens:  c.MaxNumBatchedTokens,
		BlockSize:            c.BlockSize,
		GPUMemoryUtilization: c.GPUMemoryUtilization,
		EnablePrefixCaching:  c.EnablePrefixCaching,
		EnableChunkedPrefill: c.chunked(),
		MaxModelLen:          c.MaxModelLen,
		NumGPUBlocks:         c.numBlocks,
		KVCapacityTokens:     c.numBlocks * c.BlockSize,
		KVCacheGiBPerGPU:     round3(c.kvBytesTotal / costmodel.GiB),
		WeightsGiBPerGPU:     round3(c.dep.WeightBytesPerGPU() / costmodel.GiB),
		ParamsB:              round3(float64(c.dep.Model.Params()) / 1e9),
		ActiveParamsB:        round3(float64(c.dep.Model.ActiveParams()) / 1e9),
		MaxWaiting:           c.MaxWaiting,
		MaxQueueTimeS:        c.MaxQueueTime.Seconds(),
		ReasoningTokens:      c.ReasoningTokens,
		PriorityScheduling:   c.Priority,
		ProfileTable:         c.ProfileTable,
		MaxModelLenKVCapped:  c.modelLenCap,
	}
	if c.spec != nil {
		// Only when on (runlog.Engine writes these keys only then), so
		// reports of runs without it are unchanged.
		d.NumSpeculativeTokens = c.SpecTokens
		d.SpecAcceptance = c.SpecAcceptance
		d.SpecDraft = c.SpecDraft
	}
	return d
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// chunked reports whether prefills may be split across iterations.
func (c *resolved) chunked() bool {
	switch c.Scheduler {
	case SchedVLLMV1, SchedSarathi:
		return true
	case SchedPrefillFirst:
		return false
	}
	return c.EnableChunkedPrefill
}

// mix is a 64-bit hash combiner (splitmix64's finaliser over a ^ b·k).
func mix(a, b uint64) uint64 { return Mix64(a ^ (b * 0x9e3779b97f4a7c15)) }

// hashesUpTo extends q.hashes to cover its first n full blocks and returns
// them. A block entirely inside the part of the sequence (prompt, then
// output) that Request.BlockHashes describes takes its identity from those
// hashes (and its position inside them), chained over the prefix as vLLM
// chains block hashes; any other block is private to the request.
func (e *Engine) hashesUpTo(q *req, n int) []uint64 {
	known := q.sharedTokens()
	for j := len(q.hashes); j < n; j++ {
		var parent uint64 = 0x6a09e667f3bcc908
		if j > 0 {
			parent = q.hashes[j-1]
		}
		lo, hi := j*e.bs, (j+1)*e.bs
		var content uint64
		if hi <= known {
			content = 0x3c6ef372fe94f82b
			for i := lo / q.srcBlock; i <= (hi-1)/q.srcBlock; i++ {
				content = mix(content, q.srcHashes[i])
			}
			content = mix(content, uint64(lo%q.srcBlock))
		} else {
			content = mix(q.serial, uint64(j)|1<<63)
		}
		q.hashes = append(q.hashes, mix(parent, content))
	}
	return q.hashes[:n]
}

// idHash is FNV-1a over a request id: the seed of its draft acceptances,
// so that they depend on the request, not on when it ran.
func idHash(id string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 0x100000001b3
	}
	return h
}

// Deployment is the engine's cost model (its model, GPU and TP), for a
// driver that adds costs across engines (expert parallelism's all-to-all).
func (e *Engine) Deployment() *costmodel.Deployment { return e.dep }

// StepTokens is the tokens (prefill chunks and decodes) the latest Step
// scheduled; 0 before any or after one that ran nothing.
func (e *Engine) StepTokens() int { return e.batch.Tokens }
