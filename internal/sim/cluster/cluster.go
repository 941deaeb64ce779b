package cluster

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// Config is a cluster: its replicas, each a simulated engine of its own
// configuration (a pool of differently configured replicas is a list of
// different configs), and the router in front of them.
type Config struct {
	// Replicas are the engines' configurations, replica i being
	// Replicas[i]; at least one.
	Replicas []sim.Config
	// Router spreads the requests over the replicas.
	Router
	// ExpertParallel makes the replicas the data-parallel ranks of one MoE
	// deployment with its experts sharded over all their GPUs (vLLM's
	// --enable-expert-parallel): the replicas step in lockstep, each step
	// lasting as long as the slowest rank's (an idle rank runs a dummy
	// forward) plus the MoE all-to-all (costmodel.Deployment.EPCommSeconds
	// over Σ TP GPUs). Every replica's model must be MoE. false: each
	// replica steps on its own schedule.
	ExpertParallel bool
	// Pools names the pool of each replica, replica i's at i, as a cluster
	// file (Parse) names them; nil when the replicas are of no named pool
	// (--replicas N). Reports subtotal the replicas by it; routing and
	// stepping ignore it.
	Pools []string
	// Autoscale adds and removes replicas on a signal (nil: the replicas
	// are fixed). Replicas are then the fleet at time 0.
	Autoscale *Autoscale
	// Disagg, when set, splits the replicas into a prefill pool and a
	// decode pool with a KV link between them (NewDisagg builds it; New
	// ignores it); nil: every replica serves whole requests.
	Disagg *Disaggregation
	// Gateway, when set, puts a gateway in front of the replicas
	// (NewGateway builds it; New ignores it): admission, priority classes,
	// overload degradation.
	Gateway *GatewayConfig
}

// ConfigError is a configuration problem of one Config field.
type ConfigError struct {
	// Field names the field at fault: "Replicas" (none, or one the engine
	// rejects), "Policy", "LoadCap" or "PrefixTokens" (the Router's), or
	// "ExpertParallel" (a dense model), or "Autoscale.<field>" (Signal,
	// Threshold, DownThreshold, Min, Max, UpStep, DownStep, Interval,
	// Window, Cooldown, ProvisionDelay; ExpertParallel for lockstep ranks),
	// "Disagg" or "Disagg.<field>", "Gateway" or "Gateway.<field>".
	Field string
	// Replica is, for a replica's configuration the engine rejected, its
	// index in Config.Replicas (from 0); -1 otherwise. Err is then the
	// engine's *sim.ConfigError, naming the engine's field.
	Replica int
	// Err says what is wrong.
	Err error
}

// Error names the replica (counted from 1, as records number them) or
// the field, then the problem.
func (e *ConfigError) Error() string {
	if e.Replica >= 0 {
		return fmt.Sprintf("replica %d: %v", e.Replica+1, e.Err)
	}
	return e.Err.Error()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Request is a request submitted to the cluster: the engine's request and
// what the router needs besides.
type Request struct {
	sim.Request
	// Session names the session (conversation, agent loop) the request is
	// a turn of, for session-affinity routing; "" for none.
	Session string
}

// Batch is what one replica's iteration produced: its engine's events,
// tagged with the replica (handed over as the engine gave them, not
// copied: a cluster's events are as many as its tokens).
type Batch struct {
	// Replica is the index of the replica (from 0).
	Replica int
	// Events are the iteration's events, in the engine's order.
	Events []sim.Event
}

// ReplicaStats is one replica's share of a run.
type ReplicaStats struct {
	// Routed counts the requests routed to the replica and accepted by its
	// engine.
	Routed int64
	// Outstanding is the requests in flight there now.
	Outstanding int
	// Steps counts the engine iterations it ran.
	Steps int64
	// KVPeak is the highest KV usage (0..1, as sim.Snapshot.KVUsage) seen
	// after any of its iterations was scheduled: the blocks its batch
	// held, less those of requests the iteration finished.
	KVPeak float64
	// Engine is the engine's state now.
	Engine sim.Snapshot
}

// Cluster is N simulated engines behind a router, sharing one virtual
// clock: a deterministic event loop, synchronous, with no clock and no
// goroutines of its own. It is not safe for concurrent use; one goroutine
// owns it, as one owns an Engine.
type Cluster struct {
	reps    []replica
	policy  policy
	loadCap int // prefix-aware's margin; < 0 none
	// byID is each request in flight's replica.
	byID map[string]int32
	// sessions is each session's replica (session-affinity).
	sessions map[string]int32
	// ready holds free replicas (no iteration in flight) that were given
	// work, to start at the next Step; spare is the other buffer.
	ready, spare []int32
	// ends is a min-heap of the replicas with an iteration in flight, by
	// (end, index).
	ends []int32
	out  []Batch
	rr   int
	// keys is scratch for a request's chained block keys; hashBlock the
	// granularity of hashes that name none (replica 0's block size).
	keys      []uint64
	hashBlock int
	steps     int64
	// ep: the replicas step in lockstep (Config.ExpertParallel), over
	// epRanks GPUs in all.
	ep      bool
	epRanks int
	// as is the autoscaler (nil: none); prefixTokens the router's
	// Config.PrefixTokens, for a replica it adds.
	as           *autoscaler
	prefixTokens int
}

// replica is one engine and the loop's state of it.
type replica struct {
	eng         *sim.Engine
	outstanding int
	routed      int64
	steps       int64
	kvPeak      float64
	// stepping: an iteration is in flight, ending at end with evs (the
	// engine's slice, valid until its next Step, which waits for them to be
	// delivered); queued: in Cluster.ready.
	stepping, queued bool
	end              int64
	evs              []sim.Event
	prefix           *prefixIndex
	// dummyNs is, under expert parallelism, the dummy forward an idle
	// rank runs in a lockstep step, ns.
	dummyNs int64
	// stepNs and stepTok are, during startLockstep, the rank's own step
	// time (ns) and tokens this step (an idle rank's dummy: 1 token).
	stepNs  int64
	stepTok int
	// busyNs is the time its iterations ran, up to the last one's end;
	// iterStart is the start of the one in flight.
	busyNs, iterStart int64
	// Autoscaling: state (the zero value active) and, for an added
	// replica, when it was decided (born) and routable (readyAt); since
	// activeAt it is active, with busyAtActive busy then; ring is its busy
	// time at the window's ticks, from tick ringFrom on; retired holds the
	// counters of the engines its slot had before.
	state         uint8
	born, readyAt int64
	activeAt      int64
	busyAtActive  int64
	ringFrom      int
	ring          []int64
	retired       sim.Snapshot
}

// New validates cfg and builds the cluster, each replica a fresh engine.
// A bad setting is a *ConfigError naming the field (and for a replica's
// engine, the replica, wrapping the engine's *sim.ConfigError).
func New(cfg Config) (*Cluster, error) {
	if len(cfg.Replicas) == 0 {
		return nil, &ConfigError{Field: "Replicas", Replica: -1, Err: errors.New("a cluster needs at least one replica")}
	}
	if len(cfg.Replicas) > runlog.MaxReplica {
		// Records number replicas within the reader's bound.
		return nil, &ConfigError{Field: "Replicas", Replica: -1, Err: errTooMany(len(cfg.Replicas))}
	}
	if err := cfg.Router.check(); err != nil {
		return nil, err
	}
	if a := cfg.Autoscale; a != nil {
		if err := a.check(len(cfg.Replicas), cfg.ExpertParallel); err != nil {
			return nil, err
		}
	}
	p, _ := policyOf(cfg.Policy)
	c := &Cluster{reps: make([]replica, len(cfg.Replicas)), policy: p, byID: map[string]int32{}, prefixTokens: cfg.PrefixTokens}
	for i, rc := range cfg.Replicas {
		e, err := sim.New(rc)
		if err != nil {
			return nil, &ConfigError{Field: "Replicas", Replica: i, Err: err}
		}
		c.reps[i].eng = e
		if p == prefixAware {
			capTokens := cfg.PrefixTokens
			if capTokens == 0 {
				ec := e.Config()
				capTokens = max(kvTokens(e), ec.BlockSize)
			}
			c.reps[i].prefix = newPrefixIndex(capTokens)
		}
	}
	c.hashBlock = c.reps[0].eng.Config().BlockSize
	if cfg.ExpertParallel {
		for i := range c.reps {
			e := c.reps[i].eng
			if !e.Deployment().MoE() {
				return nil, &ConfigError{Field: "ExpertParallel", Replica: -1, Err: errDense(i+1, e.Config().Model)}
			}
			c.epRanks += e.Deployment().TP
			c.reps[i].dummyNs = e.Deployment().DummyStepNs()
		}
		c.ep = true
	}
	switch c.loadCap = cfg.LoadCap; {
	case p != prefixAware:
	case c.loadCap == 0:
		c.loadCap = DefaultLoadCap
	}
	if p == sessionAffinity {
		c.sessions = map[string]int32{}
	}
	if cfg.Autoscale != nil {
		c.as = newAutoscaler(*cfg.Autoscale, cfg.Replicas[0], len(cfg.Replicas))
	}
	return c, nil
}

// errTooMany refuses a fleet of n replicas, more than records number.
func errTooMany(n int) error {
	return fmt.Errorf("%d replicas are too many (at most %d)", n, runlog.MaxReplica)
}

// errDense refuses expert parallelism over replica i's (from 1) dense
// model.
func errDense(i int, model string) error {
	return fmt.Errorf("expert parallelism needs an MoE model; replica %d's %s is dense", i, model)
}

// kvTokens is the engine's KV capacity in tokens.
func kvTokens(e *sim.Engine) int { return e.Describe().KVCapacityTokens }

// Len is the number of replicas.
func (c *Cluster) Len() int { return len(c.reps) }

// Config returns replica i's engine configuration as the engine resolved
// it (sim.Engine.Config).
func (c *Cluster) Config(i int) sim.Config { return c.reps[i].eng.Config() }

// Describe returns replica i's engine description (sim.Engine.Describe).
func (c *Cluster) Describe(i int) runlog.Engine { return c.reps[i].eng.Describe() }

// Add routes r, arriving at now (ns), to a replica and submits it there.
// It returns the replica's index (from 0; -1 for a duplicate id) and the
// engine's error for a request it can never serve (wrapping
// sim.ErrInvalidRequest, as a duplicate of a request in flight anywhere in
// the cluster does too). A replica without an iteration in flight starts
// one at the next Step.
func (c *Cluster) Add(now int64, r Request) (int, error) {
	if _, dup := c.byID[r.ID]; dup {
		return -1, fmt.Errorf("%w: %s: duplicate request id", sim.ErrInvalidRequest, r.ID)
	}
	if c.as != nil {
		c.advance(now)
	}
	var keys, prompt []uint64
	hb := r.HashBlockTokens
	if c.policy == prefixAware && len(r.BlockHashes) > 0 {
		if hb <= 0 {
			hb = c.hashBlock
		}
		// The blocks the replica will cache: every full one of prompt and
		// output the hashes describe, but the one the last token would
		// fill, whose KV is never computed. Only the prompt's can hit: the
		// output is not computed yet.
		n := min(len(r.BlockHashes), max(r.PromptTokens+r.OutputTokens-1, 0)/hb)
		keys = chainKeys(c.keys[:0], r.BlockHashes[:n], hb)
		c.keys = keys
		prompt = keys[:min(len(keys), max(r.PromptTokens, 0)/hb)]
	}
	i := c.route(&r, prompt)
	rep := &c.reps[i]
	if err := rep.eng.Add(now, r.Request); err != nil {
		return i, err
	}
	c.byID[r.ID] = int32(i)
	if c.as != nil {
		c.as.arrived[r.ID] = now
	}
	rep.outstanding++
	rep.routed++
	switch {
	case rep.prefix != nil && len(keys) > 0:
		rep.prefix.learn(keys, hb)
	case c.sessions != nil && r.Session != "":
		// The session's replica, or a new one when its replica was
		// scaled away (route keeps a live one).
		c.sessions[r.Session] = int32(i)
	}
	if !rep.stepping {
		c.enqueue(int32(i))
	}
	return i, nil
}

// route picks r's replica; prompt is the chained keys of its prompt's
// blocks (prefix-aware).
func (c *Cluster) route(r *Request, prompt []uint64) int {
	switch c.policy {
	case roundRobin:
		c.rr %= len(c.reps)
		for c.reps[c.rr].state != stateActive {
			c.rr = (c.rr + 1) % len(c.reps)
		}
		i := c.rr
		c.rr = (c.rr + 1) % len(c.reps)
		return i
	case leastKV:
		best, bestKV := 0, math.Inf(1)
		for i := range c.reps {
			if c.reps[i].state != stateActive {
				continue
			}
			kv := c.reps[i].eng.Snapshot().KVUsage
			if kv < bestKV || kv == bestKV && c.reps[i].outstanding < c.reps[best].outstanding {
				best, bestKV = i, kv
			}
		}
		return best
	case prefixAware:
		return c.prefixRoute(prompt)
	case dpBalance:
		return c.dpBalance()
	case sessionAffinity:
		if r.Session != "" {
			if i, ok := c.sessions[r.Session]; ok && c.reps[i].state == stateActive {
				return int(i)
			}
		}
	}
	return c.leastOutstanding()
}

// leastOutstanding is the replica with the fewest requests in flight, the
// lowest index on ties.
func (c *Cluster) leastOutstanding() int {
	best := c.firstActive()
	for i := best + 1; i < len(c.reps); i++ {
		if c.reps[i].state == stateActive && c.reps[i].outstanding < c.reps[best].outstanding {
			best = i
		}
	}
	return best
}

// dpBalance is vLLM's DP load balancer's choice: the lowest 4 × waiting +
// running, the lowest index on ties. Waiting weighs more since a queued
// request still has its whole prefill ahead of it.
func (c *Cluster) dpBalance() int {
	best, bestScore := 0, math.MaxInt
	for i := range c.reps {
		if c.reps[i].state != stateActive {
			continue
		}
		s := c.reps[i].eng.Snapshot()
		if score := 4*s.Waiting + s.Running; score < bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// prefixRoute is prefix-aware's choice: the longest remembered prefix of
// the request's prompt among the replicas within the load cap, then the
// fewest outstanding, then the lowest index. The least-loaded replica is
// always within the cap, so there is always a choice.
func (c *Cluster) prefixRoute(prompt []uint64) int {
	least := c.reps[c.leastOutstanding()].outstanding
	best, bestLen := -1, -1
	for i := range c.reps {
		rep := &c.reps[i]
		if rep.state != stateActive || c.loadCap >= 0 && rep.outstanding > least+c.loadCap {
			continue
		}
		n := 0
		if len(prompt) > 0 {
			n = rep.prefix.match(prompt)
		}
		if n > bestLen || n == bestLen && rep.outstanding < c.reps[best].outstanding {
			best, bestLen = i, n
		}
	}
	return best
}

// firstActive is the lowest-numbered active replica (there is always
// one: the autoscaler cancels a provisioning replica before it drains an
// active one, and keeps at least one of them).
func (c *Cluster) firstActive() int {
	for i := range c.reps {
		if c.reps[i].state == stateActive {
			return i
		}
	}
	return 0
}

// enqueue marks free replica i as given work.
func (c *Cluster) enqueue(i int32) {
	if r := &c.reps[i]; !r.queued {
		r.queued = true
		c.ready = append(c.ready, i)
	}
}

// Step advances the cluster's one clock from now to the next moment
// something happens, but not past until (the next time the caller has a
// request to add; math.MaxInt64, or any value ≤ now, for none), and
// returns that moment and the events then, one Batch per replica whose
// iteration ended then.
//
// First every replica without an iteration in flight that has work starts
// one at now, in replica order (each replica steps on its own schedule:
// an iteration starts when its previous one ended or, on an idle replica,
// when a request arrives). With Config.ExpertParallel they step in
// lockstep instead: a step starts on every replica at once, only when
// none is in flight, and ends for all at the same moment. Events of an
// iteration that ran no time
// (rejections) come back at once, at now. Otherwise the earliest end of an
// iteration in flight is the next moment; if until comes first, Step
// returns until with no events, so a request added then can start an idle
// replica on time. At the moment, every iteration ending then is
// delivered, in replica order. With nothing in flight Step returns now and
// no events.
//
// So a driver loops: Add the requests due by now, Step(now, next due),
// apply the events at the returned time and make it now. Requests due at
// the same moment as events are added after them, as with one engine.
// The batches are valid until the next Step; Add does not disturb them.
// The events of an iteration in flight that a request was aborted during
// still come, naming it. With Config.Autoscale the controller's ticks are
// moments too: if nothing comes first, Step returns the next tick with no
// events (an idle cluster still returns now; its ticks are caught up, at
// their own times, by the next Add or Step).
func (c *Cluster) Step(now, until int64) (int64, []Batch) {
	if until <= now {
		until = math.MaxInt64
	}
	if c.as == nil {
		return c.step(now, until)
	}
	// The controller's ticks are moments too: Step returns at the next,
	// so that it reads the signals as they are then.
	c.advance(now)
	t, out := c.step(now, min(until, c.as.next))
	c.observe(t, out)
	return t, out
}

// step is Step without the autoscaler; until > now.
func (c *Cluster) step(now, until int64) (int64, []Batch) {
	c.out = c.out[:0]
	c.start(now)
	if len(c.out) > 0 || len(c.ends) == 0 {
		return now, c.out
	}
	b := c.reps[c.ends[0]].end
	if b > until {
		return until, c.out
	}
	for len(c.ends) > 0 && c.reps[c.ends[0]].end == b {
		i := c.popEnd()
		r := &c.reps[i]
		r.stepping = false
		r.busyNs += r.end - r.iterStart
		c.collect(i, r.evs)
		r.evs = nil
		if r.eng.Busy() {
			c.enqueue(i)
		}
	}
	return b, c.out
}

// start begins an iteration at now on every ready replica with work.
func (c *Cluster) start(now int64) {
	if c.ep {
		c.startLockstep(now)
		return
	}
	if len(c.ready) == 0 {
		return
	}
	// A replica that ran nothing is queued again for the next Step: into
	// the other buffer, so this one is not extended under the loop.
	list := c.ready
	c.ready = c.spare[:0]
	slices.Sort(list)
	for _, i := range list {
		r := &c.reps[i]
		r.queued = false
		if !r.eng.Busy() {
			continue
		}
		end, evs := r.eng.Step(now)
		if end > now {
			r.steps++
			c.steps++
			r.kvPeak = max(r.kvPeak, r.eng.Snapshot().KVUsage)
			r.stepping, r.end, r.evs = true, end, evs
			r.iterStart = now
			c.pushEnd(i)
			continue
		}
		c.collect(i, evs)
		if r.eng.Busy() {
			c.enqueue(i)
		}
	}
	c.spare = list[:0]
}

// startLockstep begins one step of every replica at now, when any has
// work and no step is in flight: work arriving during a step waits for
// its end, as vLLM's DP ranks under EP enter each forward together. The
// step ends for all at now + the longest rank's time + the all-to-all of
// the rank with the most tokens. A rank's time is its engine's step (an
// idle rank's: its dummy forward) with its routed-expert GEMMs recosted
// for the tokens routed to its experts from every rank.
func (c *Cluster) startLockstep(now int64) {
	if len(c.ends) > 0 || len(c.ready) == 0 {
		return
	}
	for _, i := range c.ready {
		c.reps[i].queued = false
	}
	c.ready = c.ready[:0]
	maxTok, global, ran := 0, 0, false
	for k := range c.reps {
		i := int32(k)
		r := &c.reps[i]
		r.stepNs, r.stepTok = r.dummyNs, 1
		if !r.eng.Busy() {
			continue
		}
		end, evs := r.eng.Step(now)
		if end == now {
			c.collect(i, evs)
			continue
		}
		r.steps++
		c.steps++
		r.kvPeak = max(r.kvPeak, r.eng.Snapshot().KVUsage)
		r.stepping, r.evs = true, evs
		r.iterStart = now
		r.stepNs, r.stepTok = end-now, r.eng.StepTokens()
		maxTok = max(maxTok, r.stepTok)
		global += r.stepTok
		ran = true
	}
	if !ran {
		// Nothing runnable anywhere (rejections only): no forward, no
		// collectives; the busy replicas try again at the next Step.
		for k := range c.reps {
			if c.reps[k].eng.Busy() {
				c.enqueue(int32(k))
			}
		}
		return
	}
	var longest int64
	for k := range c.reps {
		r := &c.reps[k]
		d := r.eng.Deployment().EPExpertDeltaSeconds(r.stepTok, global, c.epRanks)
		longest = max(longest, r.stepNs+int64(math.Round(d*1e9)))
	}
	comm := int64(math.Round(c.reps[0].eng.Deployment().EPCommSeconds(maxTok, c.epRanks) * 1e9))
	end := now + max(longest, 1) + comm
	for k := range c.reps {
		switch r := &c.reps[k]; {
		case r.stepping:
			r.end = end
			c.pushEnd(int32(k))
		case r.eng.Busy():
			// Work it could not schedule now waits for the next step.
			c.enqueue(int32(k))
		}
	}
}

// collect appends replica i's events to the output, counting off the
// requests they end.
func (c *Cluster) collect(i int32, evs []sim.Event) {
	if len(evs) == 0 {
		return
	}
	c.out = append(c.out, Batch{Replica: int(i), Events: evs})
	for k := range evs {
		ev := &evs[k]
		if ev.Kind != sim.EventFinished && ev.Kind != sim.EventRejected {
			continue
		}
		if j, ok := c.byID[ev.ID]; ok && j == i {
			delete(c.byID, ev.ID)
			c.reps[i].outstanding--
		}
	}
}

// Abort drops request id (the client went away) on its replica, freeing
// its KV; no event is emitted for it, but an iteration already in flight
// there still reports what it did for it. An unknown id is ignored.
func (c *Cluster) Abort(now int64, id string) {
	i, ok := c.byID[id]
	if !ok {
		return
	}
	if c.as != nil {
		c.advance(now)
	}
	delete(c.byID, id)
	c.reps[i].outstanding--
	c.reps[i].eng.Abort(now, id)
	if c.as != nil {
		// A draining replica whose last request went goes now.
		delete(c.as.arrived, id)
		c.retire(now)
	}
}

// NextEnd is the earliest end of an iteration in flight (math.MaxInt64
// for none): the moment the next Step would deliver, read without
// delivering, so that a driver can sleep until it (or an arrival) and
// pools composed of clusters advance together.
func (c *Cluster) NextEnd() int64 {
	if len(c.ends) == 0 {
		return math.MaxInt64
	}
	return c.reps[c.ends[0]].end
}

// Busy reports whether any replica has an iteration in flight or work to
// start one with.
func (c *Cluster) Busy() bool {
	if len(c.ends) > 0 {
		return true
	}
	for _, i := range c.ready {
		if c.reps[i].eng.Busy() {
			return true
		}
	}
	return false
}

// Steps is the number of engine iterations run, over every replica.
func (c *Cluster) Steps() int64 { return c.steps }

// Snapshot returns the replicas' gauges and counters summed, KVUsage
// being their mean (each replica's fraction weighing alike, as a
// dashboard averaging the replicas' gauges shows it).
func (c *Cluster) Snapshot() sim.Snapshot {
	var s sim.Snapshot
	serving := 0
	for i := range c.reps {
		s.AddCounters(c.reps[i].retired)
		if st := c.reps[i].state; st == stateActive || st == stateDraining {
			serving++
		}
		s.Add(c.reps[i].eng.Snapshot())
	}
	s.KVUsage /= float64(max(serving, 1))
	return s
}

// Stats returns each replica's share of the run so far, by index.
func (c *Cluster) Stats() []ReplicaStats {
	out := make([]ReplicaStats, len(c.reps))
	for i := range c.reps {
		r := &c.reps[i]
		out[i] = ReplicaStats{Routed: r.routed, Outstanding: r.outstanding, Steps: r.steps, KVPeak: r.kvPeak, Engine: r.eng.Snapshot()}
		out[i].Engine.AddCounters(r.retired)
	}
	return out
}

// less orders the ends heap: earlier end first, then lower index, so that
// replicas ending together deliver in replica order.
func (c *Cluster) less(a, b int32) bool {
	ea, eb := c.reps[a].end, c.reps[b].end
	return ea < eb || ea == eb && a < b
}

func (c *Cluster) pushEnd(i int32) {
	h := append(c.ends, i)
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if !c.less(h[j], h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
	c.ends = h
}

func (c *Cluster) popEnd() int32 {
	h := c.ends
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for j := 0; ; {
		l := 2*j + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && c.less(h[r], h[l]) {
			m = r
		}
		if !c.less(h[m], h[j]) {
			break
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
	c.ends = h
	return top
}
