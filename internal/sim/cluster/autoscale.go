package cluster

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// Autoscaling signals, the values of Autoscale.Signal.
const (
	// SignalP95TTFT is the 95th percentile TTFT of the requests whose first
	// token came within the window, seconds (the cluster sees each
	// request's arrival and first token). A request still waiting for its
	// first token does not count yet, so the signal lags a burst by about
	// its queueing delay.
	SignalP95TTFT = "p95-ttft"
	// SignalQueue is the requests waiting (sim.Snapshot.Waiting) per
	// active replica, at the tick.
	SignalQueue = "queue"
	// SignalKV is the mean KV cache usage (0..1) of the active replicas,
	// at the tick.
	SignalKV = "kv"
	// SignalUtil is GPU utilisation as a dashboard shows it: the share of
	// the window the active replicas had an iteration in flight (0..1). A
	// continuously batching engine is "busy" whenever it holds one
	// request, so this saturates long before latency suffers.
	SignalUtil = "util"
)

// Signals lists the autoscaling signals.
var Signals = []string{SignalP95TTFT, SignalQueue, SignalKV, SignalUtil}

// Autoscale defaults, for the zero values of their Autoscale fields.
const (
	DefaultAutoscaleInterval = 10 * time.Second
	DefaultAutoscaleWindow   = 60 * time.Second
)

// Autoscale is a controller that adds and removes replicas on a signal,
// evaluated every Interval of virtual time: above Threshold it adds
// UpStep replicas (each routable only ProvisionDelay after the decision,
// the model's load time), below DownThreshold it removes DownStep (a
// provisioning one is cancelled first, latest first, else the
// highest-numbered active replica drains: it takes no new requests and
// goes when its last one ends), always within [Min, Max] replicas
// (active and provisioning) and never within Cooldown of its previous
// decision. It scales down only once a whole Window has been observed.
// Config.Replicas are the replicas at time 0; a replica added later is a fresh engine of Replicas[0]'s configuration.
type Autoscale struct {
	// Signal is one of Signals.
	Signal string
	// Threshold is the level above which the controller scales up: for
	// p95-ttft in seconds, for queue in waiting requests per active
	// replica, for kv and util a fraction in (0, 1].
	Threshold float64
	// DownThreshold is the level below which it scales down, less than
	// Threshold; 0 means half the Threshold.
	DownThreshold float64
	// Min and Max bound the replicas (active and provisioning); Min 0
	// means 1. Config.Replicas must lie within them.
	Min, Max int
	// UpStep and DownStep are the replicas one decision adds or removes; 0
	// means 1.
	UpStep, DownStep int
	// Interval is how often the controller decides; 0 means
	// DefaultAutoscaleInterval. The first decision is at Interval.
	Interval time.Duration
	// Window is how far back p95-ttft and util look; 0 means
	// DefaultAutoscaleWindow. It is rounded up to whole Intervals.
	Window time.Duration
	// Cooldown is how long after a decision to scale the next may come
	// (0: none).
	Cooldown time.Duration
	// ProvisionDelay is how long a new replica takes before it can serve
	// (the model's load time); it is paid for (GPU-hours) all the while.
	ProvisionDelay time.Duration
}

// resolved returns a with its defaults filled in.
func (a Autoscale) resolved() Autoscale {
	if a.Min == 0 {
		a.Min = 1
	}
	if a.UpStep == 0 {
		a.UpStep = 1
	}
	if a.DownStep == 0 {
		a.DownStep = 1
	}
	if a.Interval == 0 {
		a.Interval = DefaultAutoscaleInterval
	}
	if a.Window == 0 {
		a.Window = DefaultAutoscaleWindow
	}
	if a.Window < a.Interval {
		a.Window = a.Interval
	}
	if a.DownThreshold == 0 {
		a.DownThreshold = a.Threshold / 2
	}
	return a
}

// check validates a for a cluster starting with initial replicas.
func (a Autoscale) check(initial int, ep bool) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: "Autoscale." + field, Replica: -1, Err: fmt.Errorf(format, args...)}
	}
	r := a.resolved()
	switch {
	case !slices.Contains(Signals, a.Signal):
		return bad("Signal", "unknown autoscaling signal %q (want %s)", a.Signal, strings.Join(Signals, ", "))
	case !(a.Threshold > 0) || math.IsInf(a.Threshold, 0):
		return bad("Threshold", "threshold %v must be > 0", a.Threshold)
	case (a.Signal == SignalKV || a.Signal == SignalUtil) && a.Threshold > 1:
		return bad("Threshold", "a %s threshold is a fraction: %v must be in (0, 1]", a.Signal, a.Threshold)
	case a.DownThreshold < 0 || math.IsNaN(a.DownThreshold) || r.DownThreshold >= r.Threshold:
		return bad("DownThreshold", "down threshold %v must be ≥ 0 and below the threshold %v", a.DownThreshold, a.Threshold)
	case a.Min < 0:
		return bad("Min", "minimum %d replicas: want ≥ 1", a.Min)
	case a.Max < r.Min:
		return bad("Max", "maximum %d replicas is below the minimum %d", a.Max, r.Min)
	case a.Max > runlog.MaxReplica:
		return bad("Max", "maximum %d replicas is too many (at most %d)", a.Max, runlog.MaxReplica)
	case initial < r.Min:
		return bad("Min", "the cluster starts with %d replicas, below the minimum %d", initial, r.Min)
	case initial > a.Max:
		return bad("Max", "the cluster starts with %d replicas, above the maximum %d", initial, a.Max)
	case a.UpStep < 0:
		return bad("UpStep", "scale-up step %d: want ≥ 1", a.UpStep)
	case a.DownStep < 0:
		return bad("DownStep", "scale-down step %d: want ≥ 1", a.DownStep)
	case a.Interval < 0:
		return bad("Interval", "interval %v must be > 0", a.Interval)
	case a.Window < 0:
		return bad("Window", "window %v must be > 0", a.Window)
	case a.Cooldown < 0:
		return bad("Cooldown", "cooldown %v must be ≥ 0", a.Cooldown)
	case a.ProvisionDelay < 0:
		return bad("ProvisionDelay", "provisioning delay %v must be ≥ 0", a.ProvisionDelay)
	case ep:
		return bad("ExpertParallel", "autoscaling applies to independent replicas, not expert-parallel ranks in lockstep")
	}
	return nil
}

// String writes the rule, "p95-ttft > 2s" or "util > 0.7".
func (a Autoscale) String() string {
	return a.Signal + " > " + formatLevel(a.Signal, a.Threshold)
}

// formatLevel writes a signal's level: p95-ttft as a duration, the rest
// as numbers.
func formatLevel(signal string, v float64) string {
	if signal == SignalP95TTFT {
		return time.Duration(math.Round(v * 1e9)).String()
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// ParseAutoscaleRule reads "SIGNAL:THRESHOLD[,DOWN]", the signal (any
// case) and the levels above which to scale up and below which to scale
// down: p95-ttft as durations ("p95-ttft:2s,500ms"), queue as waiting
// requests per replica ("queue:8"), kv and util as fractions
// ("util:0.7,0.3"). It fills Signal, Threshold and DownThreshold of a
// zero Autoscale; a bad value is a *ConfigError naming the field.
func ParseAutoscaleRule(s string) (Autoscale, error) {
	bad := func(field, format string, args ...any) (Autoscale, error) {
		return Autoscale{}, &ConfigError{Field: "Autoscale." + field, Replica: -1, Err: fmt.Errorf(format, args...)}
	}
	name, levels, ok := strings.Cut(s, ":")
	a := Autoscale{Signal: strings.ToLower(name)}
	if !slices.Contains(Signals, a.Signal) {
		return bad("Signal", "unknown autoscaling signal %q (want %s)", name, strings.Join(Signals, ", "))
	}
	if !ok || levels == "" {
		return bad("Threshold", "%s needs a threshold: %s:LEVEL[,DOWN]", a.Signal, a.Signal)
	}
	up, down, hasDown := strings.Cut(levels, ",")
	var err error
	if a.Threshold, err = parseLevel(a.Signal, up); err != nil {
		return bad("Threshold", "threshold %q: %v", up, err)
	}
	if hasDown {
		if a.DownThreshold, err = parseLevel(a.Signal, down); err != nil {
			return bad("DownThreshold", "down threshold %q: %v", down, err)
		}
		if a.DownThreshold == 0 {
			// 0 would read back as the default half; nothing is below 0.
			return bad("DownThreshold", "down threshold %q: want > 0 (leave it out for half the threshold)", down)
		}
	}
	if err := a.checkLevels(); err != nil {
		return Autoscale{}, err
	}
	return a, nil
}

// checkLevels is check's part for the rule alone.
func (a Autoscale) checkLevels() error {
	err := Autoscale{Signal: a.Signal, Threshold: a.Threshold, DownThreshold: a.DownThreshold, Max: 1}.check(1, false)
	return err
}

// parseLevel reads one level of signal: a duration (seconds) for
// p95-ttft, else a number.
func parseLevel(signal, s string) (float64, error) {
	if signal == SignalP95TTFT {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("want a duration such as 2s or 500ms")
		}
		return d.Seconds(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("want a number")
	}
	return v, nil
}

// RuleString writes the rule as ParseAutoscaleRule reads it.
func (a Autoscale) RuleString() string {
	s := a.Signal + ":" + formatLevel(a.Signal, a.Threshold)
	if a.DownThreshold != 0 {
		s += "," + formatLevel(a.Signal, a.DownThreshold)
	}
	return s
}

// ReplicaCount is the fleet's size from At (ns) until the next count.
type ReplicaCount struct {
	At                             int64
	Active, Provisioning, Draining int
}

// ScaleDecision is one decision of the controller: at At (ns) the signal
// read Value and the target (active and provisioning replicas) went from
// From to To.
type ScaleDecision struct {
	At       int64
	Value    float64
	From, To int
}

// AutoscaleReport is what the autoscaler did over a run.
type AutoscaleReport struct {
	// Autoscale is the configuration, its defaults filled in.
	Autoscale Autoscale
	// Timeline is the fleet's size at time 0 and at each change.
	Timeline []ReplicaCount
	// Decisions are the controller's scalings, in time order.
	Decisions []ScaleDecision
	// Start, Peak and Final are the active replicas at time 0, the most
	// at once, and at the end.
	Start, Peak, Final int
	// GPUHours is Σ over replicas of their lifetime, from the decision
	// that added one (time 0 for the first) to its removal or the end,
	// times its GPUs (tensor-parallel degree): a provisioning or draining
	// replica is paid for.
	GPUHours float64
	// End is the time (ns) the lifetimes run to.
	End int64
}

// Replica states; the zero value is active, so a cluster without an
// autoscaler has only active replicas.
const (
	stateActive uint8 = iota
	stateProvisioning
	stateDraining
	stateGone
)

// autoscaler is the controller's state in the cluster.
type autoscaler struct {
	cfg Autoscale
	// tmpl is the configuration of a replica added later.
	tmpl sim.Config
	// next is the next tick (ns); ticks counts those done; k is the
	// window in ticks.
	next  int64
	ticks int
	k     int
	// last is the time of the last decision; decided whether there was
	// one.
	last    int64
	decided bool
	// arrived is each request's arrival until its first token (or end);
	// ttfts the (first token time, TTFT) of the window, in time order.
	arrived map[string]int64
	ttfts   []ttftSample
	scratch []float64
	// gpuNs is the GPU-ns of the replicas already removed; seen the
	// latest time the cluster was driven to.
	gpuNs int64
	seen  int64

	timeline  []ReplicaCount
	decisions []ScaleDecision
	peak      int
	// read, when set, replaces the signal (tests script it).
	read func(t int64) float64
}

type ttftSample struct{ at, ttft int64 }

// newAutoscaler starts the controller for c's initial replicas.
func newAutoscaler(a Autoscale, tmpl sim.Config, initial int) *autoscaler {
	r := a.resolved()
	k := int((r.Window + r.Interval - 1) / r.Interval)
	s := &autoscaler{cfg: r, tmpl: tmpl, next: int64(r.Interval), k: k, arrived: map[string]int64{}, peak: initial}
	s.timeline = []ReplicaCount{{At: 0, Active: initial}}
	return s
}

// advance runs the controller up to now: every replica whose
// provisioning ends by now becomes active, and every tick due by now
// decides, in time order (a replica ready at a tick serves from it).
func (c *Cluster) advance(now int64) {
	a := c.as
	a.seen = max(a.seen, now)
	for {
		t := a.next
		for i := range c.reps {
			if r := &c.reps[i]; r.state == stateProvisioning && r.readyAt < t {
				t = r.readyAt
			}
		}
		if t > now {
			return
		}
		c.activate(t)
		if a.next == t {
			c.tick(t)
			a.next += int64(a.cfg.Interval)
		}
	}
}

// activate makes every replica whose provisioning ends by t active.
func (c *Cluster) activate(t int64) {
	changed := false
	for i := range c.reps {
		if r := &c.reps[i]; r.state == stateProvisioning && r.readyAt <= t {
			r.state = stateActive
			r.activeAt, r.busyAtActive, r.ringFrom = r.readyAt, r.busyNs, c.as.ticks
			changed = true
		}
	}
	if changed {
		c.count(t)
	}
}

// count appends the fleet's size at t to the timeline, if it changed.
func (c *Cluster) count(t int64) {
	n := ReplicaCount{At: t}
	for i := range c.reps {
		switch c.reps[i].state {
		case stateActive:
			n.Active++
		case stateProvisioning:
			n.Provisioning++
		case stateDraining:
			n.Draining++
		}
	}
	a := c.as
	a.peak = max(a.peak, n.Active)
	last := &a.timeline[len(a.timeline)-1]
	switch {
	case last.Active == n.Active && last.Provisioning == n.Provisioning && last.Draining == n.Draining:
	case last.At == t:
		*last = n
	default:
		a.timeline = append(a.timeline, n)
	}
}

// cumBusy is replica r's busy time (an iteration in flight) up to t.
func (r *replica) cumBusy(t int64) int64 {
	if r.stepping && t > r.iterStart {
		return r.busyNs + t - r.iterStart
	}
	return r.busyNs
}

// tick is the controller's decision at t.
func (c *Cluster) tick(t int64) {
	a := c.as
	v := c.signal(t)
	if a.read != nil {
		v = a.read(t)
	}
	a.ticks++
	target, active := 0, 0
	for i := range c.reps {
		switch c.reps[i].state {
		case stateActive:
			target++
			active++
		case stateProvisioning:
			target++
		}
	}
	if a.decided && t < a.last+int64(a.cfg.Cooldown) {
		return
	}
	switch {
	case v > a.cfg.Threshold && target < a.cfg.Max:
		to := min(target+a.cfg.UpStep, a.cfg.Max)
		for range to - target {
			c.provision(t)
		}
		c.decide(t, v, target, to)
	case v < a.cfg.DownThreshold && target > a.cfg.Min && a.ticks >= a.k:
		// Only once the window has filled: a signal read over the first
		// few seconds of load says nothing of the load, and a scale-down
		// on it at a steady rate walks the fleet into overload.
		to := max(target-a.cfg.DownStep, a.cfg.Min)
		for range target - to {
			c.shrink(t)
		}
		c.decide(t, v, target, to)
	}
}

func (c *Cluster) decide(t int64, v float64, from, to int) {
	a := c.as
	a.decisions = append(a.decisions, ScaleDecision{At: t, Value: v, From: from, To: to})
	a.last, a.decided = t, true
	c.count(t)
}

// signal reads the controller's signal at t (and keeps the window's
// figures: every replica's busy time at this tick, the TTFTs within it).
func (c *Cluster) signal(t int64) float64 {
	a := c.as
	w := int64(a.k) * int64(a.cfg.Interval)
	// The util window's figures, kept at every tick whatever the signal.
	var busy, span int64
	slot := a.ticks % a.k
	for i := range c.reps {
		r := &c.reps[i]
		if r.state == stateGone {
			continue
		}
		if len(r.ring) != a.k {
			r.ring = make([]int64, a.k)
		}
		cur := r.cumBusy(t)
		if r.state == stateActive {
			old, from := r.busyAtActive, r.activeAt
			if a.ticks-a.k >= r.ringFrom {
				old, from = r.ring[slot], t-w
			}
			busy += cur - old
			span += t - from
		}
		r.ring[slot] = cur
	}
	// TTFTs of first tokens in (t-w, t].
	drop := 0
	for drop < len(a.ttfts) && a.ttfts[drop].at <= t-w {
		drop++
	}
	a.ttfts = append(a.ttfts[:0], a.ttfts[drop:]...)
	switch a.cfg.Signal {
	case SignalUtil:
		if span == 0 {
			return 0
		}
		return float64(busy) / float64(span)
	case SignalP95TTFT:
		a.scratch = a.scratch[:0]
		for _, s := range a.ttfts {
			a.scratch = append(a.scratch, float64(s.ttft)/1e9)
		}
		return percentile(a.scratch, 95)
	}
	var sum float64
	n := 0
	for i := range c.reps {
		r := &c.reps[i]
		if r.state != stateActive {
			continue
		}
		n++
		s := r.eng.Snapshot()
		if a.cfg.Signal == SignalQueue {
			sum += float64(s.Waiting)
		} else {
			sum += s.KVUsage
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// percentile is the p-th percentile of vs by linear interpolation between
// the closest ranks (numpy's default), 0 for none; it sorts vs.
func percentile(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	pos := p / 100 * float64(len(vs)-1)
	lo := int(pos)
	if lo+1 >= len(vs) {
		return vs[len(vs)-1]
	}
	return vs[lo] + (pos-float64(lo))*(vs[lo+1]-vs[lo])
}

// provision adds a replica at t: the lowest free slot, else a new one, a
// fresh engine routable from t + ProvisionDelay.
func (c *Cluster) provision(t int64) {
	a := c.as
	i := slices.IndexFunc(c.reps, func(r replica) bool { return r.state == stateGone })
	if i < 0 {
		c.reps = append(c.reps, replica{})
		i = len(c.reps) - 1
	}
	e, err := sim.New(a.tmpl)
	if err != nil {
		// Cannot happen: New built replica 0 of the same configuration.
		panic(fmt.Sprintf("cluster: autoscaled replica: %v", err))
	}
	r := &c.reps[i]
	if r.eng != nil {
		r.retired.AddCounters(r.eng.Snapshot())
	}
	r.eng = e
	r.busyNs, r.ring = 0, nil
	if c.policy == prefixAware {
		capTokens := c.prefixTokens
		if capTokens == 0 {
			capTokens = max(kvTokens(e), e.Config().BlockSize)
		}
		r.prefix = newPrefixIndex(capTokens)
	}
	r.born = t
	r.state, r.readyAt = stateProvisioning, t+int64(a.cfg.ProvisionDelay)
	if a.cfg.ProvisionDelay == 0 {
		r.state = stateActive
		r.activeAt, r.busyAtActive, r.ringFrom = t, 0, a.ticks
	}
}

// shrink removes one replica at t: the provisioning one due last (the
// highest-numbered of those), else drains the highest-numbered active
// one, which goes at once if it is idle.
func (c *Cluster) shrink(t int64) {
	best := -1
	for i := range c.reps {
		if r := &c.reps[i]; r.state == stateProvisioning && (best < 0 || r.readyAt >= c.reps[best].readyAt) {
			best = i
		}
	}
	if best >= 0 {
		c.remove(best, t)
		return
	}
	for i := len(c.reps) - 1; i >= 0; i-- {
		if c.reps[i].state == stateActive {
			c.reps[i].state = stateDraining
			c.retire(t)
			return
		}
	}
}

// retire removes, at t, every draining replica with nothing left to do.
func (c *Cluster) retire(t int64) {
	for i := range c.reps {
		if r := &c.reps[i]; r.state == stateDraining && r.outstanding == 0 && !r.stepping && !r.eng.Busy() {
			c.remove(i, t)
		}
	}
}

// remove frees replica i's slot at t, its lifetime paid for.
func (c *Cluster) remove(i int, t int64) {
	r := &c.reps[i]
	c.as.gpuNs += (t - r.born) * int64(r.eng.Deployment().TP)
	r.state = stateGone
	c.count(t)
}

// observe notes, at t, the first tokens and ends of the events c.out
// holds, and removes drained replicas.
func (c *Cluster) observe(t int64, out []Batch) {
	a := c.as
	a.seen = max(a.seen, t)
	for _, b := range out {
		for k := range b.Events {
			ev := &b.Events[k]
			switch ev.Kind {
			case sim.EventTokens:
				if at, ok := a.arrived[ev.ID]; ok {
					a.ttfts = append(a.ttfts, ttftSample{at: t, ttft: t - at})
					delete(a.arrived, ev.ID)
				}
			case sim.EventFinished, sim.EventRejected:
				delete(a.arrived, ev.ID)
			}
		}
	}
	c.retire(t)
}

// Autoscaling reports what the autoscaler did, its lifetimes running to
// end (ns; the latest time the cluster was driven to, if later); nil
// without one.
func (c *Cluster) Autoscaling(end int64) *AutoscaleReport {
	a := c.as
	if a == nil {
		return nil
	}
	end = max(end, a.seen)
	gpu := a.gpuNs
	final := 0
	for i := range c.reps {
		r := &c.reps[i]
		if r.state == stateGone {
			continue
		}
		if r.state == stateActive {
			final++
		}
		gpu += (end - r.born) * int64(r.eng.Deployment().TP)
	}
	return &AutoscaleReport{
		Autoscale: a.cfg, Timeline: slices.Clone(a.timeline), Decisions: slices.Clone(a.decisions),
		Start: a.timeline[0].Active, Peak: a.peak, Final: final, End: end,
		GPUHours: float64(gpu) / float64(time.Hour),
	}
}
