package run

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/workload"
)

// wall runs levels in wall-clock time: requests paced by loadgen, sent by
// the Backend to a server (or to the embedded simulator on loopback).
type wall struct {
	cfg     *Config
	backend Backend
	ds      workload.Dataset
	// probe is the capacity probe's dataset (another seed), made on demand.
	probeOpts workload.Options
	now       func() int64
	prefix    string
	next      int // dataset index of the next request
	embedded  bool
	stopEmb   func()
	// tokenizer and tokenizerID say how the prompts were sized.
	tokenizer, tokenizerID string
	simulated              runlog.Engine
	targetName             string
	// base is the target's root URL (the embedded simulator's when none
	// was given).
	base string
	// byLengths holds the datasets of levels with lengths of their own (a
	// Pareto sweep), by (input, output).
	byLengths lengthDatasets
	// zero is the run clock's zero (now's), on the wall clock too; sync
	// the start a sharded or synchronised run agreed (shard.go).
	zero time.Time
	sync syncStart
}

// dataset is the requests of level lv: the run's, or for a level with
// lengths of its own, prompts of them sized as the run's were.
func (w *wall) dataset(lv runlog.Level) (workload.Dataset, error) {
	return w.byLengths.dataset(w.cfg, w.probeOpts, lv, w.ds)
}

// embeddedInfo describes the embedded simulator once it is up.
type embeddedInfo struct {
	url, summary string
	desc         runlog.Engine
}

// startEmbedded starts the simulated engine on an ephemeral loopback port.
func startEmbedded(ctx context.Context, cfg *Config, log *slog.Logger) (*embeddedInfo, func(), error) {
	srv, err := simserve.New(cfg.Engine, simserve.Options{Logger: log})
	if err != nil {
		return nil, nil, engineError(err)
	}
	url, stop, err := srv.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("embedded simulator: %w", err)
	}
	desc := srv.Describe()
	return &embeddedInfo{url: url, desc: desc, summary: DescribeEngine(desc)}, func() {
		if err := stop(); err != nil && ctx.Err() == nil {
			cfg.note("embedded simulator: %v", err)
		}
	}, nil
}

// DescribeEngine is a one-line "model on GPU" of an engine's description
// (or a cluster file's pools, as its "pools" says them).
func DescribeEngine(d runlog.Engine) string {
	if p := poolsText(metaPools(&d)); p != "" {
		// A cluster file's pools, each of its own engine.
		return "simulated pools " + p
	}
	fields := d.Fields()
	var parts []string
	for _, k := range []string{"model", "gpu", "tensor_parallel_size", "dtype", "scheduler", "publish", "moderation_delay_ms"} {
		i := slices.IndexFunc(fields, func(f runlog.EngineField) bool { return f.Key == k })
		if i >= 0 && fmt.Sprint(fields[i].Value) != "" {
			parts = append(parts, fmt.Sprintf("%s=%v", k, fields[i].Value))
		}
	}
	if len(parts) == 0 {
		return "simulated engine"
	}
	return "simulated " + strings.Join(parts, " ")
}

// openWall builds the workload, resolves the target (starting the embedded
// simulator when there is no URL), settles the model and calibrates the
// prompts. levels is how many levels get distinct requests, maxConc the
// highest concurrency cap of any (it sizes the connection pool).
func openWall(ctx context.Context, cfg *Config, levels, maxConc int, log *slog.Logger) (*wall, error) {
	w := &wall{cfg: cfg, stopEmb: func() {}, targetName: cfg.Target.Name}
	if err := cfg.checkShard(); err != nil {
		return nil, err
	}
	lv := &cfg.Load
	// The workload first: a bad file should fail before a server starts.
	wo := cfg.Workload.Options
	wo.Seed = cfg.Seed
	if lv.NumPrompts > 0 {
		// Distinct requests for every level, so a level never resends an
		// earlier level's prompts (a prefix cache would serve them).
		wo.NumPrompts = (lv.NumPrompts + lv.NumWarmups) * max(levels, 1)
	}
	w.probeOpts = wo
	if cfg.Sessions == nil { // a session workload brings its own
		if err := w.workload(wo); err != nil {
			return nil, err
		}
	}

	base := cfg.Target.BaseURL
	if base == "" {
		emb, stop, err := startEmbedded(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		w.stopEmb, w.embedded, w.simulated, w.targetName = stop, true, emb.desc, "embedded-sim"
		base = emb.url
		cfg.note("no server given: benchmarking the embedded simulator (%s) at %s", emb.summary, base)
	}
	if w.targetName == "" {
		w.targetName = base
	}
	start := time.Now()
	w.now = func() int64 { return int64(time.Since(start)) }
	w.zero = start
	maxConns := max(lv.MaxConcurrency, maxConc)
	n := lv.NumPrompts
	if s := cfg.Sessions; s != nil {
		// A session holds at most one request in flight.
		maxConns, n = s.MaxConcurrent, s.NumSessions
		if n <= 0 {
			n = s.size()
		}
	}
	if maxConns == 0 {
		maxConns = min(max(n, 64), 16384)
	}
	var err error
	w.base = base
	if w.backend, err = cfg.Target.Open(base, maxConns, w.now); err != nil {
		w.close()
		return nil, err
	}
	model, notes, err := w.backend.Resolve(ctx, cfg.Target.ReadyWait)
	if err != nil {
		w.close()
		return nil, err
	}
	for _, n := range notes {
		cfg.note("%s %s", cmp.Or(cfg.Target.ModelName, "model"), n)
	}
	if cfg.Target.Model == "" {
		cfg.Target.Model = model
	}
	if cfg.Sessions != nil {
		w.tokenizerID = tokenizerID(wo.Tokenizer, calNotRun, cfg.Target.Model)
	} else if err := w.calibrate(ctx, wo); err != nil {
		w.close()
		return nil, err
	}
	if ic, ok := w.backend.(idleCloser); ok {
		// The model check's and calibration's connections would each hold
		// a llama-server thread through the run: the run opens its own.
		ic.CloseIdle()
	}
	w.prefix = cfg.Target.RequestIDPrefix
	if w.prefix == "" {
		w.prefix = "goodput-" + runID() + "-"
	}
	if err := w.synchronise(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// workload builds the run's dataset and fits the level to it (a trace
// replays once; without oversampling a file's rows are sent once each).
func (w *wall) workload(wo workload.Options) error {
	cfg, lv := w.cfg, &w.cfg.Load
	ds, err := buildDataset(cfg, wo)
	if err != nil {
		return err
	}
	w.ds = ds
	if isTrace(ds) && lv.Ramp != nil {
		return configErr("Ramp", "the trace dataset brings its own arrival times: no ramp")
	}
	if isTrace(ds) && lv.NumPrompts == 0 && lv.DurationS == 0 {
		lv.NumPrompts = max(ds.Len()-lv.NumWarmups, 1)
	}
	if wo.NoOversample && !isTrace(ds) && lv.NumPrompts+lv.NumWarmups > ds.Len() && isFileDataset(wo.DatasetName) {
		n := max(ds.Len()-lv.NumWarmups, 1)
		cfg.note("each row once (no oversampling): the dataset has %d requests: sending %d (after %d warm-ups), not %d", ds.Len(), n, lv.NumWarmups, lv.NumPrompts)
		lv.NumPrompts = n
	}
	if isTrace(ds) && lv.NumPrompts+lv.NumWarmups > ds.Len() {
		// A trace is replayed once: past its end the arrival times would
		// start over in the past and fire at once.
		n := max(ds.Len()-lv.NumWarmups, 1)
		cfg.note("the trace has %d requests: replaying %d (after %d warm-ups), not %d", ds.Len(), n, lv.NumWarmups, lv.NumPrompts)
		lv.NumPrompts = n
	}
	if isTrace(ds) && lv.Label == "" {
		lv.Label = traceLabel(wo.TraceSpeedup)
	}
	return nil
}

// calibrate fits synthesized prompts to the server's counts (when the
// workload asks and the backend can count) and names the tokenizer.
func (w *wall) calibrate(ctx context.Context, wo workload.Options) error {
	cfg := w.cfg
	counting, can := w.backend.(Counting)
	if !cfg.Workload.Calibrate || !synthesizes(wo) || !can {
		w.tokenizerID = tokenizerID(wo.Tokenizer, calNotRun, cfg.Target.Model)
		return nil
	}
	cal, err := calibrate(ctx, counting, wo.Tokenizer)
	if err != nil {
		return err
	}
	if !cal.cal.IsZero() {
		wo.Calibration = cal.cal
		w.probeOpts.Calibration = cal.cal
		if w.ds, err = buildDataset(cfg, wo); err != nil {
			return err
		}
	}
	w.tokenizer = cal.describe(wo.Tokenizer)
	if cal.method == calNone {
		cfg.note("prompt lengths not calibrated: %s", cal.why)
	}
	lv := cfg.Load
	n := lv.NumPrompts + lv.NumWarmups
	if n == 0 || lv.DurationS > 0 {
		n = w.ds.Len()
	}
	if wn := contextWarning(w.ds, n, cal.contextLen, cal.contextFrom); wn != "" {
		cfg.note("%s", wn)
	}
	if cal.counter != nil && n <= maxExactPrompts {
		// The server can count: make every prompt exact, not just
		// calibrated, when the run is small enough to hold them.
		ds, checked, off, err := exactPrompts(ctx, cal.counter, w.ds, n, cal.parallel)
		if err != nil {
			return err
		}
		w.ds = ds
		w.tokenizer += fmt.Sprintf("; each prompt fitted to /tokenize (%d checked, %d not exact)", checked, off)
	}
	w.tokenizerID = tokenizerID(wo.Tokenizer, cal.method, cfg.Target.Model)
	return nil
}

// tokenizerID names the tokenizer the prompts were sized with, as vLLM's
// tokenizer_id: the tokenizer given; else, when the prompts were
// calibrated to (or checked against) the server's counts, the server's own,
// named by the model as vLLM names it; else goodput's approximation.
func tokenizerID(tok string, m calMethod, model string) string {
	switch {
	case tok != "":
		return tok
	case m == calTokenize || m == calProbes:
		return model
	}
	return "approx"
}

func (w *wall) close() {
	if w.sync.stop != nil {
		w.sync.stop()
	}
	if w.backend != nil {
		w.backend.Close()
	}
	w.stopEmb()
}

// describe states the target: its name, wire and model, how the prompts
// were sized, and the embedded simulator's engine when it is the target.
func (w *wall) describe(m *runlog.Meta) string {
	c := w.cfg
	m.Target, m.Backend, m.Endpoint, m.Model = w.targetName, c.Target.API, c.Target.Endpoint, c.Target.Model
	m.Tokenizer, m.Simulated, m.NoStream = w.tokenizer, w.simulated, c.Target.NoStream
	if c.Sessions != nil {
		m.Dataset = c.Sessions.name()
	} else {
		m.Dataset = w.ds.Name()
	}
	return c.Target.API
}

// scrapes starts polling the server's metrics (Config.Scrape) on the run
// clock.
func (w *wall) scrapes(ctx context.Context, file func(*runlog.Scrape) error) (*serverScrapes, error) {
	c := w.cfg
	return startScrapes(ctx, c.Scrape, w.base, w.now, file, func(s string) { c.note("%s", s) })
}

// runLevel sends level idx's requests (its own dataset's, for a level with
// lengths of its own) through sink.
func (w *wall) runLevel(ctx context.Context, idx int, lv runlog.Level, sink Sink, h *halt) (levelRun, error) {
	ds, err := w.dataset(lv)
	if err != nil {
		return levelRun{}, err
	}
	if ic, ok := w.backend.(idleCloser); ok && lv.Repeat > 1 {
		// A repeat starts on fresh connections, as a rerun would.
		ic.CloseIdle()
	}
	return w.send(ctx, idx, lv, ds, sink, h)
}

// probe sends the capacity probe's level: the probe dataset's requests,
// while the sweep's levels still start at the sweep dataset's first.
func (w *wall) probe(ctx context.Context, lv runlog.Level, sink Sink) error {
	ds, err := w.probeDataset()
	if err != nil {
		return err
	}
	// Through a fan-out of its own: records finish concurrently.
	next := w.next
	out, err := w.send(ctx, -1, lv, ds, &fanout{run: []Sink{sink}}, nil)
	w.next = next
	if err == nil && out.stopped {
		err = context.Cause(ctx)
	}
	return err
}

// finish names the tokenizer the prompts were sized with.
func (w *wall) finish(res *Result) { res.TokenizerID = w.tokenizerID }

// progressFollower is a Watch that can show more of the level's state on
// its line (the precision reached so far), read when it draws.
type progressFollower interface{ Follow(func() string) }

// send sends one level's requests through sink. ds is the level's
// dataset (the run's, or the probe's); h, when set, may halt its sending.
func (w *wall) send(ctx context.Context, idx int, lv runlog.Level, ds workload.Dataset, sink Sink, h *halt) (levelRun, error) {
	cfg := w.cfg
	sh := cfg.Shard
	total := sh.Share(lv.NumPrompts)
	if total > 0 {
		total += sh.Share(lv.NumWarmups)
	}
	var watch Watch
	if cfg.Hooks.Level != nil {
		watch = cfg.Hooks.Level(ctx, total, lv.Duration())
		if f, ok := watch.(progressFollower); ok && h != nil {
			f.Follow(h.progress)
		}
	}
	// Every level draws its gaps from the run's seed (common random
	// numbers, as in virtual time): each level is the same arrival pattern
	// scaled to its rate, so offered load rises with the level's rate.
	var sched loadgen.Schedule
	switch {
	case isTrace(ds):
		sched = &traceSchedule{ds: ds, i: w.next + lv.NumWarmups}
	case lv.Ramp != nil:
		ramp, err := workload.NewRamp(workload.RampStrategy(lv.Ramp.Strategy), lv.Ramp.StartRPS, lv.Ramp.EndRPS, lv.Burstiness, lv.NumPrompts, cfg.Seed)
		if err != nil {
			return levelRun{}, &ConfigError{Field: "Ramp", Err: err}
		}
		sched = ramp
	case lv.RequestRate > 0:
		sched = workload.NewArrivals(lv.RequestRate, lv.Burstiness, cfg.Seed)
	}
	onRecord := sink.Record
	if watch != nil {
		onRecord = func(r *runlog.Record) error {
			err := sink.Record(r)
			_ = watch.Record(r)
			return err
		}
	}
	var bounds loadgen.RetryBounds
	target := loadgen.TargetFunc(func(i int) (loadgen.Call, error) {
		call, err := w.backend.Prepare(w.prefix+strconv.Itoa(i), ds.Request(i%ds.Len()))
		if err != nil {
			return nil, err
		}
		if p := cfg.Retry; p != nil && p.Max > 0 {
			call = p.WithRetries(call, func(r *runlog.Record) { _ = onRecord(r) }, w.now, uint64(cfg.Seed), &bounds)
		}
		if watch == nil {
			return call, nil
		}
		return func(ctx context.Context, rec *runlog.Record) {
			watch.Sent()
			call(ctx, rec)
		}, nil
	})
	warmConns := lv.MaxConcurrency
	if warmConns <= 0 {
		warmConns = min(lv.NumPrompts, defaultWarm)
	}
	w.warm(ctx, sh.Share(warmConns))
	cpu := startCPU(w.embedded)
	lc := loadgen.Config{
		Schedule: sched, MaxConcurrency: sh.Share(lv.MaxConcurrency), NumPrompts: lv.NumPrompts, Precise: true,
		Duration: lv.Duration(), NumWarmups: lv.NumWarmups, Level: idx, IDPrefix: w.prefix,
		FirstIndex: w.next, Now: w.now, OnRecord: func(r *runlog.Record) { _ = onRecord(r) }, Halt: h.done(),
	}
	if sh != nil {
		lc.Shard, lc.Shards = sh.Index, sh.Count
	}
	if idx >= 0 {
		lc.StartAt, lc.Synced = w.sync.take()
	}
	lc.OnStart = func() {
		if lc.Synced {
			// Waiting for the start is no work: measure from it.
			cpu = startCPU(w.embedded)
		}
		if d := lv.Duration(); d > 0 {
			bounds.Until.Store(w.now() + int64(d))
		}
	}
	res, err := loadgen.Run(ctx, lc, target)
	retryNotes(cfg, &bounds, lv.Duration())
	if watch != nil {
		watch.Stop()
	}
	if sh != nil {
		w.next = res.Next // the other shards' requests are skipped, not sent
	} else {
		w.next += res.Sent
	}
	if err != nil {
		return levelRun{}, &ConfigError{Field: "DatasetName", Err: fmt.Errorf("workload: %w", err)}
	}
	lv.DelayedArrivals = res.Delayed
	lv.ClientCPU = cpu.share()
	if sh != nil {
		lv = sh.Level(lv, res.Sent)
	}
	return levelRun{level: lv, sent: res.Sent, stopped: res.Stopped == loadgen.StopCancelled}, nil
}

// retryNotes says what the bounds on a level's retries cut: a wait the
// server asked for that was too long to believe, and retries the level's
// end left unsent.
func retryNotes(cfg *Config, b *loadgen.RetryBounds, d time.Duration) {
	if n := b.Capped.Load(); n > 0 {
		cfg.note("the server asked %d times to wait longer than %v before a retry (up to %v): goodput waits %v at most, as the OpenAI and Anthropic SDKs do",
			n, loadgen.MaxRetryAfter, time.Duration(b.Longest.Load()), loadgen.MaxRetryAfter)
	}
	if n := b.Dropped.Load(); n > 0 {
		cfg.note("%d retries not sent: they were due after the level's duration (%v) ended; their failed attempts stand", n, d)
	}
}

// How many connections are warmed ahead of a level without a concurrency
// cap, the most ahead of any, and how long warming may take.
const (
	defaultWarm = 16
	maxWarm     = 1024
	warmWait    = 10 * time.Second
)

// warm opens n kept-alive connections before a measured window when the
// backend can (see wire.Client.Warm): the requests then go out on
// connections in hand, as a real client's do. A failure is a note: the
// requests open their own, with the connect time kept apart.
func (w *wall) warm(ctx context.Context, n int) {
	wm, ok := w.backend.(warmer)
	if !ok || n <= 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, warmWait)
	defer cancel()
	if _, err := wm.Warm(wctx, min(n, maxWarm)); err != nil && ctx.Err() == nil {
		w.cfg.note("connections not warmed before the run: %v", err)
	}
}

// probeDataset is the capacity probe's workload: the run's, drawn from
// another seed so a prefix cache warmed by the probe serves none of the
// sweep's requests.
func (w *wall) probeDataset() (workload.Dataset, error) {
	o := w.probeOpts
	o.Seed++
	return buildDataset(w.cfg, o)
}

// buildDataset makes the dataset, with a custom dataset's output length
// applied.
func buildDataset(cfg *Config, wo workload.Options) (workload.Dataset, error) {
	ds, err := workload.FromOptions(wo)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		// The file the user named is not there or cannot be read.
		return nil, setting.Errorf("DatasetPath", pe.Path, "%v", pe.Err)
	case err != nil:
		return nil, &ConfigError{Field: "Dataset", Err: err}
	}
	if n := cfg.Workload.OutputTokens; n > 0 && strings.EqualFold(wo.DatasetName, "custom") {
		ds = customOutput{ds, n}
	}
	if ds.Len() == 0 {
		return nil, configErr("DatasetName", "the dataset %s has no requests", wo.DatasetName)
	}
	return ds, nil
}

// customOutput asks every request of a custom dataset for n output tokens.
type customOutput struct {
	workload.Dataset
	n int
}

func (d customOutput) Shape(i int) workload.Request { return d.fix(d.Dataset.Shape(i)) }

func (d customOutput) Request(i int) workload.Request { return d.fix(d.Dataset.Request(i)) }

func (d customOutput) fix(r workload.Request) workload.Request {
	r.OutputTokens, r.OutputRecorded = d.n, false
	return r
}

// traceSchedule replays a dataset's own arrival times.
type traceSchedule struct {
	ds workload.Dataset
	i  int
}

func (t *traceSchedule) Next() time.Duration {
	r := t.ds.Shape(t.i % max(t.ds.Len(), 1))
	t.i++
	return r.Arrival
}

var _ loadgen.Schedule = (*workload.Ramp)(nil)

func isTrace(ds workload.Dataset) bool {
	return ds.Len() > 0 && ds.Shape(0).HasArrival
}

// isFileDataset reports whether the dataset's requests are a file's rows
// (sent at most once without oversampling), not generated.
func isFileDataset(name string) bool {
	switch strings.ToLower(name) {
	case "custom", "sharegpt", "lengths":
		return true
	}
	return false
}

// traceLabel names a level whose arrivals come from a trace, not the rate.
func traceLabel(speedup float64) string {
	if speedup <= 0 || speedup == 1 {
		return "trace replay"
	}
	return fmt.Sprintf("trace replay ×%g", speedup)
}

func runID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
