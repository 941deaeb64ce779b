// Package loadgen paces requests: an open-loop arrival schedule (absolute, so
// it never drifts), an optional in-flight cap (closed loop), warm-up requests
// excluded from results, and cancellation. It produces one runlog.Record per
// request sent — records written always equal requests sent.
//
// Run is safe to call from one goroutine at a time per Config; it owns every
// goroutine it starts and returns only after all of them have finished.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// Call sends one prepared request and fills rec (Sent, chunks, status…).
// It must return when ctx is done, recording the request as cancelled.
type Call func(ctx context.Context, rec *runlog.Record)

// Target prepares request i before its send time, so building a body never
// delays a send. The load generator is its only caller, from one goroutine.
type Target interface {
	Prepare(i int) (Call, error)
}

// TargetFunc adapts a function to Target.
type TargetFunc func(i int) (Call, error)

// Prepare calls f(i).
func (f TargetFunc) Prepare(i int) (Call, error) { return f(i) }

var _ Target = TargetFunc(nil)

// Schedule yields absolute arrival offsets from the start of the measured
// phase, in non-decreasing order.
type Schedule interface {
	Next() time.Duration
}

// Config is one load level.
type Config struct {
	// Schedule gives arrival times; nil means unpaced: send as fast as the
	// in-flight cap allows (closed loop, or everything at once).
	Schedule Schedule
	// MaxConcurrency caps in-flight requests; 0 means no cap.
	MaxConcurrency int
	// NumPrompts is how many measured requests to send; 0 means until
	// Duration ends.
	NumPrompts int
	// Duration stops sending new requests after this long; 0 means none.
	// Requests in flight at the deadline run to completion.
	Duration time.Duration
	// NumWarmups requests are sent first, flagged Warmup, excluded from
	// results; the measured schedule starts when they have all finished.
	NumWarmups int
	// Level tags every record.
	Level int
	// IDPrefix prefixes request ids (x-request-id).
	IDPrefix string
	// FirstIndex is the dataset index of the first request (so levels of a
	// sweep do not resend the same prompts).
	FirstIndex int
	// Now is the monotonic clock in ns from the run start.
	Now func() int64
	// Precise finishes each wait for a scheduled arrival with a blocking
	// OS sleep instead of the runtime timer, whose wake-ups are only
	// millisecond-accurate on Linux. It costs one thread parked for up to
	// preciseSpan per arrival; leave it off under testing/synctest, whose
	// fake clock an OS sleep does not advance.
	Precise bool
	// Shard and Shards make the level one shard's share of a load split
	// over several processes: of its requests in order (the warm-ups, then
	// the measured arrivals) it sends those whose place k in their phase
	// has k mod Shards == Shard, and skips the others without waiting for
	// them. Every shard draws the whole Schedule and numbers the requests
	// as one process would, the skipped indexes being the other shards',
	// so the shards together send what one process sends, at the same
	// times. Shards ≤ 1: every request.
	Shard, Shards int
	// StartAt, when Synced, is when the measured phase begins, ns on the
	// Now clock: Run waits for it after the warm-ups, and the schedule's
	// offsets count from it rather than from the warm-ups' end, so that
	// processes agreeing on the instant share one schedule. An instant
	// already past starts at once, the arrivals due meanwhile late (their
	// send lag shows it).
	StartAt int64
	Synced  bool
	// OnStart, when set, is called once, from Run's goroutine, as the
	// measured phase begins: after the warm-ups and the wait for StartAt.
	OnStart func()
	// OnRecord receives every finished record, from the request's goroutine
	// (so it must be safe for concurrent use). The record is reused after
	// OnRecord returns: copy what you keep.
	OnRecord func(*runlog.Record)
	// Halt, when closed, ends the sending as Duration does: no further
	// request is sent and those in flight finish (nil: never).
	Halt <-chan struct{}
}

// Result describes what the level did.
type Result struct {
	// Sent counts requests sent (warm-ups included); each produced a record.
	Sent int
	// Warmups counts warm-up requests sent.
	Warmups int
	// Delayed counts arrivals that were due while the in-flight cap was
	// full, so they left late (their wait is in their response time).
	Delayed int
	// Start and End bound the measured phase, ns from the run start.
	Start, End int64
	// Stopped says why sending stopped early ("" when it ran to the end).
	Stopped StopReason
	// Next is the request index after the last one the level sent or, as
	// another shard's, skipped (FirstIndex + Sent for a whole level).
	Next int
}

// StopReason says why a run stopped sending before its last request.
type StopReason string

// Stop reasons.
const (
	StopCancelled StopReason = "cancelled" // ctx was cancelled (Ctrl-C, a saturation stop)
	StopDuration  StopReason = "duration"  // the time limit was reached
	StopHalted    StopReason = "halted"    // Config.Halt was closed
)

var recPool = sync.Pool{New: func() any { return new(runlog.Record) }}

// Run executes one level. It returns an error only for a request that
// could not be prepared (a workload problem); per-request failures are
// records. When ctx is cancelled, in-flight requests are cancelled and
// recorded, and Run returns the partial Result with a nil error.
func Run(ctx context.Context, cfg Config, t Target) (res Result, err error) {
	if cfg.Now == nil {
		return Result{}, errors.New("loadgen: Config.Now is nil")
	}
	if cfg.NumPrompts <= 0 && cfg.Duration <= 0 {
		return Result{}, errors.New("loadgen: need NumPrompts or Duration")
	}
	g := &group{onRecord: cfg.OnRecord, now: cfg.Now}
	idx := cfg.FirstIndex
	defer func() { res.Next = idx }()
	// mine says whether the k-th request of a phase is this shard's.
	mine := func(k int) bool { return cfg.Shards <= 1 || k%cfg.Shards == cfg.Shard }

	// Warm-ups: closed loop at the level's concurrency (or all at once).
	if cfg.NumWarmups > 0 {
		var slots chan struct{}
		if cfg.MaxConcurrency > 0 {
			slots = make(chan struct{}, cfg.MaxConcurrency)
		}
		for w := 0; w < cfg.NumWarmups && ctx.Err() == nil; w++ {
			if !mine(w) {
				idx++
				continue
			}
			call, err := t.Prepare(idx)
			if err != nil {
				g.wait()
				return res, err
			}
			if slots != nil {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					continue
				}
			}
			rec := newRecord(cfg, idx, true)
			idx++
			rec.Intended = cfg.Now()
			res.Sent++
			res.Warmups++
			g.start(ctx, call, rec, slots)
		}
		g.wait()
	}

	var slots chan struct{}
	if cfg.MaxConcurrency > 0 {
		slots = make(chan struct{}, cfg.MaxConcurrency)
	}
	res.Start = cfg.Now()
	if cfg.Synced {
		if !waitUntil(ctx, cfg, cfg.StartAt) {
			res.Stopped, res.End = StopCancelled, cfg.Now()
			return res, nil
		}
		res.Start = cfg.StartAt
	}
	if cfg.OnStart != nil {
		cfg.OnStart()
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		tm := time.NewTimer(cfg.Duration)
		defer tm.Stop()
		deadline = tm.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
loop:
	for n := 0; cfg.NumPrompts <= 0 || n < cfg.NumPrompts; n++ {
		if ctx.Err() != nil {
			res.Stopped = StopCancelled
			break
		}
		if !mine(n) {
			// Another shard's arrival: its place in the schedule passes.
			if cfg.Schedule != nil {
				cfg.Schedule.Next()
			}
			idx++
			continue
		}
		call, err := t.Prepare(idx)
		if err != nil {
			g.wait()
			res.End = cfg.Now()
			return res, fmt.Errorf("request %d: %w", idx, err)
		}
		var intended int64
		if cfg.Schedule != nil {
			intended = res.Start + int64(cfg.Schedule.Next())
			wait := intended - cfg.Now()
			if cfg.Precise {
				// Coarse timer to just before the send time; the rest below.
				wait -= int64(preciseSpan)
			}
			if wait > 0 {
				timer.Reset(time.Duration(wait))
				select {
				case <-timer.C:
				case <-deadline:
					res.Stopped = StopDuration
					break loop
				case <-cfg.Halt:
					res.Stopped = StopHalted
					break loop
				case <-ctx.Done():
					res.Stopped = StopCancelled
					break loop
				}
			}
			if cfg.Precise {
				if rest := intended - cfg.Now(); rest > 0 {
					osSleep(time.Duration(rest))
				}
			}
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			default:
				if cfg.Schedule != nil {
					res.Delayed++
				}
				select {
				case slots <- struct{}{}:
				case <-deadline:
					res.Stopped = StopDuration
					break loop
				case <-cfg.Halt:
					res.Stopped = StopHalted
					break loop
				case <-ctx.Done():
					res.Stopped = StopCancelled
					break loop
				}
			}
		}
		select {
		case <-deadline:
			if slots != nil {
				<-slots
			}
			res.Stopped = StopDuration
			break loop
		case <-cfg.Halt:
			if slots != nil {
				<-slots
			}
			res.Stopped = StopHalted
			break loop
		default:
		}
		if cfg.Schedule == nil {
			intended = cfg.Now()
		}
		rec := newRecord(cfg, idx, false)
		idx++
		rec.Intended = intended
		res.Sent++
		g.start(ctx, call, rec, slots)
	}
	g.wait()
	res.End = cfg.Now()
	return res, nil
}

// waitUntil waits until the Now clock reads at (ns), finishing with an OS
// sleep when cfg.Precise; false when ctx ended first.
func waitUntil(ctx context.Context, cfg Config, at int64) bool {
	wait := at - cfg.Now()
	if cfg.Precise {
		wait -= int64(preciseSpan)
	}
	if wait > 0 {
		t := time.NewTimer(time.Duration(wait))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	if cfg.Precise {
		if rest := at - cfg.Now(); rest > 0 {
			osSleep(time.Duration(rest))
		}
	}
	return ctx.Err() == nil
}

func newRecord(cfg Config, idx int, warm bool) *runlog.Record {
	rec := recPool.Get().(*runlog.Record)
	chunks := rec.Chunks[:0]
	*rec = runlog.Record{Chunks: chunks, Level: cfg.Level, Warmup: warm}
	rec.ID = cfg.IDPrefix + strconv.Itoa(idx)
	return rec
}

// group owns the request goroutines of one level.
type group struct {
	wg       sync.WaitGroup
	onRecord func(*runlog.Record)
	now      func() int64
}

func (g *group) start(ctx context.Context, call Call, rec *runlog.Record, slots chan struct{}) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		id := rec.ID
		call(ctx, rec)
		if rec.ID == "" {
			rec.ID = id
		}
		if rec.Sent == 0 && rec.End == 0 {
			// A Call that returned without sending (cancelled before
			// start) still yields a record.
			rec.Sent, rec.End = g.now(), g.now()
			if rec.ErrorClass == "" {
				rec.ErrorClass, rec.Error = runlog.ErrCancelled, "cancelled before sending"
			}
		}
		if slots != nil {
			<-slots
		}
		if g.onRecord != nil {
			g.onRecord(rec)
		}
		recPool.Put(rec)
	}()
}

func (g *group) wait() { g.wg.Wait() }
