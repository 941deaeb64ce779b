package simserve

import (
	"cmp"
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// split is a fleet of a prefill pool and a decode pool (cluster.Disagg):
// replicas 0..Prefill()−1 prefill.
type split interface {
	Prefill() int
	Role(i int) string
}

// ReplicaHeader is the response header naming the replica that served a
// request by its number, "1" to "N", as its engine label on /metrics and
// the client's records and reports number it; sent only by a server
// driving a fleet.
const ReplicaHeader = "X-Goodput-Replica"

// SessionHeader is the request header naming the session (conversation,
// agent loop) a request is a turn of, for a fleet's session-affinity
// router; requests without one are routed as if of no session.
const SessionHeader = "X-Session-Id"

// sessionKey is the request context's key for the SessionHeader's value.
type sessionKey struct{}

// withSession passes the SessionHeader to submit in the request's context.
func withSession(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get(SessionHeader); v != "" {
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, v))
		}
		h.ServeHTTP(w, r)
	})
}

// fleetState is the Run goroutine's view of a fleet.
type fleetState struct {
	// outstanding counts each replica's requests in flight, so the loop
	// knows whether an arrival could start an idle replica.
	outstanding []int
	// lockstep: the replicas step together (expert parallelism), so an
	// arrival waits for the step in flight whatever the loop does.
	lockstep bool
	// prefill is a split's prefill pool size (replicas 0..prefill−1); 0
	// for a fleet of whole replicas.
	prefill int
	// roles are a split's replicas' pools (cluster.RolePrefill, RoleDecode).
	roles []string
	// tick is an autoscaler's interval (ns; 0: none): the loop wakes at
	// every multiple of it, busy or idle, so the controller decides on
	// time; scaler reads its timeline, logged entries of it.
	tick   int64
	scaler autoscaled
	logged int
}

// autoscaled is a fleet with an autoscaler's report (cluster.Cluster and
// a one-pool cluster.Gateway).
type autoscaled interface {
	Autoscaling(end int64) *cluster.AutoscaleReport
}

// nextTick is the autoscaler's first tick after now (MaxInt64: none).
func (s *Server) nextTick(now int64) int64 {
	if s.fl.tick == 0 {
		return math.MaxInt64
	}
	return (now/s.fl.tick + 1) * s.fl.tick
}

// logScaling logs, one Info line each, the changes of the fleet's size
// the autoscaler made since the last call, with the decision behind each.
func (s *Server) logScaling(now int64) {
	if s.fl.scaler == nil {
		return
	}
	rep := s.fl.scaler.Autoscaling(now)
	if rep == nil {
		return
	}
	for ; s.fl.logged < len(rep.Timeline); s.fl.logged++ {
		c := rep.Timeline[s.fl.logged]
		args := []any{"at", time.Duration(c.At), "active", c.Active, "provisioning", c.Provisioning, "draining", c.Draining}
		for _, d := range rep.Decisions {
			if d.At == c.At {
				args = append(args, "signal", d.Value, "target_from", d.From, "target_to", d.To)
			}
		}
		s.log.Info("simserve: replicas", args...)
	}
}

// Roles names each replica's pool on a prefill/decode split (replica i's
// at i), nil for a fleet of whole replicas or one engine.
func (s *Server) Roles() []string { return s.fl.roles }

// moved follows a request of a split from replica to replica as its
// events come (takeEvents): a prefill replica's token is its first, after
// which the prefill replica is done with it (in transit: counted on none),
// and a decode replica's event counts it there until it finishes.
func (s *Server) moved(st *stream, replica int) {
	if s.fl.prefill == 0 || replica == st.on || replica >= len(s.fl.outstanding) {
		return
	}
	if st.on >= 0 {
		s.fl.outstanding[st.on]--
		st.on = -1
	}
	if replica >= s.fl.prefill {
		s.fl.outstanding[replica]++
		st.on = replica
	}
}

// NewFleet builds the cluster from cfg and a server around it, serving
// its replicas behind one port: requests are routed by cfg.Router,
// /metrics has every replica's vLLM series labelled engine="1".."N", and each
// answer names its replica in the ReplicaHeader. The replicas' first
// configuration names the model and its limits. With cfg.Gateway set the
// fleet is behind that gateway (cluster.NewGateway): a request it rate
// limits is answered 429 with the Retry-After its bucket computes, a
// request's class is its body's priority field. With cfg.Disagg set the
// fleet is the prefill/decode split (cluster.NewDisagg): a request's first
// token is its prefill replica's, the rest its decode replica's, and the
// ReplicaHeader names the prefill replica. Options.Slowdown is not
// supported with a fleet.
func NewFleet(cfg cluster.Config, opt Options) (*Server, error) {
	if err := checkOptions(opt); err != nil {
		return nil, err
	}
	if opt.Slowdown != 0 {
		return nil, errSlowdownFleet
	}
	var f cluster.Fleet
	var err error
	switch {
	case cfg.Gateway != nil:
		// It refuses a split it cannot front.
		f, err = cluster.NewGateway(cfg)
	case cfg.Disagg != nil:
		f, err = cluster.NewDisagg(cfg)
	default:
		f, err = cluster.New(cfg)
	}
	if err != nil {
		return nil, err
	}
	s, err := serveFleet(f, cfg.Replicas[0], cfg.ExpertParallel, cfg.Autoscale, opt)
	if err != nil {
		return nil, err
	}
	if cfg.Autoscale != nil {
		s.log.Info("simserve: autoscaler", "rule", cfg.Autoscale.RuleString(), "min", max(cfg.Autoscale.Min, 1), "max", cfg.Autoscale.Max,
			"interval", cmp.Or(cfg.Autoscale.Interval, cluster.DefaultAutoscaleInterval), "replicas", len(cfg.Replicas))
	}
	return s, nil
}

// errSlowdownFleet is why a fleet refuses a slowdown: its replicas keep
// their own schedules, which the server cannot stretch.
var errSlowdownFleet = errors.New("simserve: a slowdown is not supported with several replicas")

// serveFleet builds the server around fleet f; cfg is replica 0's
// configuration as given, as (nil: none) its autoscaler, whose Max sizes
// the per-replica state from the start (a replica it adds later is a
// copy of replica 0).
func serveFleet(f cluster.Fleet, cfg sim.Config, lockstep bool, as *cluster.Autoscale, opt Options) (*Server, error) {
	n := f.Len()
	if as != nil {
		n = max(n, as.Max)
	}
	ds := make([]runlog.Engine, n)
	for i := range ds {
		if i < f.Len() {
			ds[i] = f.Describe(i)
		} else {
			ds[i] = ds[0]
		}
	}
	s, err := newServer(opt, cfg, f.Config(0), ds, true)
	if err != nil {
		return nil, err
	}
	// The banner and reports see the fleet's size beside the engine's.
	d := ds[0]
	d.Replicas = f.Len()
	s.describe = d
	s.fleet = f
	s.fl = fleetState{outstanding: make([]int, n), lockstep: lockstep}
	if as != nil {
		s.fl.tick = int64(cmp.Or(as.Interval, cluster.DefaultAutoscaleInterval))
		s.fl.scaler, _ = f.(autoscaled)
	}
	if sp, ok := f.(split); ok {
		s.fl.prefill = sp.Prefill()
		s.fl.roles = make([]string, f.Len())
		for i := range s.fl.roles {
			s.fl.roles[i] = sp.Role(i)
		}
	}
	return s, nil
}

// Replicas is the number of engines the server drives (1 without a
// fleet; an autoscaled fleet's maximum, each with its /metrics series
// from the start).
func (s *Server) Replicas() int { return len(s.ms) }

// runFleet is Run's loop for a fleet. It keeps the one-engine loop's
// schedule (each moment starts at the previous one, re-anchored to the
// wall clock when far behind) but wakes at arrivals: while a replica is
// idle it steps the fleet no further than now (starting what is ready)
// and sleeps until the next iteration's end (NextEnd) or an arrival,
// whichever comes first, so that a request arriving while another
// replica is mid-iteration starts on time on the idle one.
func (s *Server) runFleet(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	busyBefore := false
	for {
		s.logScaling(s.lastEnd)
		if !s.fleet.Busy() {
			busyBefore = false
			if s.fl.tick > 0 {
				if !s.idleScaled(ctx, timer) {
					return nil
				}
				continue
			}
			if !s.idle(ctx) {
				return nil
			}
			continue
		}
		now := s.nextStart(busyBefore, "fleet")
		busyBefore = true
		until := int64(math.MaxInt64)
		if !s.fl.lockstep && s.idleReplica() {
			until = now + 1 // the next ns: only what ends now is delivered
		}
		at, batches := s.fleet.Step(now, until)
		s.evbuf = s.evbuf[:0]
		for _, b := range batches {
			s.takeEvents(b.Replica, b.Events)
		}
		s.admitAdded()
		// With no batch the fleet consumed nothing: an arrival during the
		// wait may start an idle replica at once, so it ends the wait.
		lookahead := len(batches) == 0
		switch {
		case lookahead && at == now:
			at = now + int64(idlePoll) // busy but nothing runnable: poll
		case lookahead:
			// Nothing ends before the next iteration in flight does (or
			// the autoscaler's next tick).
			at = min(s.fleet.NextEnd(), s.nextTick(now))
		}
		if wait := at - s.clock(); wait > 0 {
			timer.Reset(time.Duration(wait))
		wait:
			for {
				select {
				case <-ctx.Done():
					return nil
				case c := <-s.cmds:
					s.apply(c)
					if lookahead && !c.abort {
						timer.Stop()
						// Not past the moment Step looked ahead to.
						at = min(max(s.clock(), now), at)
						break wait
					}
				case <-timer.C:
					break wait
				}
			}
		}
		s.lastEnd = at
		if len(batches) > 0 {
			s.deliverFleet(at, batches)
		}
		s.drain()
	}
}

// idleReplica reports whether some replica has nothing in flight.
func (s *Server) idleReplica() bool {
	for _, n := range s.fl.outstanding[:s.fleet.Len()] {
		if n == 0 {
			return true
		}
	}
	return false
}

// idleScaled is idle for an autoscaled fleet: it also wakes at the
// autoscaler's next tick and steps the idle fleet there, which runs the
// controller's decisions due by then (a scale-down of an idle fleet
// happens on time); false when ctx ended first.
func (s *Server) idleScaled(ctx context.Context, timer *time.Timer) bool {
	now := s.clock()
	timer.Reset(time.Duration(s.nextTick(now) - now))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case c := <-s.cmds:
		s.apply(c)
		s.drain()
	case <-timer.C:
		t := max(s.clock(), s.lastAdd, s.lastEnd)
		s.stepStart = t
		s.fleet.Step(t, t+1)
		s.lastEnd = t
	}
	return true
}

// deliverFleet hands the events of the iterations that ended at end to
// their requests and exports the state of the replicas that ran them.
func (s *Server) deliverFleet(end int64, batches []cluster.Batch) {
	s.deliverEvents(end)
	// Only the replicas whose iteration ended: another's engine already
	// counts the tokens of an iteration still running on the wall clock.
	stats := s.fleet.Stats()
	for _, b := range batches {
		// A gateway's refusals come in a batch of no replica (Len()).
		if b.Replica < len(s.ms) {
			s.ms[b.Replica].observeSnapshot(stats[b.Replica].Engine)
		}
	}
	s.wakeTouched()
}

// applyFleet routes one submission to a replica, or aborts one.
func (s *Server) applyFleet(c command) {
	st := c.st
	if c.abort {
		if s.live[st.id] == st {
			delete(s.live, st.id)
			s.fleet.Abort(max(s.clock(), s.lastAdd), st.id)
			if st.on >= 0 {
				s.fl.outstanding[st.on]--
				// The replica may have no iteration left to export its
				// state at: its gauges show the freed request now.
				s.ms[st.on].observeGauges(s.fleet.Stats()[st.on].Engine)
			}
			// Counted where it was, or on its prefill replica while its
			// KV was in transit; a gateway's refusal not yet answered was
			// on none.
			if st.routed {
				m := st.firstRep
				if st.on >= 0 {
					m = st.on
				}
				s.ms[m].success["abort"].Inc()
			}
			if s.onAbort != nil {
				s.onAbort(st.id)
			}
		}
		return
	}
	at := max(st.arrival, s.stepStart, s.lastAdd)
	i, err := s.fleet.Add(at, cluster.Request{Request: c.req, Session: c.session})
	if err != nil {
		st.fail(400, err.Error())
		return
	}
	// A gateway's refusal (-1) comes as an EventRejected at the next Step;
	// no replica counts it meanwhile.
	st.on = i
	if i >= 0 {
		st.routed, st.firstRep = true, i
		st.route(i)
		s.fl.outstanding[i]++
	}
	s.lastAdd = at
	s.live[st.id] = st
	s.added = append(s.added, st)
}

// finished counts a request off the replica it was on once it finished
// there.
func (s *Server) finished(st *stream) {
	if s.fleet != nil && st.on >= 0 {
		s.fl.outstanding[st.on]--
		st.on = -1
	}
}
