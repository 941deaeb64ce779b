package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sweep"
)

// SweepConfig is a run of several levels judged as a curve (Config.Sweep).
type SweepConfig struct {
	// Axis is what the levels vary.
	Axis sweep.Axis
	// Levels are the loads to run, each the run's Load with its rate or
	// concurrency set; none means an automatic sweep: a capacity probe
	// first, then Fractions of the capacity it measured.
	Levels    []runlog.Level
	Fractions []float64
	// KneeK, Criteria and Saturation judge the curve.
	KneeK      float64
	Criteria   sweep.Criteria
	Saturation sweep.Saturation
	// Search bisects between the lowest and highest level for the highest
	// load within SLO, to Precision (0: 1/32 of the range).
	Search    bool
	Precision float64
	// Pareto runs Levels as concurrencies × length pairs (each level's
	// InputLen and OutputLen) in virtual time and judges their Pareto
	// frontier instead of a curve.
	Pareto bool
}

// Plan is what a sweep is about to run, told to Hooks.Sweep: its levels
// (for a search, the bracket's two ends) and, for an automatic sweep, the
// capacity probe they came from.
type Plan struct {
	Axis    sweep.Axis
	Levels  []runlog.Level
	Search  bool
	Lo, Hi  float64
	Virtual bool
	Probe   *runlog.CapacityProbe
}

// AutoFractions are the rates an automatic sweep runs, as shares of the
// measured capacity: two low loads for the knee's baseline slope, dense
// steps where goodput usually peaks, and one beyond capacity to show the
// collapse (a saturated level ends the sweep there).
var AutoFractions = []float64{0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1}

// ErrNoLevelRan is a sweep that ran no level.
var ErrNoLevelRan = errors.New("no level ran")

// errSaturated cancels a level the saturation monitor judged saturated.
var errSaturated = errors.New("level saturated")

// runner is one run in progress.
type runner struct {
	cfg *Config
	fan *fanout
	// lr runs the levels: on the wall clock or in virtual time.
	lr   levelRunner
	meta *runlog.Meta
	file *recordsFile
	keep *keeper
	// srv keeps the server's samples: scraped during a wall-clock run, the
	// engine's state in virtual time (nil: none).
	srv  *serverScrapes
	data []levelData
	sent int
	// resultPath and recordsPath are the files' names, free ones.
	resultPath, recordsPath string
	// cancelled is set when a level was cut short by the caller.
	cancelled bool
}

// levelRunner runs a run's levels on one clock: the wall clock (a Backend's
// requests, paced by loadgen) or virtual time (the simulated engine). The
// rest of the lifecycle (the sweep driver, the capacity probe, the fan-out,
// the analysis) is the same over either; Run picks one from the Config.
type levelRunner interface {
	// describe states the target and dataset in the run's meta and
	// returns the label the output files take when none is given.
	describe(m *runlog.Meta) (label string)
	// scrapes starts keeping the server's samples, each also written
	// through file (nil: none kept).
	scrapes(ctx context.Context, file func(*runlog.Scrape) error) (*serverScrapes, error)
	// runLevel runs level idx, lv, sending every record through sink. A
	// level its context ended early is no error: it says so in stopped.
	// h, when not nil, may halt the level's sending early (its requests
	// in flight finish).
	runLevel(ctx context.Context, idx int, lv runlog.Level, sink Sink, h *halt) (levelRun, error)
	// probe runs the capacity probe's level lv through sink, on requests
	// of its own (another seed), so a prefix cache warmed by the probe
	// serves none of the sweep's.
	probe(ctx context.Context, lv runlog.Level, sink Sink) error
	// sessions runs the sessions of s as level 0, sending every record
	// through r's sinks.
	sessions(ctx context.Context, r *runner, s *SessionLoad) (levelData, error)
	// finish adds to the run's Result what only the runner knows.
	finish(res *Result)
	// close releases what the runner holds (connections, the embedded
	// simulator).
	close()
}

var (
	_ levelRunner = (*wall)(nil)
	_ levelRunner = (*virtual)(nil)
)

// levelRun is what one level did.
type levelRun struct {
	// level is the level as it ran: delayed arrivals, client CPU.
	level runlog.Level
	// sent counts the requests a wall-clock level sent (for the note an
	// interrupted run prints; virtual time counts none).
	sent int
	// stopped says the level's context ended it early: the caller, a
	// failed sink or the saturation monitor.
	stopped bool
}

// Run runs cfg: resolves the target, runs the level (or the sweep's
// levels), writes the records file and returns what the run found. A
// Result comes back with an error when the run stopped part-way (an
// interruption, a records file that failed): it covers what finished.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	c := &cfg
	if err := c.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &runner{cfg: c, fan: &fanout{cancel: cancel}}
	defer r.close()

	levels, maxConc := max(c.Repeats, 1), c.Load.MaxConcurrency
	if s := c.Sweep; s != nil {
		levels = max(len(s.Levels), len(s.Fractions), 1)
		if s.Search {
			levels = 2
		}
		for _, l := range s.Levels {
			maxConc = max(maxConc, l.MaxConcurrency)
		}
	}
	var err error
	if c.Virtual {
		var v *virtual
		if v, err = openVirtual(c, c.Seed); err == nil {
			r.lr = v
		}
	} else {
		var w *wall
		if w, err = openWall(ctx, c, levels, maxConc, c.logger()); err == nil {
			r.lr = w
		}
	}
	if err != nil {
		return nil, err
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	var scrapeFile func(*runlog.Scrape) error
	if r.file != nil {
		scrapeFile = r.file.w.WriteScrape
	}
	if r.srv, err = r.lr.scrapes(ctx, scrapeFile); err != nil {
		return nil, err
	}
	defer r.srv.close()
	var runErr error
	switch {
	case c.Sessions != nil:
		d, err := r.runSessions(ctx, c.Sessions)
		if err == nil {
			r.data = append(r.data, d)
		}
		runErr = err
	case c.Sweep != nil:
		runErr = r.sweep(ctx)
	default:
		for i, lv := range repeatLevels(c.Load, c.Repeats) {
			d, err := r.level(ctx, i, lv, nil)
			if err == nil {
				r.data = append(r.data, d)
			}
			if runErr = err; err != nil || r.cancelled || ctx.Err() != nil {
				break
			}
		}
	}
	return r.finish(ctx, runErr)
}

// check validates what the flags cannot: the load's own consistency.
func (c *Config) check() error {
	if err := loadgen.CheckLevel(c.Load); err != nil {
		return err
	}
	switch {
	case c.Target.Open == nil && !c.Virtual:
		return configErr("Target", "no backend to open")
	case c.Sweep != nil && c.Sweep.Pareto && (c.Sweep.Search || c.Sweep.Axis != sweep.AxisConcurrency):
		return configErr("Sweep", "a Pareto sweep runs concurrencies × length pairs: no search, no rate axis")
	case c.Repeats > 1 && (c.Sweep != nil || c.Sessions != nil):
		return configErr("Repeats", "repeats run one load again: not a sweep or sessions")
	case c.Sessions != nil && c.Sweep != nil:
		return configErr("Sessions", "sessions run one level: not in a sweep yet")
	case c.Sessions != nil && c.Sessions.Jobs != nil && c.Shard != nil:
		return configErr("Sessions", "agent jobs do not split over shards yet: run them from one process")
	case c.Sessions != nil && c.Sessions.size() == 0:
		return configErr("Sessions", "no sessions to run")
	}
	return nil
}

func (c *Config) logger() *slog.Logger {
	if c.Hooks.Log != nil {
		return c.Hooks.Log
	}
	return slog.New(slog.DiscardHandler)
}

// open writes the meta line and sets up the run's sinks.
func (r *runner) open() error {
	c := r.cfg
	m := &runlog.Meta{
		Tool: "goodput", Version: c.Version, Command: c.Command, Started: c.Started.UTC(),
		Seed: c.Seed, Metadata: c.Metadata,
		Analysis: &runlog.Analysis{SLO: c.Stats.SLO.String(), Percentiles: c.Stats.Percentiles, Metrics: c.Stats.Metrics,
			Buckets: c.Stats.Buckets, Confidence: c.Stats.Confidence, SteadyTrim: c.SteadyTrim, ReadingSpeedMs: c.ReadingSpeedMs, SessionSLO: c.SessionSLO.String(),
			GPUCostPerHour: c.Cost.GPUCostPerHour, NumGPUs: c.Cost.NumGPUs, SharedPrefixTokens: sharedPrefixTokens(c)},
	}
	label := c.Output.Label
	if l := r.lr.describe(m); label == "" {
		label = l
	}
	if s := c.Sweep; s != nil {
		// The criteria now, the levels chosen (after a probe) at the end.
		m.Analysis.Sweep = &runlog.SweepSpec{Axis: string(s.Axis), Search: s.Search, Precision: s.Precision, KneeK: s.KneeK,
			Attainment: s.Criteria.Attainment, MaxMedianQueueMs: s.Criteria.MaxMedianQueueMs,
			MaxErrorRate: s.Saturation.MaxErrorRate, SaturationStop: !s.Saturation.Off, Planned: len(s.Levels), Pareto: s.Pareto}
	}
	// The planned levels, so a killed run's file still states its load;
	// the end line replaces them with what happened.
	m.Levels = repeatLevels(c.Load, c.Repeats)
	if s := c.Sweep; s != nil && len(s.Levels) > 0 {
		m.Levels = slices.Clone(s.Levels)
	}
	r.meta = m
	stamp := c.Started.Format("20060102-150405")
	result, records := c.Output.paths(label, m.Model, c.Load.MaxConcurrency, loadName(c.Load), stamp)
	f, err := c.Output.openRecords(&result, &records, m)
	if err != nil {
		return err
	}
	r.file = f
	r.resultPath, r.recordsPath = result, records
	if f != nil {
		r.fan.run = append(r.fan.run, f)
	}
	if c.Output.KeepRecords {
		r.keep = &keeper{}
		r.fan.run = append(r.fan.run, r.keep)
	}
	if c.Hooks.Start != nil {
		sinks, err := c.Hooks.Start(m)
		if err != nil {
			return err
		}
		r.fan.run = append(r.fan.run, sinks...)
	}
	return nil
}

// level runs one level through the fan-out and returns its analysis input;
// mon (a sweep's saturation monitor) may stop it early.
func (r *runner) level(ctx context.Context, idx int, lv runlog.Level, mon *sweep.Monitor) (levelData, error) {
	lctx, lcancel := context.WithCancelCause(ctx)
	defer lcancel(nil)
	col := newCollector(r.cfg.Stats, false, mon, func() { lcancel(errSaturated) })
	col.trim = r.cfg.SteadyTrim
	var h *halt
	if len(r.cfg.Precision) > 0 {
		h = newHalt()
		col.prec = newPrecisionWatch(r.cfg.Precision, r.cfg.Stats, h)
	}
	r.fan.setLevel(col)
	defer r.fan.setLevel()
	ran, err := r.lr.runLevel(lctx, idx, lv, r.fan, h)
	if err != nil {
		return levelData{}, err
	}
	r.sent += ran.sent
	if ran.stopped && r.interrupted(ctx) {
		r.cancelled = true
		ran.level.Stopped = sweep.Interrupted
	}
	return col.data(idx, ran.level), nil
}

// interrupted says the caller cancelled the run (not a failed sink).
func (r *runner) interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && r.fan.error() == nil
}

// sweep runs the sweep's levels (after a capacity probe, for an automatic
// sweep) or its bisection, stopping at a saturated level.
func (r *runner) sweep(ctx context.Context) error {
	c, s := r.cfg, r.cfg.Sweep
	spec := r.meta.Analysis.Sweep
	levels := s.Levels
	if len(levels) == 0 {
		probe, err := r.probe(ctx)
		if err != nil {
			return err
		}
		spec.Probe = probe
		tmpl := c.Load
		tmpl.RequestRate, tmpl.Label = 0, ""
		rates := make([]float64, len(s.Fractions))
		for i, f := range s.Fractions {
			rates[i] = roundRate(f * probe.RequestThroughput)
		}
		levels = sweep.Levels(sweep.AxisRate, rates, tmpl)
	}
	// The levels keep the load's other settings as the target resolved
	// them (a trace's length, the rows a file has).
	levels = slices.Clone(levels)
	for i := range levels {
		l := &levels[i]
		l.NumPrompts, l.NumWarmups, l.DurationS, l.Burstiness = c.Load.NumPrompts, c.Load.NumWarmups, c.Load.DurationS, c.Load.Burstiness
	}
	spec.Planned = len(levels)
	loads := make([]float64, len(levels))
	for i, l := range levels {
		loads[i] = s.Axis.Load(l)
	}
	spec.Lo, spec.Hi = slices.Min(loads), slices.Max(loads)
	if s.Search && spec.Lo == spec.Hi {
		return configErr("Search", "a search bisects between the lowest and highest level: give two different loads")
	}
	if c.Hooks.Sweep != nil {
		c.Hooks.Sweep(Plan{Axis: s.Axis, Levels: levels, Search: s.Search, Lo: spec.Lo, Hi: spec.Hi, Virtual: c.Virtual, Probe: spec.Probe})
	}
	runner := sweep.RunnerFunc(func(ctx context.Context, idx int, l runlog.Level) (sweep.Point, error) {
		var mon *sweep.Monitor
		if !s.Saturation.Off {
			mon = sweep.NewMonitor(s.Saturation, l.NumPrompts)
		}
		d, err := r.level(ctx, idx, l, mon)
		if err != nil {
			return sweep.Point{}, err
		}
		r.data = append(r.data, d)
		if r.cancelled {
			return sweep.Point{}, fmt.Errorf("level %d: %w", idx, context.Canceled)
		}
		return d.point(), r.fan.error()
	})
	onPoint := func(p sweep.Point, meets *Meets) {
		if c.Hooks.Point != nil {
			c.Hooks.Point(p, s.Saturation.Judge(p), meets)
		}
	}
	if s.Search {
		_, err := sweep.Search(ctx, runner, sweep.SearchConfig{
			Axis: s.Axis, Template: levels[0], Lo: spec.Lo, Hi: spec.Hi, Precision: s.Precision, Criteria: s.Criteria,
			OnPoint: func(p sweep.Point, ok bool, why string) { onPoint(p, &Meets{OK: ok, Why: why}) },
		})
		return err
	}
	_, err := sweep.Run(ctx, runner, levels, sweep.Config{
		Axis: s.Axis, Knee: sweep.KneeConfig{K: s.KneeK}, Criteria: s.Criteria, Saturation: s.Saturation,
		OnPoint: func(p sweep.Point) { onPoint(p, nil) },
	})
	return err
}

// probe measures the target's capacity in requests/s: one level of the
// run's NumPrompts sent at once (under its concurrency cap), its completed
// requests over its duration. It writes no records, and draws its prompts
// from another seed than the sweep's, so a prefix cache warmed by the
// probe serves none of the sweep's requests.
func (r *runner) probe(ctx context.Context) (*runlog.CapacityProbe, error) {
	c := r.cfg
	lv := c.Load
	lv.RequestRate, lv.Label = 0, "capacity probe"
	col := newCollector(c.Stats, false, nil, nil)
	if err := r.lr.probe(ctx, lv, col); err != nil {
		return nil, fmt.Errorf("capacity probe: %w", err)
	}
	sum := col.acc.Summary()
	if sum.Completed == 0 || sum.RequestThroughput <= 0 {
		return nil, fmt.Errorf("capacity probe: no request completed (%d failed); give the levels", sum.Failed)
	}
	return &runlog.CapacityProbe{RequestThroughput: sum.RequestThroughput, Completed: sum.Completed, Failed: sum.Failed,
		DurationS: sum.DurationS, Fractions: c.Sweep.Fractions}, nil
}

// roundRate keeps three significant digits of a rate, so levels read as
// "rate=12.3", not "rate=12.345678".
func roundRate(r float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64)
	return v
}

// finish writes the end line and analyses the levels.
func (r *runner) finish(ctx context.Context, runErr error) (*Result, error) {
	m := r.meta
	r.srv.close() // every scrape is in the file before its end line
	m.Levels = make([]runlog.Level, len(r.data))
	for _, d := range r.data {
		if d.index >= 0 && d.index < len(m.Levels) {
			m.Levels[d.index] = d.level
		}
	}
	if r.file != nil {
		if err := r.file.end(m); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := r.fan.error(); err != nil {
		if n := r.written(); r.file != nil {
			err = fmt.Errorf("%w (%d records written)", err, n)
		}
		runErr = errors.Join(err, ignoreCancel(runErr))
	}
	if len(r.data) == 0 {
		if runErr == nil {
			runErr = ErrNoLevelRan
		}
		return nil, runErr
	}
	order, snaps := r.srv.snapshots()
	res := analyze(m, r.data, r.cfg.ReadingSpeedMs, sessionOptions{}, serverData{order, snaps})
	res.RecordsPath, res.ResultPath, res.RecordsWritten = r.recordsPath, r.resultPath, r.written()
	res.Sent = r.sent
	res.Interrupted = r.cancelled || (errors.Is(runErr, context.Canceled) && r.interrupted(ctx))
	if r.keep != nil {
		res.Records = r.keep.recs
	}
	r.lr.finish(res)
	if res.Interrupted && errors.Is(runErr, context.Canceled) {
		runErr = nil // the Result says so
	}
	return res, runErr
}

// ignoreCancel drops the cancellation a failed sink caused.
func ignoreCancel(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (r *runner) written() int {
	if r.file == nil {
		return 0
	}
	return r.file.w.Count()
}

func (r *runner) close() {
	if r.file != nil {
		r.file.close()
	}
	if r.lr != nil {
		r.lr.close()
	}
}

// sharedPrefixTokens is how many leading prompt tokens each request of the
// run's workload shares with others by design (0 for sessions, whose
// shared history the session findings judge, and for a cache-busted run).
func sharedPrefixTokens(c *Config) int {
	wo := c.Workload.Options
	switch {
	case c.Sessions != nil || wo.CacheBust:
		return 0
	case strings.EqualFold(wo.DatasetName, "prefix-repetition"):
		return wo.PrefixRepetitionPrefixLen
	case strings.EqualFold(wo.DatasetName, "random"):
		return wo.RandomPrefixLen + wo.SharedPrefixLen
	}
	return wo.SharedPrefixLen
}

// repeatLevels is lv, or n copies of it labelled "repeat i/n" with Repeat
// set when n > 1.
func repeatLevels(lv runlog.Level, n int) []runlog.Level {
	if n <= 1 {
		return []runlog.Level{lv}
	}
	out := make([]runlog.Level, n)
	for i := range out {
		out[i] = lv
		out[i].Repeat = i + 1
		out[i].Label = fmt.Sprintf("repeat %d/%d", i+1, n)
	}
	return out
}
