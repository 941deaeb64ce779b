package cluster

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// GatewayConfig is the gateway in front of a cluster's replicas: admission
// by token buckets, priority classes kept apart (by the engines' priority
// queues or by pools of replicas of their own), and degradation of
// requests under overload. Its zero value admits everything as it comes,
// the cluster unchanged.
type GatewayConfig struct {
	// Requests limits the admitted requests per second; nil: no limit.
	Requests *Bucket
	// Tokens limits the admitted tokens per second, a request costing its
	// prompt plus its output tokens (as vendors count prompt + max_tokens
	// against a tokens-per-minute limit); nil: no limit.
	Tokens *Bucket
	// PerClass gives every priority class buckets of its own, at the
	// rates above; false: all classes share them.
	PerClass bool
	// PriorityQueues turns on every replica's priority scheduling
	// (sim.Config.Priority): a lower class is scheduled first.
	PriorityQueues bool
	// Pools partitions the replicas into pools, each a cluster of its own
	// behind the same router: Pools[k].Replicas lists its replicas'
	// indexes in Config.Replicas (from 0). Every replica is in exactly one
	// pool. None: the replicas are one pool.
	Pools []Pool
	// ClassPools[c] is the pool class c is routed to; a class past the
	// end goes to the last entry's pool, a negative one to class 0's.
	// Empty: every class goes to pool 0.
	ClassPools []int
	// Degrade, when set, degrades requests that arrive while their pool
	// is overloaded.
	Degrade *Degrade
	// Mix is the workload's shares of the priority classes (class c's
	// share Mix[c]; they need not sum to 1): a run gives request i a
	// class drawn from it by a hash of i (ClassOf). Empty: every request
	// is class 0.
	Mix []float64
}

// Bucket is a token bucket: it refills at Rate units per second up to
// Burst and starts full; a request takes its cost from it, or is refused
// when the bucket holds less.
type Bucket struct {
	// Rate is the refill in units (requests, or tokens) per second, > 0.
	Rate float64
	// Burst is the bucket's capacity, ≥ 1; 0 means one second's refill
	// (Rate, at least 1).
	Burst float64
}

// Pool is a named set of replicas.
type Pool struct {
	// Name names the pool in messages ("interactive", "small").
	Name string
	// Replicas are the replicas' indexes in Config.Replicas, from 0.
	Replicas []int
}

// Degradation actions, the values of Degrade.Action and of the records'
// Degraded field.
const (
	// DegradeMaxTokens caps the request's output at Degrade.Value tokens
	// (max_tokens).
	DegradeMaxTokens = "max_tokens"
	// DegradeReasoning cuts the request's hidden reasoning to
	// Degrade.Value tokens, keeping its visible answer.
	DegradeReasoning = "reasoning"
	// DegradeSmallModel routes the request to pool Degrade.Pool (a smaller
	// model's replicas).
	DegradeSmallModel = "small_model"
)

// Degrade is overload degradation: a request arriving while more than
// Above requests wait in its pool's queues (every replica's waiting
// requests summed; with PerReplica, in every replica's queue) is degraded
// by Action.
type Degrade struct {
	// Above is the threshold: degrade while waiting > Above (≥ 0).
	Above int
	// PerReplica applies Above to each replica's own queue: degrade when
	// every replica of the pool has more than Above waiting, so whichever
	// the router picks is over it.
	PerReplica bool
	// Action is DegradeMaxTokens, DegradeReasoning or DegradeSmallModel.
	Action string
	// Value is the output cap (max_tokens, ≥ 1) or the reasoning budget
	// (reasoning, ≥ 0).
	Value int
	// Pool is, for small_model, the pool index degraded requests go to.
	Pool int
}

// ErrRateLimited is the reason of a gateway rejection: the request found
// its token bucket short (the Err of its EventRejected starts with it).
var ErrRateLimited = errors.New("rate limited")

// ClassOf is request index idx's priority class under mix (shares by
// class): drawn by a hash of idx and seed, so a request keeps its class
// whatever order requests are built in, and a retry keeps its first
// attempt's. An empty or all-zero mix gives class 0.
func ClassOf(mix []float64, seed int64, idx int) int {
	var total float64
	for _, s := range mix {
		total += max(s, 0)
	}
	if total <= 0 || len(mix) < 2 {
		return 0
	}
	// 53 bits of the hash as a uniform in [0, 1).
	u := float64(sim.Mix64(uint64(seed)^sim.Mix64(uint64(idx)^0x70726f))>>11) / (1 << 53)
	u *= total
	for c, s := range mix {
		if u < max(s, 0) {
			return c
		}
		u -= max(s, 0)
	}
	return len(mix) - 1
}

// Gateway is a cluster behind a gateway: it admits, degrades and routes
// each request to its pool's cluster, and steps the pools in one virtual
// time. It keeps the cluster's contract (Fleet): replicas are
// numbered over all pools as in Config.Replicas, and a request the gateway
// refuses comes back as an EventRejected at the next Step, in a batch of
// Replica Len() (one past the last replica: no replica saw it), Add
// having returned -1. Like a Cluster it is synchronous and not safe for
// concurrent use.
type Gateway struct {
	cfg   GatewayConfig
	pools []gwPool
	n     int // replicas over all pools
	// where is each replica's (pool, index in it), by global index.
	where []gwSlot
	// buckets are the shared buckets (class 0's with PerClass), then
	// each further class's.
	buckets [][2]*bucket
	// rejected holds the refusals since the last Step; rejOut is the
	// slice the last Step handed out (Add must not disturb it).
	rejected, rejOut []sim.Event
	out              []Batch
	// limited and degraded count the refusals and degradations so far.
	limited, degraded int64
	// last is what the last Add degraded ("" none).
	last string
}

// gwSlot is a replica's place: its pool and its index there.
type gwSlot struct{ pool, local int }

// gwPool is one pool: its cluster and the global index of its replicas.
// A pool is a *Cluster, not any fleet: merging the pools' clocks needs
// each one's next end without delivering it (the end heap's top), which
// Step alone cannot give.
type gwPool struct {
	c   *Cluster
	idx []int
	// identity: the pool's replicas are 0..n-1 in order, so its batches
	// pass unchanged.
	identity bool
	// held: the pool's cluster already delivered the batches of heldAt,
	// a moment after the one the gateway returned (kept until then). It
	// happens only when one pool refuses a request at now while another's
	// iteration ends at now+1 ns; a request routed to the held pool in
	// that nanosecond sees it 1 ns ahead.
	held   bool
	heldAt int64
	heldB  []Batch
}

// NewGateway validates cfg (its Gateway, nil meaning the zero
// GatewayConfig) and builds its pools, each a fresh cluster of its
// replicas behind cfg's router. A prefill/decode split (Config.Disagg)
// cannot be fronted yet. A bad setting is a *ConfigError, Field
// "Gateway.<field>" for the gateway's.
func NewGateway(cfg Config) (*Gateway, error) {
	var gc GatewayConfig
	if cfg.Gateway != nil {
		gc = *cfg.Gateway
	}
	if len(cfg.Replicas) == 0 {
		return nil, &ConfigError{Field: "Replicas", Replica: -1, Err: errors.New("a cluster needs at least one replica")}
	}
	if cfg.Disagg != nil {
		return nil, &ConfigError{Field: "Gateway", Replica: -1, Err: errors.New("a gateway in front of a prefill/decode split is not simulated yet")}
	}
	if err := gc.check(len(cfg.Replicas), cfg.ExpertParallel, cfg.Autoscale != nil); err != nil {
		return nil, err
	}
	pools := gc.Pools
	if len(pools) == 0 {
		all := make([]int, len(cfg.Replicas))
		for i := range all {
			all[i] = i
		}
		pools = []Pool{{Name: "default", Replicas: all}}
	}
	g := &Gateway{cfg: gc, n: len(cfg.Replicas), where: make([]gwSlot, len(cfg.Replicas))}
	for k, p := range pools {
		sub := cfg
		sub.Gateway = nil
		sub.Replicas = make([]sim.Config, len(p.Replicas))
		if len(cfg.Pools) == len(cfg.Replicas) {
			// A cluster file's pool names, for the subset.
			sub.Pools = make([]string, len(p.Replicas))
			for j, i := range p.Replicas {
				sub.Pools[j] = cfg.Pools[i]
			}
		}
		identity := true
		for j, i := range p.Replicas {
			sub.Replicas[j] = cfg.Replicas[i]
			sub.Replicas[j].Priority = sub.Replicas[j].Priority || gc.PriorityQueues
			g.where[i] = gwSlot{pool: k, local: j}
			identity = identity && i == j
		}
		c, err := New(sub)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) && ce.Replica >= 0 {
				// Name the replica as the whole cluster numbers it.
				ce.Replica = p.Replicas[ce.Replica]
			}
			return nil, err
		}
		g.pools = append(g.pools, gwPool{c: c, idx: slices.Clone(p.Replicas), identity: identity})
	}
	return g, nil
}

// check validates the gateway's settings for a cluster of n replicas
// (expert-parallel, autoscaled).
func (gc *GatewayConfig) check(n int, ep, autoscaled bool) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: "Gateway." + field, Replica: -1, Err: fmt.Errorf(format, args...)}
	}
	for _, b := range []struct {
		name string
		b    *Bucket
	}{{"Requests", gc.Requests}, {"Tokens", gc.Tokens}} {
		switch {
		case b.b == nil:
		case !(b.b.Rate > 0) || math.IsInf(b.b.Rate, 0):
			return bad(b.name, "rate %v/s must be > 0", b.b.Rate)
		case b.b.Burst != 0 && !(b.b.Burst >= 1) || math.IsInf(b.b.Burst, 0):
			return bad(b.name, "burst %v must be ≥ 1", b.b.Burst)
		}
	}
	seen := make([]bool, n)
	for _, p := range gc.Pools {
		if len(p.Replicas) == 0 {
			return bad("Pools", "pool %s has no replicas", p.Name)
		}
		for _, i := range p.Replicas {
			switch {
			case i < 0 || i >= n:
				return bad("Pools", "pool %s: replica %d out of range (the cluster has %d)", p.Name, i+1, n)
			case seen[i]:
				return bad("Pools", "pool %s: replica %d is in another pool too", p.Name, i+1)
			}
			seen[i] = true
		}
	}
	if len(gc.Pools) > 0 {
		if i := slices.Index(seen, false); i >= 0 {
			return bad("Pools", "replica %d is in no pool", i+1)
		}
		if ep {
			return bad("Pools", "expert-parallel ranks step together: they cannot be split into pools")
		}
		if autoscaled {
			return bad("Pools", "an autoscaled fleet grows and shrinks as one: it cannot be split into pools")
		}
	}
	pools := max(len(gc.Pools), 1)
	for c, k := range gc.ClassPools {
		if k < 0 || k >= pools {
			return bad("ClassPools", "class %d's pool %d out of range (%d pools)", c, k, pools)
		}
	}
	if d := gc.Degrade; d != nil {
		switch {
		case d.Above < 0:
			return bad("Degrade", "threshold %d must be ≥ 0", d.Above)
		case d.Action == DegradeMaxTokens && d.Value < 1:
			return bad("Degrade", "max_tokens cap %d must be ≥ 1", d.Value)
		case d.Action == DegradeReasoning && d.Value < 0:
			return bad("Degrade", "reasoning budget %d must be ≥ 0", d.Value)
		case d.Action == DegradeSmallModel && (d.Pool < 0 || d.Pool >= pools):
			return bad("Degrade", "small-model pool %d out of range (%d pools)", d.Pool, pools)
		case d.Action != DegradeMaxTokens && d.Action != DegradeReasoning && d.Action != DegradeSmallModel:
			return bad("Degrade", "unknown action %q (want %s, %s or %s)", d.Action, DegradeMaxTokens, DegradeReasoning, DegradeSmallModel)
		}
	}
	for c, s := range gc.Mix {
		if !(s >= 0) || math.IsInf(s, 0) {
			return bad("Mix", "class %d's share %v must be ≥ 0", c, s)
		}
	}
	return nil
}

// bucket is a Bucket's state: level units at last (ns).
type bucket struct {
	rate, burst, level float64
	last               int64
}

func newBucket(b *Bucket) *bucket {
	if b == nil {
		return nil
	}
	burst := b.Burst
	if burst == 0 {
		burst = max(b.Rate, 1)
	}
	return &bucket{rate: b.Rate, burst: burst, level: burst}
}

// refill brings the bucket to now.
func (b *bucket) refill(now int64) {
	if now > b.last {
		b.level = min(b.burst, b.level+b.rate*float64(now-b.last)/1e9)
		b.last = now
	}
}

// short is how long (ns) until the bucket, refilled to now, holds cost;
// 0 when it does now. A hair of float error is forgiven, so a request
// retried exactly after the wait it was told is admitted.
func (b *bucket) short(cost float64) int64 {
	if b.level+1e-12*max(cost, 1) >= cost {
		return 0
	}
	return int64(math.Ceil((cost - b.level) / b.rate * 1e9))
}

// classBuckets are class c's buckets (requests, tokens).
func (g *Gateway) classBuckets(c int) [2]*bucket {
	if !g.cfg.PerClass {
		c = 0
	}
	for len(g.buckets) <= c {
		g.buckets = append(g.buckets, [2]*bucket{newBucket(g.cfg.Requests), newBucket(g.cfg.Tokens)})
	}
	return g.buckets[c]
}

// admit takes r's cost from its class's buckets, or none when one is
// short: then it returns the wait until all hold enough (ns). A cost past
// a bucket's burst can never be admitted: an error.
func (g *Gateway) admit(now int64, c int, r *Request) (int64, error) {
	if g.cfg.Requests == nil && g.cfg.Tokens == nil {
		return 0, nil
	}
	bs := g.classBuckets(c)
	costs := [2]float64{1, float64(r.PromptTokens + r.OutputTokens)}
	var wait int64
	for k, b := range bs {
		if b == nil {
			continue
		}
		if costs[k] > b.burst {
			return 0, fmt.Errorf("%w: %s: %v tokens exceed the gateway's token bucket of %v", sim.ErrInvalidRequest, r.ID, costs[k], b.burst)
		}
		b.refill(now)
		wait = max(wait, b.short(costs[k]))
	}
	if wait > 0 {
		return wait, nil
	}
	for k, b := range bs {
		if b != nil {
			b.level -= costs[k]
		}
	}
	return 0, nil
}

// poolOf is class c's pool.
func (g *Gateway) poolOf(c int) int {
	cp := g.cfg.ClassPools
	switch {
	case len(cp) == 0:
		return 0
	case c < 0:
		return cp[0]
	case c >= len(cp):
		return cp[len(cp)-1]
	}
	return cp[c]
}

// degrade applies the degradation to r bound for pool k when that pool
// is overloaded, and returns the pool it goes to and what it did ("" for
// nothing: not overloaded, or the action would change nothing).
func (g *Gateway) degrade(k int, r *Request) (int, string) {
	d := g.cfg.Degrade
	if d == nil || !g.overloaded(k, d) {
		return k, ""
	}
	switch d.Action {
	case DegradeMaxTokens:
		if r.OutputTokens <= d.Value {
			return k, ""
		}
		r.OutputTokens = d.Value
	case DegradeReasoning:
		hidden := r.ReasoningTokens
		if hidden == 0 {
			hidden = g.pools[k].c.Config(0).ReasoningFor(r.OutputTokens)
		}
		// A request's 0 means "the engine's default", so a budget of 0
		// against an engine that reasons by default keeps one token.
		budget := d.Value
		if budget == 0 && hidden > 0 && r.ReasoningTokens == 0 {
			budget = 1
		}
		if hidden <= budget {
			return k, ""
		}
		r.OutputTokens -= hidden - budget
		r.ReasoningTokens = budget
	case DegradeSmallModel:
		if d.Pool == k {
			return k, ""
		}
		return d.Pool, d.Action
	}
	return k, d.Action
}

// overloaded reports whether pool k is over d's threshold.
func (g *Gateway) overloaded(k int, d *Degrade) bool {
	c := g.pools[k].c
	if !d.PerReplica {
		return c.Snapshot().Waiting > d.Above
	}
	for i := range c.reps {
		if c.reps[i].state == stateActive && c.reps[i].eng.Snapshot().Waiting <= d.Above {
			return false
		}
	}
	return true
}

// Add admits r at now, or refuses it (its EventRejected comes at the next
// Step; Add returns -1 and no error), degrades it if its pool is
// overloaded, and routes it to a replica of its pool, whose index (over
// all pools, from 0) it returns with the engine's error for a request it
// can never serve — or the gateway's, for a request larger than a token
// bucket's burst (wrapping sim.ErrInvalidRequest, a 400).
func (g *Gateway) Add(now int64, r Request) (int, error) {
	g.last = ""
	c := max(r.Priority, 0)
	wait, err := g.admit(now, c, &r)
	if err != nil {
		return -1, err
	}
	if wait > 0 {
		g.limited++
		g.rejected = append(g.rejected, sim.Event{ID: r.ID, Kind: sim.EventRejected, RetryAfterNs: wait,
			Err: fmt.Sprintf("%v: class %d over the gateway's limit; retry in %.3f s", ErrRateLimited, c, float64(wait)/1e9)})
		return -1, nil
	}
	k, how := g.degrade(g.poolOf(c), &r)
	p := &g.pools[k]
	i, err := p.c.Add(now, r)
	if i >= 0 {
		i = p.idx[i]
	}
	if err == nil && how != "" {
		g.last = how
		g.degraded++
	}
	return i, err
}

// LastDegraded says how the last Add degraded its request: DegradeMaxTokens,
// DegradeReasoning, DegradeSmallModel, or "" for not at all.
func (g *Gateway) LastDegraded() string { return g.last }

// RateLimited counts the requests the gateway refused so far.
func (g *Gateway) RateLimited() int64 { return g.limited }

// Degraded counts the requests it degraded so far.
func (g *Gateway) Degraded() int64 { return g.degraded }

// Step advances the pools' one clock as Cluster.Step does: to the next
// moment something happens in any pool, not past until, returning every
// batch of that moment with the replicas numbered over all pools. The
// gateway's refusals come first, at once, at now.
func (g *Gateway) Step(now, until int64) (int64, []Batch) {
	if until <= now {
		until = math.MaxInt64
	}
	g.out = g.out[:0]
	if len(g.rejected) > 0 {
		g.rejOut, g.rejected = g.rejected, g.rejOut[:0]
		g.out = append(g.out, Batch{Replica: g.Len(), Events: g.rejOut})
		return now, g.out
	}
	if len(g.pools) == 1 && g.pools[0].identity {
		return g.pools[0].c.Step(now, until)
	}
	// Every pool with work waiting starts it now. A pool can only end an
	// iteration at now+1 or later, so stepping it to now+1 delivers
	// nothing early; what it delivers then is held when another pool had
	// events at now (its engine's refusals).
	for k := range g.pools {
		p := &g.pools[k]
		if p.held || len(p.c.ready) == 0 {
			continue
		}
		if b, bs := p.c.Step(now, now+1); len(bs) > 0 {
			p.hold(b, bs)
		}
	}
	t, any := int64(math.MaxInt64), false
	for k := range g.pools {
		p := &g.pools[k]
		switch {
		case p.held:
			t, any = min(t, p.heldAt), true
		case len(p.c.ends) > 0:
			t, any = min(t, p.c.reps[p.c.ends[0]].end), true
		}
	}
	if !any {
		return now, g.out
	}
	if t > until {
		return until, g.out
	}
	for k := range g.pools {
		p := &g.pools[k]
		switch {
		case p.held && p.heldAt == t:
			g.out = p.appendTo(g.out, p.heldB)
			p.held = false
		case !p.held && len(p.c.ends) > 0 && p.c.reps[p.c.ends[0]].end == t:
			_, bs := p.c.Step(now, t)
			g.out = p.appendTo(g.out, bs)
		}
	}
	return t, g.out
}

// hold keeps the batches the pool's cluster delivered at b.
func (p *gwPool) hold(b int64, bs []Batch) {
	p.held, p.heldAt, p.heldB = true, b, append(p.heldB[:0], bs...)
}

// appendTo appends bs to out with the replicas renumbered over all pools.
func (p *gwPool) appendTo(out, bs []Batch) []Batch {
	for _, b := range bs {
		b.Replica = p.idx[b.Replica]
		out = append(out, b)
	}
	return out
}

// Abort drops request id wherever it is (an unknown id is ignored).
func (g *Gateway) Abort(now int64, id string) {
	for k := range g.pools {
		g.pools[k].c.Abort(now, id)
	}
	// A refusal not yet delivered goes too.
	g.rejected = slices.DeleteFunc(g.rejected, func(ev sim.Event) bool { return ev.ID == id })
}

// NextEnd is the earliest end of an iteration in flight in any pool, or
// of batches a pool delivered early and holds (math.MaxInt64 for none),
// read without delivering, as Cluster.NextEnd. Refusals waiting to be
// delivered are not ends: the next Step returns them at once.
func (g *Gateway) NextEnd() int64 {
	t := int64(math.MaxInt64)
	for k := range g.pools {
		p := &g.pools[k]
		if p.held {
			t = min(t, p.heldAt)
		} else {
			t = min(t, p.c.NextEnd())
		}
	}
	return t
}

// Busy reports whether a refusal waits to be delivered or any pool has
// work.
func (g *Gateway) Busy() bool {
	if len(g.rejected) > 0 {
		return true
	}
	for k := range g.pools {
		if g.pools[k].held || g.pools[k].c.Busy() {
			return true
		}
	}
	return false
}

// single is the cluster of a gateway of one pool (every replica, in
// order), nil otherwise: its replicas are the gateway's, whatever an
// autoscaler makes of them.
func (g *Gateway) single() *Cluster {
	if len(g.pools) == 1 && g.pools[0].identity {
		return g.pools[0].c
	}
	return nil
}

// Len is the number of replicas over all pools.
func (g *Gateway) Len() int {
	if c := g.single(); c != nil {
		return c.Len()
	}
	return g.n
}

// Config is replica i's engine configuration (global index).
func (g *Gateway) Config(i int) sim.Config {
	if c := g.single(); c != nil {
		return c.Config(i)
	}
	s := g.where[i]
	return g.pools[s.pool].c.Config(s.local)
}

// Describe is replica i's engine description (global index).
func (g *Gateway) Describe(i int) runlog.Engine {
	if c := g.single(); c != nil {
		return c.Describe(i)
	}
	s := g.where[i]
	return g.pools[s.pool].c.Describe(s.local)
}

// Autoscaling is what the autoscaler of a one-pool gateway did by end
// (Cluster.Autoscaling); nil without one.
func (g *Gateway) Autoscaling(end int64) *AutoscaleReport {
	if c := g.single(); c != nil {
		return c.Autoscaling(end)
	}
	return nil
}

// Steps counts the iterations of every replica.
func (g *Gateway) Steps() int64 {
	var n int64
	for k := range g.pools {
		n += g.pools[k].c.Steps()
	}
	return n
}

// Stats is each replica's share of the run, by global index.
func (g *Gateway) Stats() []ReplicaStats {
	if c := g.single(); c != nil {
		return c.Stats()
	}
	out := make([]ReplicaStats, g.n)
	for k := range g.pools {
		p := &g.pools[k]
		for j, st := range p.c.Stats() {
			out[p.idx[j]] = st
		}
	}
	return out
}

// Snapshot is the replicas' gauges and counters summed (KV usage their
// mean), the gateway's refusals counted among the rejections.
func (g *Gateway) Snapshot() sim.Snapshot {
	if c := g.single(); c != nil {
		s := c.Snapshot()
		s.Rejected += g.limited
		return s
	}
	var s sim.Snapshot
	for k := range g.pools {
		p := &g.pools[k]
		r := p.c.Snapshot()
		// A pool's KV usage is its replicas' mean: weigh it by them.
		r.KVUsage *= float64(len(p.idx))
		s.Add(r)
	}
	s.KVUsage /= float64(g.n)
	s.Rejected += g.limited
	return s
}

// String describes the gateway for a run's meta, spelled as goodput sim's
// flags are (replicas from 1): "rate-limit=10/s,burst=5 degrade=max_tokens:8,above=4".
// The zero config is "none".
func (gc GatewayConfig) String() string {
	var parts []string
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	bucket := func(name string, b *Bucket) {
		if b == nil {
			return
		}
		s := name + "=" + num(b.Rate) + "/s"
		if b.Burst != 0 {
			s += ",burst=" + num(b.Burst)
		}
		parts = append(parts, s)
	}
	bucket("rate-limit", gc.Requests)
	bucket("token-rate-limit", gc.Tokens)
	if gc.PerClass {
		parts = append(parts, "per-class")
	}
	if gc.PriorityQueues {
		parts = append(parts, "priority-queues")
	}
	if len(gc.Mix) > 0 {
		ms := make([]string, len(gc.Mix))
		for i, m := range gc.Mix {
			ms[i] = num(m)
		}
		parts = append(parts, "priority-mix="+strings.Join(ms, ","))
	}
	if len(gc.Pools) > 0 {
		ps := make([]string, len(gc.Pools))
		for k, p := range gc.Pools {
			rs := make([]string, len(p.Replicas))
			for j, i := range p.Replicas {
				rs[j] = strconv.Itoa(i + 1)
			}
			ps[k] = p.Name + "=" + strings.Join(rs, "+")
		}
		parts = append(parts, "pools="+strings.Join(ps, ","))
	}
	if len(gc.ClassPools) > 0 {
		cs := make([]string, len(gc.ClassPools))
		for c, k := range gc.ClassPools {
			cs[c] = strconv.Itoa(k)
		}
		parts = append(parts, "class-pools="+strings.Join(cs, ","))
	}
	if d := gc.Degrade; d != nil {
		v := strconv.Itoa(d.Value)
		if d.Action == DegradeSmallModel {
			v = "pool " + strconv.Itoa(d.Pool)
		}
		above := strconv.Itoa(d.Above)
		if d.PerReplica {
			above += "/replica"
		}
		parts = append(parts, "degrade="+d.Action+":"+v+",above="+above)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
