package simrun

import (
	"context"
	"math"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/workload"
)

// engine is what a run drives: one sim.Engine, or a cluster of them behind
// a router. The run's loop is the same; only a cluster needs to know when
// the next send is due, so that an idle replica starts on time.
type engine interface {
	// add submits q at now (session names its session, "" none) and
	// returns the replica it went to, from 1 (0 for one engine).
	add(now int64, q sim.Request, session string) (int, error)
	// step runs to the next moment something happens, from now and, for a
	// cluster, not past the next send fd has due; the events then come in
	// one batch per replica (none: nothing happened).
	step(now int64, fd feed) (int64, []cluster.Batch)
	abort(now int64, id string)
	busy() bool
	snapshot() sim.Snapshot
	// config is the engine's configuration (replica 1's in a cluster),
	// for what shapes requests: tool calls, reasoning, the hashes' blocks.
	config() sim.Config
	// fill adds the engine's own figures to res.
	fill(res *Result)
}

// single is one engine: its events come as replica 0's batch.
type single struct {
	e     *sim.Engine
	batch [1]cluster.Batch
}

var _ engine = (*single)(nil)

func (s *single) add(now int64, q sim.Request, _ string) (int, error) { return 0, s.e.Add(now, q) }
func (s *single) abort(now int64, id string)                          { s.e.Abort(now, id) }
func (s *single) busy() bool                                          { return s.e.Busy() }
func (s *single) snapshot() sim.Snapshot                              { return s.e.Snapshot() }
func (s *single) config() sim.Config                                  { return s.e.Config() }
func (s *single) fill(res *Result)                                    { res.Engine = s.e.Snapshot() }

func (s *single) step(now int64, _ feed) (int64, []cluster.Batch) {
	end, evs := s.e.Step(now)
	if len(evs) == 0 {
		return end, nil
	}
	s.batch[0].Events = evs
	return end, s.batch[:]
}

// replicas is a fleet (the records know each request's replica from its
// send).
type replicas struct {
	c cluster.Fleet
}

var _ engine = (*replicas)(nil)

func (r *replicas) add(now int64, q sim.Request, session string) (int, error) {
	i, err := r.c.Add(now, cluster.Request{Request: q, Session: session})
	return i + 1, err
}

func (r *replicas) step(now int64, fd feed) (int64, []cluster.Batch) {
	until := int64(math.MaxInt64)
	if t, ok := fd.next(); ok && t > now {
		until = t
	}
	return r.c.Step(now, until)
}

func (r *replicas) abort(now int64, id string) { r.c.Abort(now, id) }
func (r *replicas) busy() bool                 { return r.c.Busy() }
func (r *replicas) snapshot() sim.Snapshot     { return r.c.Snapshot() }
func (r *replicas) config() sim.Config         { return r.c.Config(0) }

func (r *replicas) fill(res *Result) {
	res.Engine = r.c.Snapshot()
	res.Replicas = r.c.Stats()
	res.Steps = r.c.Steps()
}

// degrading is an engine whose fleet may degrade a request as it adds
// it (a gateway's overload policy): degraded says how it did the last
// one, "" not at all.
type degrading interface{ degraded() string }

var _ degrading = (*replicas)(nil)

func (r *replicas) degraded() string {
	if g, ok := r.c.(interface{ LastDegraded() string }); ok {
		return g.LastDegraded()
	}
	return ""
}

// flightCache is one replica's positional cache of apply: the flights of
// its previous iteration's events (prev), and the spare buffer (cur).
type flightCache struct{ prev, cur []*flight }

// applyBatch applies one replica's events, at end, with that replica's
// positional cache: its running batch changes little between its own
// iterations, whatever the other replicas did in between.
func (r *runner) applyBatch(b cluster.Batch, end int64) error {
	for len(r.caches) <= b.Replica {
		r.caches = append(r.caches, flightCache{})
	}
	c := &r.caches[b.Replica]
	r.prevFlights, r.curFlights = c.prev, c.cur
	err := r.apply(b.Events, end)
	c.prev, c.cur = r.prevFlights, r.curFlights
	return err
}

// RunCluster is Run over a cluster of engines behind its router, in one
// virtual time: each request is routed as it is sent, each replica steps
// on its own schedule, and every Record says which replica served it
// (Record.Replica, from 1). Result.Replicas gives each replica's share and
// Result.Steps counts the iterations of every replica. c should be fresh.
func RunCluster(ctx context.Context, c cluster.Fleet, ds workload.Dataset, load Load, emit func(*runlog.Record) error) (Result, error) {
	return run(ctx, &replicas{c: c}, ds, load, emit)
}

// RunSessionsCluster is RunSessions over a cluster: each turn is routed as
// it is sent, with its session's ID for session-affinity routing. The
// settings that shape the requests (tool calls, reasoning, the block size
// of the hashes) are replica 1's.
func RunSessionsCluster(ctx context.Context, c cluster.Fleet, load SessionLoad, emit func(*runlog.Record) error) (SessionResult, error) {
	return runSessions(ctx, &replicas{c: c}, load, emit)
}
