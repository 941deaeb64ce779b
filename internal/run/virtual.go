package run

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/workload"
)

// virtual runs levels on the simulated engine in virtual time (no HTTP, no
// clock, no sleeping): deterministic, thousands of requests a second. Each
// level runs on a fresh engine from virtual time 0 and replays the same
// requests under the same arrival seed, only scaled to its load (common
// random numbers), so a sweep's curve is smooth and a bisection sees a
// monotone boundary. In the records the levels follow one another, a
// second apart, as a wall-clock sweep's do.
type virtual struct {
	cfg  *Config
	ds   workload.Dataset
	desc runlog.Engine
	// off is the shift of the current level's records; lastEnd the latest
	// end written so far; cur the level being shifted.
	off, lastEnd int64
	cur          int
	buf          runlog.Record
	stats        VirtualStats
	// srv keeps the engine's state sampled every sampleEvery of virtual
	// time, as scrapes of its /metrics (nil: not sampled).
	srv         *serverScrapes
	sampleEvery time.Duration
	// wo built ds; byLengths holds the datasets of levels with lengths of
	// their own (a Pareto sweep), by (input, output).
	wo        workload.Options
	byLengths lengthDatasets
	// fleets keeps what a cluster's replicas and autoscaler did that the
	// records cannot say, by level index, for the level to store.
	fleets map[int]*runlog.LevelFleet
}

// openVirtual checks the engine and builds the workload (a trace replays
// whole unless NumPrompts is set; warm-ups get requests of their own).
func openVirtual(cfg *Config, seed int64) (*virtual, error) {
	desc, err := describeVirtual(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Publish.Describe(&desc)
	v := &virtual{cfg: cfg, desc: desc, cur: -1}
	if cfg.Sessions != nil {
		return v, nil // the sessions are the workload
	}
	lv := &cfg.Load
	wo := cfg.Workload.Options
	wo.Seed = seed
	wo.NumPrompts = lv.NumPrompts
	if wo.NumPrompts > 0 {
		wo.NumPrompts += lv.NumWarmups
	}
	if v.ds, err = buildDataset(cfg, wo); err != nil {
		return nil, err
	}
	v.wo = wo
	if wo.NoOversample && isFileDataset(wo.DatasetName) && lv.NumPrompts+lv.NumWarmups > v.ds.Len() {
		// Each row once: as many requests as the file has.
		lv.NumPrompts = max(v.ds.Len()-lv.NumWarmups, 1)
	}
	return v, nil
}

// engineError is an engine configuration error as the run's ConfigError
// (Field "Engine.<field>").
func engineError(err error) error {
	var ce *sim.ConfigError
	if errors.As(err, &ce) {
		return &ConfigError{Field: "Engine." + ce.Field, Err: err}
	}
	return fmt.Errorf("simulated engine: %w", err)
}

// describeVirtual checks the engine, or the cluster, and describes it for
// the run's meta: a cluster as its first replica, with its replicas and
// router added.
func describeVirtual(cfg *Config) (runlog.Engine, error) {
	if cfg.Cluster == nil {
		eng, err := sim.New(cfg.Engine)
		if err != nil {
			return runlog.Engine{}, engineError(err)
		}
		return eng.Describe(), nil
	}
	c, err := newFleet(cfg.Cluster)
	if err != nil {
		return runlog.Engine{}, err
	}
	d := c.Describe(0)
	d.Replicas, d.Router = c.Len(), cfg.Cluster.Router.String()
	if len(cfg.Cluster.Pools) > 0 {
		// Pools of their own engines: the first replica's description is
		// not the cluster's; say each pool's, and the GPUs of all.
		d.Pools, d.GPUs = describePools(c, cfg.Cluster.Pools)
	}
	if pd := cfg.Cluster.Disagg; pd != nil {
		describeDisagg(&d, c, pd)
	}
	if gw := cfg.Cluster.Gateway; gw != nil {
		d.Gateway = gw.String()
	}
	return d, nil
}

// describeDisagg adds a prefill/decode split's pools and link to its
// description (replica 1's, a prefill replica): the pools' sizes, the
// link, and the first decode replica's engine where it differs.
func describeDisagg(d *runlog.Engine, c cluster.Fleet, pd *cluster.Disaggregation) {
	link := pd.Link
	if link == "" {
		link = "gpu"
	}
	d.PrefillReplicas, d.DecodeReplicas, d.KVLink = pd.Prefill, c.Len()-pd.Prefill, link
	dec := c.Describe(pd.Prefill)
	if dec.GPU != d.GPU {
		d.DecodeGPU = dec.GPU
	}
	if dec.TensorParallelSize != d.TensorParallelSize {
		d.DecodeTensorParallelSize = dec.TensorParallelSize
	}
	if dec.MaxNumSeqs != d.MaxNumSeqs {
		d.DecodeMaxNumSeqs = dec.MaxNumSeqs
	}
	if dec.MaxNumBatchedTokens != d.MaxNumBatchedTokens {
		d.DecodeMaxNumBatchedTokens = dec.MaxNumBatchedTokens
	}
	if dec.NumGPUBlocks != d.NumGPUBlocks {
		d.DecodeNumGPUBlocks = dec.NumGPUBlocks
	}
}

// newFleet builds the fleet cfg describes, fresh; a bad setting is a
// *ConfigError (Field "Cluster.<field>").
func newFleet(cfg *cluster.Config) (cluster.Fleet, error) {
	if cfg.Gateway != nil {
		// Before the split: a gateway refuses one it cannot front.
		g, err := cluster.NewGateway(*cfg)
		if err != nil {
			return nil, clusterError(err)
		}
		return g, nil
	}
	if cfg.Disagg != nil {
		g, err := cluster.NewDisagg(*cfg)
		if err != nil {
			return nil, clusterError(err)
		}
		return g, nil
	}
	c, err := cluster.New(*cfg)
	if err != nil {
		return nil, clusterError(err)
	}
	return c, nil
}

// clusterError is a cluster configuration error as the run's ConfigError
// (Field "Cluster.<field>"; a replica's engine error still wraps the
// engine's *sim.ConfigError).
func clusterError(err error) error {
	var ce *cluster.ConfigError
	if errors.As(err, &ce) {
		return &ConfigError{Field: "Cluster." + ce.Field, Err: err}
	}
	return fmt.Errorf("simulated cluster: %w", err)
}

// simulate runs ds under load on a fresh engine, or a fresh cluster whose
// replica figures it keeps for level idx.
func (v *virtual) simulate(ctx context.Context, idx int, ds workload.Dataset, load simrun.Load, emit func(*runlog.Record) error) (simrun.Result, error) {
	emit = v.published(emit)
	if v.cfg.Cluster == nil {
		eng, err := sim.New(v.cfg.Engine)
		if err != nil {
			return simrun.Result{}, engineError(err)
		}
		return simrun.Run(ctx, eng, ds, load, emit)
	}
	c, err := newFleet(v.cfg.Cluster)
	if err != nil {
		return simrun.Result{}, err
	}
	res, err := simrun.RunCluster(ctx, c, ds, load, emit)
	v.keepFleet(idx, c, res.Replicas, res.End)
	return res, err
}

// keepFleet keeps what fleet c did over level idx, which ended at end
// (ns): each replica's KV peak and requests (st), and its autoscaler's
// actions if it has one.
func (v *virtual) keepFleet(idx int, c cluster.Fleet, st []cluster.ReplicaStats, end int64) {
	f := &runlog.LevelFleet{KVPeak: make([]float64, len(st)), Routed: make([]int64, len(st))}
	for k := range st {
		f.KVPeak[k], f.Routed[k] = st[k].KVPeak, st[k].Routed
	}
	if as, ok := c.(autoscaled); ok {
		if rep := as.Autoscaling(end); rep != nil {
			f.Autoscale = levelAutoscale(rep)
		}
	}
	if v.fleets == nil {
		v.fleets = map[int]*runlog.LevelFleet{}
	}
	v.fleets[idx] = f
}

// autoscaled is a fleet with an autoscaler: what it did, its lifetimes
// running to end (ns); nil when it has none.
type autoscaled interface {
	Autoscaling(end int64) *cluster.AutoscaleReport
}

// levelAutoscale is what the autoscaler did, as a level stores it.
func levelAutoscale(a *cluster.AutoscaleReport) *runlog.LevelAutoscale {
	c := a.Autoscale
	out := &runlog.LevelAutoscale{Rule: c.String(), Spec: c.RuleString(), Signal: c.Signal, Threshold: c.Threshold, DownThreshold: c.DownThreshold,
		Min: c.Min, Max: c.Max, ProvisionDelayNs: int64(c.ProvisionDelay), CooldownNs: int64(c.Cooldown),
		Start: a.Start, Peak: a.Peak, Final: a.Final, Decisions: len(a.Decisions), GPUHours: a.GPUHours}
	for _, p := range a.Timeline {
		out.Timeline = append(out.Timeline, runlog.ScalePoint{AtNs: p.At, Active: p.Active, Provisioning: p.Provisioning, Draining: p.Draining})
	}
	return out
}

// describe states the simulated engine (or cluster) as the target.
func (v *virtual) describe(m *runlog.Meta) string {
	m.Target, m.Backend, m.Simulated = "virtual-time", "sim", v.desc
	if v.cfg.Sessions != nil {
		m.Dataset = v.cfg.Sessions.name()
	} else {
		m.Dataset = v.ds.Name()
	}
	m.Model = v.desc.Model
	return "sim"
}

// scrapes keeps the engine's state, sampled as a scraper would every
// Config.Scrape.Interval of virtual time (a second when unset).
func (v *virtual) scrapes(_ context.Context, file func(*runlog.Scrape) error) (*serverScrapes, error) {
	sc := v.cfg.Scrape
	if sc == nil {
		return nil, nil
	}
	v.srv, v.sampleEvery = newServerStore(file), sc.Interval
	if v.sampleEvery <= 0 {
		v.sampleEvery = time.Second
	}
	return v.srv, nil
}

// runLevel runs level idx on a fresh engine (or cluster), every record
// through sink.
func (v *virtual) runLevel(ctx context.Context, idx int, lv runlog.Level, sink Sink, h *halt) (levelRun, error) {
	ran, err := v.simulateLevel(ctx, idx, lv, sink, h)
	if err != nil && ctx.Err() != nil {
		// Cut short (by the caller, a failed sink or saturation): the
		// level's records so far are still summarised.
		return levelRun{level: ran, stopped: true}, nil
	}
	if err != nil {
		return levelRun{}, fmt.Errorf("simulation: %w", err)
	}
	return levelRun{level: ran}, nil
}

// probe runs the capacity probe's level on a workload of its own (the
// next seed) on a fresh engine.
func (v *virtual) probe(ctx context.Context, lv runlog.Level, sink Sink) error {
	p, err := openVirtual(v.cfg, v.cfg.Seed+1)
	if err != nil {
		return err
	}
	// The run's NumPrompts as the workload settled it (each row once).
	lv.NumPrompts = v.cfg.Load.NumPrompts
	_, err = p.simulateLevel(ctx, 0, lv, sink, nil)
	return err
}

// finish adds how long the simulation took and what the cluster's
// replicas did that the records cannot say.
func (v *virtual) finish(res *Result) {
	st := v.stats
	res.Virtual = &st
}

// close has nothing to release: the engines live one level each.
func (v *virtual) close() {}

// simulateLevel runs level idx on a fresh engine (or cluster), every
// record through sink, and returns the level as it ran.
func (v *virtual) simulateLevel(ctx context.Context, idx int, lv runlog.Level, sink Sink, h *halt) (runlog.Level, error) {
	wall := time.Now()
	load := simrun.Load{
		Level: lv, Seed: v.cfg.Seed + int64(max(lv.Repeat-1, 0)), Index: idx, NaturalStop: !v.cfg.IgnoreEOS, NaturalStopRecorded: v.cfg.NaturalStopRecorded,
		Retry: v.cfg.Retry, Timeout: v.cfg.ClientTimeout, KeepAbandoned: v.cfg.KeepAbandoned,
	}
	if h != nil {
		load.Halt = h.halted
	}
	if c := v.cfg.Cluster; c != nil && c.Gateway != nil {
		load.PriorityMix = c.Gateway.Mix
	}
	hist := newEngineHistograms() // a fresh engine: its histograms start empty
	if v.srv != nil {
		// The level's records are shifted to follow the last level's;
		// its samples by the same offset.
		off := v.off
		if v.cur >= 0 && v.cur != idx {
			off = v.lastEnd + int64(time.Second)
		}
		load.SampleEvery, load.Sample = v.sampleEvery, func(at int64, s sim.Snapshot) {
			v.srv.addSnapshot("server", hist.attach(engineSnapshot(at+off, s)))
		}
	}
	ds, err := v.dataset(lv)
	if err != nil {
		return lv, err
	}
	res, err := v.simulate(ctx, idx, ds, load, func(r *runlog.Record) error {
		hist.observe(r)
		if r.Level != v.cur {
			if v.cur >= 0 {
				v.off = v.lastEnd + int64(time.Second)
			}
			v.cur = r.Level
		}
		r.CopyTo(&v.buf)
		v.buf.Shift(v.off)
		v.lastEnd = max(v.lastEnd, v.buf.End)
		return sink.Record(&v.buf)
	})
	v.stats.Wall += time.Since(wall)
	v.stats.Simulated += time.Duration(res.End)
	v.stats.Steps += res.Steps
	v.stats.Abandoned += res.Abandoned
	v.stats.AbandonedTokens += res.AbandonedTokens
	lv.DelayedArrivals = res.DelayedArrivals
	lv.Fleet = v.fleets[idx]
	return lv, err
}

// runSessions runs the sessions of s on a fresh engine in virtual time as
// level 0, every record through sink: the same records as over HTTP,
// deterministic for the seed.
func (v *virtual) runSessions(ctx context.Context, s *SessionLoad, sink Sink) (simrun.SessionResult, error) {
	seed := v.cfg.Seed
	// Tool calls the sessions do not time or size draw from the load's
	// distributions, one stream per call, so a call's draw does not depend
	// on the order the calls happen in.
	draw := func(d workload.Dist, stream uint64, session, turn, call int) int {
		rng := rand.New(rand.NewPCG(uint64(seed)^stream, uint64(session)<<32|uint64(turn)<<12|uint64(call)))
		return max(d.Sample(rng), 0)
	}
	load := simrun.SessionLoad{Sessions: s.Set, NumSessions: s.NumSessions, Rate: s.Rate, Burstiness: s.Burstiness,
		MaxConcurrent: s.MaxConcurrent, MaxContext: s.MaxContext, MaxToolRounds: s.MaxToolRounds,
		Seed: seed, NaturalStop: !v.cfg.IgnoreEOS,
		Retry: v.cfg.Retry, Timeout: v.cfg.ClientTimeout, KeepAbandoned: v.cfg.KeepAbandoned}
	if d := s.ToolLatency; d != nil {
		load.ToolLatency = func(session, turn, call int) time.Duration {
			return time.Duration(draw(d, 0x6c6174, session, turn, call)) * time.Millisecond
		}
	}
	if d := s.ToolResultLen; d != nil {
		load.ToolResultTokens = func(session, turn, call int) int { return draw(d, 0x726573, session, turn, call) }
	}
	return v.play(sink, func(every time.Duration, f func(int64, sim.Snapshot)) { load.SampleEvery, load.Sample = every, f },
		func(eng *sim.Engine, c cluster.Fleet, emit func(*runlog.Record) error) (simrun.SessionResult, error) {
			if c != nil {
				return simrun.RunSessionsCluster(ctx, c, load, emit)
			}
			return simrun.RunSessions(ctx, eng, load, emit)
		})
}

// play runs a session or job workload as level 0 on a fresh engine (or
// fleet): sample hands the load the engine's sampler when the server side
// is kept, run drives the workload with emit, which sends every record
// through sink; the fleet's replicas and autoscaling and the simulation's
// totals are kept.
func (v *virtual) play(sink Sink, sample func(every time.Duration, f func(int64, sim.Snapshot)),
	run func(eng *sim.Engine, c cluster.Fleet, emit func(*runlog.Record) error) (simrun.SessionResult, error)) (simrun.SessionResult, error) {
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
	hist := newEngineHistograms()
	if v.srv != nil {
		sample(v.sampleEvery, func(at int64, s sim.Snapshot) {
			v.srv.addSnapshot("server", hist.attach(engineSnapshot(at, s)))
		})
	}
	wall := time.Now()
	res, err := run(eng, c, v.published(func(r *runlog.Record) error {
		hist.observe(r)
		r.CopyTo(&v.buf)
		return sink.Record(&v.buf)
	}))
	if c != nil {
		v.keepFleet(0, c, res.Replicas, res.End)
	}
	v.stats.Wall += time.Since(wall)
	v.stats.Simulated += time.Duration(res.End)
	v.stats.Steps += res.Steps
	v.stats.Abandoned += res.Abandoned
	v.stats.AbandonedTokens += res.AbandonedTokens
	return res, err
}

// dataset is the requests of level lv: the run's, or for a level with
// lengths of its own, random prompts of them (the run's seed, so the levels
// of one pair send the same requests).
func (v *virtual) dataset(lv runlog.Level) (workload.Dataset, error) {
	return v.byLengths.dataset(v.cfg, v.wo, lv, v.ds)
}

// VirtualLines are what a run in virtual time says of itself once done:
// the time simulated, and the work wasted on requests whose clients left.
func (r *Result) VirtualLines() []string {
	v := r.Virtual
	if v == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("simulated %.1f s of %s in %.2f s (%d engine steps)",
		v.Simulated.Seconds(), DescribeEngine(r.Meta.Simulated), v.Wall.Seconds(), v.Steps)}
	if v.Abandoned > 0 {
		lines = append(lines, fmt.Sprintf("the engine ran on %d timed-out requests whose clients had left (%d tokens wasted)",
			v.Abandoned, v.AbandonedTokens))
	}
	return lines
}
