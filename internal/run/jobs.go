package run

import (
	"context"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/simrun"
)

// Agent jobs (SessionLoad.Jobs) run as a session workload does: level 0,
// in virtual time (simrun.RunJobs) or over HTTP on the wall clock
// (jobs_wall.go); both walk the graph with session.JobWalk and build the
// prompts with session.JobPrompt.

// size is the number of sessions (or jobs) in the load's set.
func (s *SessionLoad) size() int {
	switch {
	case s.Jobs != nil:
		return len(s.Jobs)
	case s.Set != nil:
		return s.Set.Len()
	}
	return 0
}

// name names the load's set.
func (s *SessionLoad) name() string {
	if s.Jobs != nil {
		return s.JobsName
	}
	return s.Set.Name()
}

// runJobs runs the jobs of s on a fresh engine (or cluster) in virtual
// time as level 0, every record through sink.
func (v *virtual) runJobs(ctx context.Context, s *SessionLoad, sink Sink) (simrun.SessionResult, error) {
	load := simrun.JobLoad{Jobs: s.Jobs, NumJobs: s.NumSessions, Rate: s.Rate, Burstiness: s.Burstiness,
		MaxConcurrent: s.MaxConcurrent, Seed: v.cfg.Seed, Timeout: v.cfg.ClientTimeout, KeepAbandoned: v.cfg.KeepAbandoned}
	return v.play(sink, func(every time.Duration, f func(int64, sim.Snapshot)) { load.SampleEvery, load.Sample = every, f },
		func(eng *sim.Engine, c cluster.Fleet, emit func(*runlog.Record) error) (simrun.SessionResult, error) {
			if c != nil {
				return simrun.RunJobsCluster(ctx, c, load, emit)
			}
			return simrun.RunJobs(ctx, eng, load, emit)
		})
}
