package cluster

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/costmodel"
)

// Disaggregation splits a cluster's replicas into a prefill pool and a
// decode pool (DistServe, Splitwise, vLLM's disaggregated prefill): a
// request's prompt runs on a prefill replica, which produces its first
// token (its TTFT ends there); its prompt KV then crosses a link to a
// decode replica, which generates the rest.
type Disaggregation struct {
	// Prefill is the prefill pool's size P ≥ 1: Config.Replicas[:P] are
	// its engines and Config.Replicas[P:] the decode pool's (at least
	// one). Each pool has its own router of Config.Router's policy.
	Prefill int
	// Link names the KV link, one of costmodel.Links (its α and β); ""
	// means each prefill replica's GPU's own link (its profile's
	// tensor-parallel link: the pools share a node).
	Link string
}

// Role names a replica's pool in a disaggregated cluster.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// Disagg is a prefill pool and a decode pool, each a *Cluster with its
// router, sharing one virtual clock, with a KV link from every prefill
// replica to the decode pool. It keeps the Cluster's contract (Add, Step,
// Abort, Busy, Snapshot, Stats), replicas numbered across the pools:
// prefill replicas first (0..P−1), then decode ones (P..P+D−1).
//
// A request goes to the prefill pool as a prefill-only request (one
// output token): its first token is the prefill replica's event, and its
// KV is freed there when the token comes. This is earlier than vLLM's
// NixlConnector, which holds the blocks until the decode side has pulled
// them; with transfers of a few ms against steps of tens, the prefill
// pool's KV pressure is slightly understated. Its "finished" is not
// passed on: the transfer starts, over the prefill replica's link, taking
//
//	α + bytes/β,  bytes = prompt tokens × KV bytes per token per GPU
//
// (each of the replica's TP ranks sends its own KV shard over its own
// link, in parallel, so the per-GPU bytes set the time). Transfers from
// one prefill replica queue on its link, first come first served: one
// waits for the previous to end, so the time a record reports
// (runlog.ServerTiming.KVTransferNs) is the link queue plus α + bytes/β.
// When it ends the request joins the decode pool (routed then, by the
// decode router) with its KV ready (sim.Request.KVReady), and the rest of
// its tokens and its "finished" are the decode replica's events, with a
// Timing whose queue and prefill are the prefill side's and whose decode
// runs from the first token, the transfer included. A request of one
// output token ends on the prefill side.
//
// The TTFT a client sees is the prefill replica's first token, as in
// DistServe's model; vLLM's proxy streams the decode instance's output
// instead, so there the first token also waits for the transfer and the
// first decode step.
type Disagg struct {
	prefill, decode *Cluster
	np              int
	// link is the KV link's α and β; kvBytes each prefill replica's KV
	// bytes per token per GPU, and linkFree when its link is next free.
	link     costmodel.AllReduceFigures
	kvBytes  []float64
	linkFree []int64
	// maxLen is the decode pool's shortest MaxModelLen: a request must
	// fit there too.
	maxLen int
	reqs   map[string]*pdReq
	// moving is a min-heap of the transfers in flight by (arrive, seq).
	moving   []*pdReq
	seq      uint64
	out      []Batch
	lost     []sim.Event
	finished int64
}

// pdReq is a request's state in the split.
type pdReq struct {
	r          Request
	reasoning  int
	stage      uint8
	aborted    bool
	prefillRep int
	// first is its first token's time; arrive when its KV reaches the
	// decode pool; timing the prefill side's view.
	first, arrive int64
	seq           uint64
	timing        runlog.ServerTiming
}

// The stages of a pdReq.
const (
	stagePrefill uint8 = iota
	stageTransfer
	stageDecode
)

// NewDisagg validates cfg (with cfg.Disagg set) and builds the split, each
// pool a fresh Cluster of its replicas behind cfg.Router. A bad setting is
// a *ConfigError naming the field ("Disagg.Prefill", "Disagg.Link",
// "Disagg" for expert parallelism; a replica's engine error names the
// replica, counted across the pools).
func NewDisagg(cfg Config) (*Disagg, error) {
	pd := cfg.Disagg
	switch {
	case pd == nil:
		return nil, &ConfigError{Field: "Disagg", Replica: -1, Err: errors.New("no prefill/decode split configured")}
	case pd.Prefill < 1:
		return nil, &ConfigError{Field: "Disagg.Prefill", Replica: -1, Err: fmt.Errorf("prefill replicas %d: want ≥ 1", pd.Prefill)}
	case pd.Prefill >= len(cfg.Replicas):
		return nil, &ConfigError{Field: "Disagg.Prefill", Replica: -1, Err: fmt.Errorf("prefill replicas %d of %d leave no decode replica: want ≥ 1 of each", pd.Prefill, len(cfg.Replicas))}
	case cfg.ExpertParallel:
		return nil, &ConfigError{Field: "Disagg", Replica: -1, Err: errors.New("a prefill/decode split with expert parallelism is not simulated")}
	case cfg.Autoscale != nil:
		return nil, &ConfigError{Field: "Disagg", Replica: -1, Err: errors.New("a prefill/decode split with an autoscaler is not simulated: the split sizes its pools itself")}
	case len(cfg.Replicas) > runlog.MaxReplica:
		return nil, &ConfigError{Field: "Replicas", Replica: -1, Err: errTooMany(len(cfg.Replicas))}
	}
	var link costmodel.AllReduceFigures
	if pd.Link != "" {
		l, err := LinkByName(pd.Link)
		if err != nil {
			return nil, &ConfigError{Field: "Disagg.Link", Replica: -1, Err: err}
		}
		link = l.AllReduceFigures
	}
	np := pd.Prefill
	p, err := New(Config{Replicas: cfg.Replicas[:np], Router: cfg.Router})
	if err != nil {
		return nil, err
	}
	d, err := New(Config{Replicas: cfg.Replicas[np:], Router: cfg.Router})
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.Replica >= 0 {
			ce.Replica += np
		}
		return nil, err
	}
	g := &Disagg{prefill: p, decode: d, np: np, link: link, reqs: map[string]*pdReq{},
		kvBytes: make([]float64, np), linkFree: make([]int64, np), maxLen: math.MaxInt}
	for i := range np {
		dep := p.reps[i].eng.Deployment()
		g.kvBytes[i] = dep.KVBytesPerTokenPerGPU()
		if pd.Link == "" && i == 0 {
			g.link = dep.Link.AllReduceFigures
		}
	}
	for i := range d.Len() {
		g.maxLen = min(g.maxLen, d.Config(i).MaxModelLen)
	}
	return g, nil
}

// LinkByName is the built-in link kind name names (any case).
func LinkByName(name string) (costmodel.LinkKind, error) {
	for _, l := range costmodel.Links() {
		if strings.EqualFold(l.Name, strings.TrimSpace(name)) {
			return l, nil
		}
	}
	return costmodel.LinkKind{}, fmt.Errorf("unknown link %q (want %s)", name, strings.Join(LinkNames(), ", "))
}

// LinkNames are the built-in link kinds' names, as LinkByName reads them.
func LinkNames() []string {
	var names []string
	for _, l := range costmodel.Links() {
		names = append(names, l.Name)
	}
	return names
}

// TransferNs is the time the KV of tokens prompt tokens takes over link
// from a replica whose GPUs hold kvBytesPerToken each per token: α +
// bytes/β, ns.
func TransferNs(link costmodel.AllReduceFigures, tokens int, kvBytesPerToken float64) int64 {
	s := link.LatencyUs*1e-6 + float64(tokens)*kvBytesPerToken/(link.BusGBs*1e9)
	return max(int64(math.Round(s*1e9)), 1)
}

// Len is the number of replicas, both pools.
func (g *Disagg) Len() int { return g.np + g.decode.Len() }

// Prefill is the prefill pool's size: replicas 0..Prefill()−1 prefill.
func (g *Disagg) Prefill() int { return g.np }

// Role is replica i's pool, RolePrefill or RoleDecode.
func (g *Disagg) Role(i int) string {
	if i < g.np {
		return RolePrefill
	}
	return RoleDecode
}

// Config returns replica i's engine configuration.
func (g *Disagg) Config(i int) sim.Config {
	if i < g.np {
		return g.prefill.Config(i)
	}
	return g.decode.Config(i - g.np)
}

// Describe returns replica i's engine description.
func (g *Disagg) Describe(i int) runlog.Engine {
	if i < g.np {
		return g.prefill.Describe(i)
	}
	return g.decode.Describe(i - g.np)
}

// Add routes r, arriving at now, to a prefill replica and returns its
// index (from 0). A request the decode pool could never hold (longer than
// its MaxModelLen) is refused here, as the prefill pool refuses its own.
func (g *Disagg) Add(now int64, r Request) (int, error) {
	if _, dup := g.reqs[r.ID]; dup {
		return -1, fmt.Errorf("%w: %s: duplicate request id", sim.ErrInvalidRequest, r.ID)
	}
	if r.PromptTokens > 0 && r.OutputTokens > 0 && r.PromptTokens+r.OutputTokens > g.maxLen {
		return -1, fmt.Errorf("%w: %s: the decode pool's maximum context length is %d tokens; the request needs %d (%d prompt + %d output)",
			sim.ErrInvalidRequest, r.ID, g.maxLen, r.PromptTokens+r.OutputTokens, r.PromptTokens, r.OutputTokens)
	}
	// The reasoning share is fixed now, so both sides agree on whether
	// the first token is hidden.
	reasoning := min(r.ReasoningTokens, r.OutputTokens)
	if reasoning <= 0 {
		reasoning = g.prefill.Config(0).ReasoningFor(r.OutputTokens)
	}
	q := r
	q.OutputTokens, q.ReasoningTokens, q.KVReady = 1, min(reasoning, 1), false
	i, err := g.prefill.Add(now, q)
	if err != nil {
		return i, err
	}
	g.reqs[r.ID] = &pdReq{r: r, reasoning: reasoning, prefillRep: i, first: -1}
	return i, nil
}

// Abort drops request id wherever it is: on its prefill or decode replica,
// or on the link (the link stays busy for its bytes). An unknown id is
// ignored.
func (g *Disagg) Abort(now int64, id string) {
	q, ok := g.reqs[id]
	if !ok {
		return
	}
	delete(g.reqs, id)
	switch q.stage {
	case stagePrefill:
		g.prefill.Abort(now, id)
	case stageTransfer:
		q.aborted = true
	case stageDecode:
		g.decode.Abort(now, id)
	}
}

// NextEnd is the earliest of the pools' iteration ends and the transfers'
// arrivals (math.MaxInt64 for none), read without delivering, as
// Cluster.NextEnd: a wall-clock driver sleeping until it lands a transfer
// on its decode replica on time.
func (g *Disagg) NextEnd() int64 {
	t := min(g.prefill.NextEnd(), g.decode.NextEnd())
	if len(g.moving) > 0 {
		t = min(t, g.moving[0].arrive)
	}
	return t
}

// Busy reports whether either pool has work or a transfer is in flight.
func (g *Disagg) Busy() bool {
	return len(g.moving) > 0 || g.prefill.Busy() || g.decode.Busy()
}

// Steps is the iterations run by every replica of both pools.
func (g *Disagg) Steps() int64 { return g.prefill.Steps() + g.decode.Steps() }

// Snapshot returns both pools' gauges and counters summed, KVUsage being
// the mean over every replica and Finished the requests that finished end
// to end (a prefill-only request finishing on the prefill side does not
// count).
func (g *Disagg) Snapshot() sim.Snapshot {
	p, d := g.prefill.Snapshot(), g.decode.Snapshot()
	np, nd := float64(g.np), float64(g.decode.Len())
	kv := (p.KVUsage*np + d.KVUsage*nd) / (np + nd)
	p.Add(d)
	p.KVUsage, p.Finished = kv, g.finished
	return p
}

// Stats returns each replica's share, prefill replicas first (Role says
// which pool each is in).
func (g *Disagg) Stats() []ReplicaStats {
	return append(g.prefill.Stats(), g.decode.Stats()...)
}

// Step advances the split's one clock as Cluster.Step does: to the
// earliest of the pools' iteration ends and the transfers' arrivals, but
// not past until, returning the events then, one Batch per replica
// (numbered across the pools). Transfers arriving by now join the decode
// pool first, so a decode replica they wake starts at now. A moment when
// only transfers arrive is not returned: the loop goes on to the next
// one with events (or until).
func (g *Disagg) Step(now, until int64) (int64, []Batch) {
	if until <= now {
		until = math.MaxInt64
	}
	g.out = g.out[:0]
	for {
		g.land(now)
		if len(g.out) > 0 {
			return now, g.out
		}
		// Start each pool's ready iterations at now. Events of iterations
		// that ran no time (rejections) come back at once; so would the
		// end of an iteration at now+1, the other pool then starting 1 ns
		// late.
		if t, b := g.prefill.Step(now, now+1); len(b) > 0 {
			g.fromPrefill(t, b)
			return t, g.out
		}
		if t, b := g.decode.Step(now, now+1); len(b) > 0 {
			g.fromDecode(t, b)
			return t, g.out
		}
		tp, td, tx := g.prefill.NextEnd(), g.decode.NextEnd(), int64(math.MaxInt64)
		if len(g.moving) > 0 {
			tx = g.moving[0].arrive
		}
		m := min(tp, td, tx)
		if m == math.MaxInt64 {
			return now, g.out
		}
		if m > until {
			return until, g.out
		}
		if tp == m {
			_, b := g.prefill.Step(now, m)
			g.fromPrefill(m, b)
		}
		if td == m {
			_, b := g.decode.Step(now, m)
			g.fromDecode(m, b)
		}
		if len(g.out) > 0 || m == until {
			return m, g.out
		}
		now = m
	}
}

// land moves the transfers arrived by now into the decode pool.
func (g *Disagg) land(now int64) {
	g.lost = g.lost[:0]
	for len(g.moving) > 0 && g.moving[0].arrive <= now {
		q := g.popMoving()
		if q.aborted {
			continue
		}
		r := q.r
		r.ReasoningTokens, r.KVReady = q.reasoning, true
		// The decode side shares nothing: its blocks arrive, they are not
		// looked up.
		r.BlockHashes, r.HashBlockTokens = nil, 0
		if _, err := g.decode.Add(now, r); err != nil {
			// Add checked what the decode pool refuses; should it still,
			// the request ends refused rather than lost.
			delete(g.reqs, r.ID)
			g.lost = append(g.lost, sim.Event{ID: r.ID, Kind: sim.EventRejected, Err: err.Error()})
			continue
		}
		q.stage = stageDecode
	}
	if len(g.lost) > 0 {
		g.out = append(g.out, Batch{Replica: g.np, Events: g.lost})
	}
}

// fromPrefill passes a prefill pool's batches on at end: first tokens and
// rejections as they are, a prefill-only request's "finished" turned into
// its KV transfer (or passed on, for a request of one output token).
func (g *Disagg) fromPrefill(end int64, bs []Batch) {
	for _, b := range bs {
		evs := b.Events[:0]
		for _, ev := range b.Events {
			q := g.reqs[ev.ID]
			switch {
			case q == nil || q.stage != stagePrefill:
			case ev.Kind == sim.EventTokens && q.first < 0:
				q.first = end
			case ev.Kind == sim.EventRejected:
				delete(g.reqs, ev.ID)
			case ev.Kind == sim.EventFinished && q.r.OutputTokens <= 1:
				delete(g.reqs, ev.ID)
				g.finished++
			case ev.Kind == sim.EventFinished:
				if ev.Timing != nil {
					q.timing = *ev.Timing
				}
				g.send(q, b.Replica, end)
				continue
			}
			evs = append(evs, ev)
		}
		if len(evs) > 0 {
			g.out = append(g.out, Batch{Replica: b.Replica, Events: evs})
		}
	}
}

// send puts q's prompt KV on prefill replica i's link at now: it starts
// when the link is free and takes α + bytes/β.
func (g *Disagg) send(q *pdReq, i int, now int64) {
	start := max(now, g.linkFree[i])
	q.arrive = start + TransferNs(g.link, q.r.PromptTokens, g.kvBytes[i])
	g.linkFree[i] = q.arrive
	q.stage = stageTransfer
	g.seq++
	q.seq = g.seq
	g.pushMoving(q)
}

// fromDecode passes a decode pool's batches on at end, renumbered after
// the prefill pool, a "finished" with the request's whole timing.
func (g *Disagg) fromDecode(end int64, bs []Batch) {
	for _, b := range bs {
		rep := g.np + b.Replica
		for k := range b.Events {
			ev := &b.Events[k]
			q := g.reqs[ev.ID]
			if q == nil || q.stage != stageDecode {
				continue
			}
			switch ev.Kind {
			case sim.EventRejected:
				delete(g.reqs, ev.ID)
			case sim.EventFinished:
				delete(g.reqs, ev.ID)
				g.finished++
				t := q.timing
				if ev.Timing != nil {
					t.Preemptions += ev.Timing.Preemptions
				}
				t.DecodeNs = end - q.first
				t.KVTransferNs = q.arrive - q.first
				t.DecodeReplica = rep + 1
				ev.Timing = &t
			}
		}
		g.out = append(g.out, Batch{Replica: rep, Events: b.Events})
	}
}

// movingLess orders the transfers: earlier arrival, then earlier sent.
func movingLess(a, b *pdReq) bool {
	return a.arrive < b.arrive || a.arrive == b.arrive && a.seq < b.seq
}

func (g *Disagg) pushMoving(q *pdReq) {
	h := append(g.moving, q)
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if !movingLess(h[j], h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
	g.moving = h
}

func (g *Disagg) popMoving() *pdReq {
	h := g.moving
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = nil
	h = h[:n]
	for j := 0; ; {
		l := 2*j + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && movingLess(h[r], h[l]) {
			m = r
		}
		if !movingLess(h[m], h[j]) {
			break
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
	g.moving = h
	return top
}
