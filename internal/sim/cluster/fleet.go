package cluster

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// Fleet is the contract every simulated fleet keeps, whatever it is
// composed of: a Cluster (replicas behind a router), a prefill/decode
// split (Disagg), a gateway in front (Gateway), an autoscaled pool. It is
// declared here, once, so that each driver (simrun in virtual time,
// simserve on the wall clock, run describing a run) drives the same
// thing. Like the engines it composes it is a synchronous state machine
// on one virtual clock, not safe for concurrent use: one goroutine owns
// it.
type Fleet interface {
	// Add routes r, arriving at now (ns), and returns its replica (from
	// 0) and the engine's error for a request it can never serve.
	Add(now int64, r Request) (int, error)
	// Step starts every replica given work at now and returns the next
	// moment something happens, but not past until, with the batches of
	// the iterations that ended then (each replica's events); returning
	// until with no batches, it consumed nothing: a later Step may start
	// from any moment up to until.
	Step(now, until int64) (int64, []Batch)
	// Abort drops request id on its replica.
	Abort(now int64, id string)
	// Busy reports whether any replica has work.
	Busy() bool
	// NextEnd is the earliest end of an iteration in flight (MaxInt64:
	// none), read without delivering it.
	NextEnd() int64
	// Len is the number of replicas.
	Len() int
	// Snapshot is the fleet's gauges and counters summed.
	Snapshot() sim.Snapshot
	// Stats is each replica's share of the run, by index, its engine's
	// state included.
	Stats() []ReplicaStats
	// Steps counts the iterations of every replica.
	Steps() int64
	// Config is replica i's engine configuration, resolved.
	Config(i int) sim.Config
	// Describe is replica i's engine description.
	Describe(i int) runlog.Engine
}

var (
	_ Fleet = (*Cluster)(nil)
	_ Fleet = (*Gateway)(nil)
	_ Fleet = (*Disagg)(nil)
)
