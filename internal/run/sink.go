package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// Sink receives the run's finished records. The run's one fan-out calls
// every Sink in turn, one record at a time, so a Sink needs no lock of its
// own against the others; the record is reused after Record returns, so
// copy what you keep. An error stops the run (it is returned by Run).
type Sink interface {
	Record(r *runlog.Record) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(r *runlog.Record) error

// Record calls f.
func (f SinkFunc) Record(r *runlog.Record) error { return f(r) }

// fanout is the run's one fan-out of finished records: the run's own sinks
// (records file, kept records, the caller's), then the current level's
// (its collector, the caller's watch). The first error cancels the run;
// later records still reach every sink, so no summary loses a record the
// file has.
type fanout struct {
	mu     sync.Mutex
	run    []Sink
	level  []Sink
	err    error
	cancel context.CancelCauseFunc
}

func (f *fanout) Record(r *runlog.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.run {
		f.fail(s.Record(r))
	}
	for _, s := range f.level {
		f.fail(s.Record(r))
	}
	return nil
}

func (f *fanout) fail(err error) {
	if err != nil && f.err == nil {
		f.err = err
		if f.cancel != nil {
			f.cancel(err)
		}
	}
}

// setLevel replaces the level's sinks.
func (f *fanout) setLevel(sinks ...Sink) {
	f.mu.Lock()
	f.level = slices.DeleteFunc(sinks, func(s Sink) bool { return s == nil })
	f.mu.Unlock()
}

// error is the first sink error.
func (f *fanout) error() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// recordsFile writes every record to the records file.
type recordsFile struct {
	path string
	f    *os.File
	w    *runlog.Writer
}

func (s *recordsFile) Record(r *runlog.Record) error {
	if err := s.w.Write(r); err != nil {
		return fmt.Errorf("writing records to %s: %w", s.path, err)
	}
	return nil
}

// end writes the end line (the levels as they ran) and syncs the file.
func (s *recordsFile) end(m *runlog.Meta) error {
	if err := s.w.WriteEnd(m); err != nil {
		return fmt.Errorf("records file %s: %w", s.path, err)
	}
	// A pipe or a terminal (records to /dev/stdout, as a Kubernetes pod
	// writes them) cannot be synced, and need not be.
	if err := s.f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("records file %s: %w", s.path, err)
	}
	return nil
}

func (s *recordsFile) close() { _ = s.f.Close() }

// keeper keeps a copy of every record (Output.KeepRecords).
type keeper struct{ recs []runlog.Record }

func (k *keeper) Record(r *runlog.Record) error {
	var c runlog.Record
	r.CopyTo(&c)
	k.recs = append(k.recs, c)
	return nil
}

// collector is one level's analysis inputs, filled as its records pass:
// the summary, the findings' per-request tracker, the engine's queue times,
// and (in a sweep) the saturation monitor that stops the level early.
type collector struct {
	acc     *stats.Accumulator
	tracker *findings.Tracker
	queue   stats.Values // the engine's queue times, ns
	mon     *sweep.Monitor
	// sessions keeps the records of session turns, for the session
	// summaries (none outside a session workload).
	sessions []runlog.Record
	stopped  string
	stop     func() // ends the level early (the monitor's verdict)
	// start and end span the measured requests seen (first send, last
	// end); spanned says one was.
	start, end int64
	spanned    bool
	// longest is the longest any request of the level was in flight
	// (send to end, ns), warm-ups and failures included: no duration the
	// server observed for one of them can be longer; longestTTFT the
	// longest time to a first token any of them saw, which bounds the
	// server's own TTFT the same way.
	longest, longestTTFT int64
	// arrivals counts the measured first attempts, first and last their
	// intended sends (ns): the load the schedule offered, whatever the
	// level's nominal rate.
	arrivals    int
	first, last int64
	// prec judges the level's --target-precision (nil: none asked for).
	prec *precisionWatch
	// trim, when set, keeps the level's records (kept) to summarise them
	// again without the warm-up transient (--steady-state auto); so is
	// the summary's options.
	trim bool
	kept []runlog.Record
	so   stats.Options
	// breakdowns collect the level's typed breakdowns (the TTFT split,
	// the replicas, the gateway's classes, ...), each reading the records
	// it needs.
	breakdowns breakdown.Set
}

// newCollector starts a level's collector; mon may be nil. The same
// collector type serves a run as it goes and a report of its records, so
// both reach the same verdict.
func newCollector(so stats.Options, exact bool, mon *sweep.Monitor, stop func()) *collector {
	c := &collector{tracker: findings.NewTracker(), mon: mon, stop: stop, so: so,
		breakdowns: breakdown.NewSet(breakdown.Options{SLO: so.SLO, Percentiles: so.Percentiles})}
	if exact {
		c.acc = stats.NewExactAccumulator(so)
	} else {
		c.acc = stats.NewAccumulator(so)
	}
	return c
}

func (c *collector) Record(r *runlog.Record) error {
	c.acc.Add(r)
	if c.prec != nil {
		c.prec.Record(r)
	}
	if c.trim {
		var k runlog.Record
		r.CopyTo(&k)
		c.kept = append(c.kept, k)
	}
	c.tracker.Add(r)
	// Sent is 0 for the first sends of a run in virtual time; a record
	// never sent can only loosen the bound.
	if r.End > r.Sent {
		c.longest = max(c.longest, r.End-r.Sent)
	}
	if d, ok := r.TTFT(); ok {
		c.longestTTFT = max(c.longestTTFT, int64(d))
	}
	if !r.Warmup {
		if !c.spanned || r.Sent < c.start {
			c.start = r.Sent
		}
		if !c.spanned || r.End > c.end {
			c.end = r.End
		}
		c.spanned = true
		if r.Attempt <= 1 {
			if c.arrivals == 0 || r.Intended < c.first {
				c.first = r.Intended
			}
			if c.arrivals == 0 || r.Intended > c.last {
				c.last = r.Intended
			}
			c.arrivals++
		}
	}
	if !r.Warmup && r.OK() && r.Server != nil && !r.Server.QueueUnknown {
		c.queue.Add(float64(r.Server.QueueNs))
	}
	c.breakdowns.Add(r)
	// An agent job's requests are no conversation's turns: the jobs
	// breakdown (package breakdown) summarises them instead.
	if r.SessionID != "" && r.JobNode == "" && !r.Warmup {
		var k runlog.Record
		r.CopyTo(&k)
		k.GeneratedText = ""
		keepTimes(&k)
		c.sessions = append(c.sessions, k)
	}
	if c.mon != nil && c.stopped == "" {
		if why := c.mon.Observe(r); why != "" {
			c.stopped = why
			if c.stop != nil {
				c.stop()
			}
		}
	}
	return nil
}

// offered is the arrival rate the level's schedule delivered, req/s: the
// gaps between its first attempts' intended sends (0 with fewer than two).
func (c *collector) offered() float64 {
	if c.arrivals < 2 || c.last <= c.first {
		return 0
	}
	return float64(c.arrivals-1) / (float64(c.last-c.first) / 1e9)
}

// keepTimes cuts r's chunks down to the ones its TTFT, TTP and E2E are
// timed by (the first token, the first visible one, the last), which is all
// the session summaries and rules read: a kept turn then costs a few dozen
// bytes of chunks, not 24 bytes a chunk. Its output token count is kept.
func keepTimes(r *runlog.Record) {
	if len(r.Chunks) <= 3 {
		return
	}
	r.CompletionTokens = r.OutputTokens()
	first, vis, last := -1, -1, -1
	for i, ch := range r.Chunks {
		if ch.Tokens <= 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		if vis < 0 && ch.Visible {
			vis = i
		}
		last = i
	}
	kept := r.Chunks[:0]
	for i, ch := range r.Chunks {
		if i == first || i == vis || i == last {
			kept = append(kept, ch)
		}
	}
	r.Chunks = append([]runlog.Chunk(nil), kept...) // frees the copy's full array
}

// data is the level's analysis input.
func (c *collector) data(idx int, lv runlog.Level) levelData {
	if c.stopped != "" {
		lv.Stopped = c.stopped
	}
	if c.prec != nil {
		lv.Precision = c.prec.outcome()
	}
	bl := c.breakdowns.Level()
	sum := c.acc.Summary()
	if st := breakdown.Get[*breakdown.Steady](bl); c.trim && st != nil && st.TransientN > 0 && !st.Drifting {
		sum = c.trimmed(st.TransientN)
		st.Trimmed = true
	}
	return levelData{index: idx, level: lv, summary: sum, tracker: c.tracker, queue: &c.queue, sessions: c.sessions,
		start: c.start, end: c.end, spanned: c.spanned, longest: c.longest, longestTTFT: c.longestTTFT, offered: c.offered(),
		breakdowns: bl}
}

// trimmed summarises the kept records without the level's first n
// measured, successful requests in send order (the warm-up transient) and
// every request sent before the last of them; a caveat says so.
func (c *collector) trimmed(n int) stats.Summary {
	recs := slices.Clone(c.kept)
	slices.SortStableFunc(recs, func(a, b runlog.Record) int { return cmp.Compare(a.Sent, b.Sent) })
	var cut int64
	seen := 0
	for i := range recs {
		if r := &recs[i]; !r.Warmup && r.OK() {
			if seen++; seen == n {
				cut = r.Sent
				break
			}
		}
	}
	acc := stats.NewExactAccumulator(c.so)
	dropped := 0
	for i := range recs {
		if r := &recs[i]; !r.Warmup && r.Sent <= cut {
			dropped++
			continue
		}
		acc.Add(&recs[i])
	}
	s := acc.Summary()
	s.Warnings = append(s.Warnings, fmt.Sprintf("steady state: the warm-up transient's %d requests (sent in the first %.1f s) are left out of these figures (--steady-state auto)",
		dropped, float64(cut-recs[0].Sent)/1e9))
	return s
}

// filtered is w through the output filter, if any.
func (o *Output) filtered(w io.Writer) io.Writer {
	if o.Filter == nil {
		return w
	}
	return o.Filter(w)
}
