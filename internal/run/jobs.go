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
// in virtual time only for now (simrun.RunJobs). The graph walk is
// session.JobWalk's, so a wall-clock driver can take it up.

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
	var (
		eng *sim.Engine
		c   cluster.Fleet
		err error
	)
	if v.cfg.Cluster == nil {
		if eng, err = sim.New(v.cfg.Engine); err != nil {
			return simrun.SessionResult{}, engineError(err)
		}
	} else if c, err = newFleet(v.cfg.Cluster); err != nil {
		return simrun.SessionResult{}, err
	}
	load := simrun.JobLoad{Jobs: s.Jobs, NumJobs: s.NumSessions, Rate: s.Rate, Burstiness: s.Burstiness,
		MaxConcurrent: s.MaxConcurrent, Seed: v.cfg.Seed, Timeout: v.cfg.ClientTimeout, KeepAbandoned: v.cfg.KeepAbandoned}
	hist := newEngineHistograms()
	if v.srv != nil {
		load.SampleEvery, load.Sample = v.sampleEvery, func(at int64, s sim.Snapshot) {
			v.srv.addSnapshot("server", hist.attach(engineSnapshot(at, s)))
		}
	}
	wall := time.Now()
	emit := v.published(func(r *runlog.Record) error {
		hist.observe(r)
		r.CopyTo(&v.buf)
		return sink.Record(&v.buf)
	})
	var res simrun.SessionResult
	if c != nil {
		res, err = simrun.RunJobsCluster(ctx, c, load, emit)
		v.keepReplicas(0, res.Replicas)
		v.keepAutoscale(0, c, res.End)
	} else {
		res, err = simrun.RunJobs(ctx, eng, load, emit)
	}
	v.stats.Wall += time.Since(wall)
	v.stats.Simulated += time.Duration(res.End)
	v.stats.Steps += res.Steps
	v.stats.Abandoned += res.Abandoned
	v.stats.AbandonedTokens += res.AbandonedTokens
	return res, err
}
