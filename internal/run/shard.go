package run

import (
	"context"
	"net"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/shard"
	"github.com/goodput/goodput/internal/stats"
)

// checkShard checks what a sharded or synchronised run needs of the rest
// of the configuration.
func (c *Config) checkShard() error {
	if !c.StartAt.IsZero() {
		if err := shard.CheckStartAt(c.StartAt, time.Now()); err != nil {
			return &ConfigError{Field: "StartAt", Err: err}
		}
	}
	sh := c.Shard
	if sh == nil {
		return nil
	}
	l := c.Load
	switch {
	case sh.Count < 1 || sh.Count > shard.MaxCount:
		return configErr("Shard", "%d shards: want 1 to %d", sh.Count, shard.MaxCount)
	case sh.Index < 0 || sh.Index >= sh.Count:
		return configErr("Shard", "shard %d of %d: want an index from 0 to %d", sh.Index, sh.Count, sh.Count-1)
	case sh.Rendezvous != "" && !c.StartAt.IsZero():
		return configErr("Rendezvous", "a rendezvous sets the start: give it or a start time, not both")
	case c.Virtual:
		return configErr("Shard", "a virtual-time run is one process: shards split wall-clock load")
	case c.Sweep != nil && (len(c.Sweep.Levels) == 0 || c.Sweep.Search):
		return configErr("Shard", "the shards of a sweep must run the same levels: give the levels (no capacity probe, no search, which each shard would judge on its share)")
	case l.MaxConcurrency > 0 && l.MaxConcurrency < sh.Count:
		return configErr("MaxConcurrency", "a concurrency cap of %d cannot be split over %d shards: give each at least 1", l.MaxConcurrency, sh.Count)
	case c.Sessions != nil && c.Sessions.MaxConcurrent > 0 && c.Sessions.MaxConcurrent < sh.Count:
		return configErr("MaxConcurrent", "a cap of %d sessions in progress cannot be split over %d shards: give each at least 1", c.Sessions.MaxConcurrent, sh.Count)
	}
	if sh.Rendezvous != "" {
		if _, _, err := net.SplitHostPort(sh.Rendezvous); err != nil {
			return configErr("Rendezvous", "%q: want host:port", sh.Rendezvous)
		}
	}
	if c.Sweep != nil {
		for _, lv := range c.Sweep.Levels {
			if lv.MaxConcurrency > 0 && lv.MaxConcurrency < sh.Count {
				return configErr("MaxConcurrency", "a concurrency cap of %d cannot be split over %d shards: give each at least 1", lv.MaxConcurrency, sh.Count)
			}
		}
	}
	return nil
}

// syncStart is the start a sharded or synchronised run agreed before its
// first request, on the run's clock.
type syncStart struct {
	// at is the start, ns on the run clock; on says there is one (until
	// the first level has used it).
	at int64
	on bool
	// stop closes shard 0's rendezvous (nil: none).
	stop func()
}

// synchronise measures the clock, agrees the start with the other shards
// (or takes the one given) and states the shard in the meta line; w.zero
// is the run clock's zero. It runs once the target is resolved and the
// prompts made, so that only warm-ups lie between it and the start.
func (w *wall) synchronise(ctx context.Context) error {
	cfg, sh := w.cfg, w.cfg.Shard
	if sh == nil && cfg.StartAt.IsZero() {
		return nil
	}
	// The records' clock starts here: the meta line's start time is its
	// zero exactly, so that the merge lines the shards up to the ns.
	cfg.Started = w.zero
	var meta runlog.Shard
	if sh != nil {
		meta = runlog.Shard{Index: sh.Index, Count: sh.Count}
		// The embedded simulator shares this machine's clock.
		if samples := sh.ClockSamples; samples >= 0 && !w.embedded {
			if samples == 0 {
				samples = shard.DefaultClockSamples
			}
			clk, err := shard.MeasureClock(ctx, w.base, samples)
			if err != nil {
				cfg.note("clock offset against the target not measured: %v", err)
			} else {
				meta.Clock = clk
				cfg.note("clock: this machine is %s the target's (±%s, from %d Date headers)", shard.OffsetText(clk.OffsetNs),
					time.Duration(clk.ErrorNs).Round(time.Microsecond), clk.Samples)
			}
		}
	}
	start := cfg.StartAt
	if sh != nil && sh.Rendezvous != "" {
		at, run, stop, err := shard.Rendezvous(ctx, sh, runID(), func(s string) { cfg.note("%s", s) })
		if err != nil {
			return &ConfigError{Field: "Rendezvous", Err: err}
		}
		w.sync.stop = stop
		start, meta.Run = at, run
	} else if !start.IsZero() && sh != nil {
		meta.Run = shard.RunName(start, cfg.Seed, sh.Count)
	}
	if !start.IsZero() {
		if late := time.Since(start); late > shard.StartAtGrace {
			return configErr("StartAt", "the start %s passed %s before this process was ready to send (target resolved, prompts made): give a later one",
				start.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond))
		}
		// Wall-clock difference: the start is an instant of the wall
		// clock, the records' zero one of this process's.
		w.sync.at, w.sync.on = int64(start.Sub(w.zero.Round(0))), true
		meta.StartAt = start.UTC()
		cfg.note("the measured schedule starts at %s (in %s)", start.UTC().Format(time.RFC3339Nano), time.Until(start).Round(time.Millisecond))
	}
	if sh == nil {
		return nil
	}
	if meta.Run != "" && cfg.Target.RequestIDPrefix == "" {
		// One prefix for every shard: the ids are the global schedule's.
		w.prefix = "goodput-" + meta.Run + "-"
	}
	lv := cfg.Load
	if lv.NumPrompts > 0 && lv.DurationS == 0 {
		meta.Requests = sh.Share(lv.NumPrompts) + sh.Share(lv.NumWarmups)
	}
	if s := cfg.Sessions; s != nil {
		n := s.NumSessions
		if n <= 0 {
			n = s.size()
		}
		meta.Requests, meta.Sessions = 0, sh.Share(n)
	}
	if meta.Run == "" {
		cfg.note("shard %d of %d starts on its own: give a start time or a rendezvous so that the shards share one schedule", sh.Index, sh.Count)
	}
	cfg.Output.shard = &meta
	return nil
}

// take hands the agreed start to the first level that asks (a sweep's
// later levels start when the shard gets to them).
func (s *syncStart) take() (at int64, on bool) {
	at, on = s.at, s.on
	s.on = false
	return at, on
}

// ownShard is a shard's own run as its one row (its live result, or a
// report of its file alone before any merge): nil for a whole run or a
// merged one (mergedShards).
func ownShard(meta *runlog.Meta, data []levelData) []breakdown.ShardRow {
	if meta == nil || meta.Shard == nil || meta.Shards != nil {
		return nil
	}
	sh := meta.Shard
	row := breakdown.ShardRow{ShardSummary: runlog.ShardSummary{Index: sh.Index, Count: sh.Count, StartAt: sh.StartAt,
		Clock: sh.Clock, Ended: len(data) > 0, ExpectedSessions: sh.Sessions}}
	for i := range data {
		d := &data[i]
		lv := d.level
		row.Records += d.summary.Requests + d.summary.Warmups
		row.ClientCPU = max(row.ClientCPU, lv.ClientCPU)
		row.DelayedArrivals += lv.DelayedArrivals
		if lv.Shard == nil {
			row.Ended = false
		} else {
			row.Sent += lv.Shard.Sent
		}
		if lag := d.summary.SendLag; lag.N > 0 && (row.SendLag.N == 0 || lag.Max > row.SendLag.Max) {
			row.SendLag = lag // the level that kept its schedule worst
		}
		if _, bound := findings.ClientBound(findings.Input{Summary: &d.summary, Level: &lv, ClientCPU: lv.ClientCPU}); bound {
			row.ClientBound = true
		}
	}
	if !row.Ended {
		row.Sent = -1
	}
	if sh.Requests > 0 {
		row.Expected = sh.Requests * max(len(data), 1)
		row.Short = max(row.Expected-row.Records, 0)
	}
	return []breakdown.ShardRow{row}
}

// mergedShards is every shard of a merged run (meta.Shards, from Merge)
// with each one's send lag and client-bound verdict from its own records
// (recs[From:To]); nil when the run was not merged from shards.
func mergedShards(meta *runlog.Meta, recs []runlog.Record) []breakdown.ShardRow {
	if meta == nil || len(meta.Shards) == 0 {
		return nil
	}
	rows := make([]breakdown.ShardRow, len(meta.Shards))
	for i, s := range meta.Shards {
		rows[i] = breakdown.ShardRow{ShardSummary: s}
		if s.Missing || s.From < 0 || s.From > s.To || s.To > len(recs) {
			continue
		}
		// Only what the client-bound rule looks at.
		sum := stats.Summarize(recs[s.From:s.To], stats.Options{Metrics: []string{stats.MetricTTFT}, Percentiles: []float64{50, 99}, Buckets: []int{}})
		rows[i].SendLag = sum.SendLag
		var lv runlog.Level
		if len(meta.Levels) > 0 {
			lv = meta.Levels[0]
		}
		lv.DelayedArrivals, lv.ClientCPU = s.DelayedArrivals, s.ClientCPU
		_, rows[i].ClientBound = findings.ClientBound(findings.Input{Summary: &sum, Level: &lv, ClientCPU: s.ClientCPU})
	}
	return rows
}
