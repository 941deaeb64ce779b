package watch

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/workload"
)

// Backend is what a probe needs of a target's client: the one bench
// measures with (a wire.Client, as target.Target opens it), declared here
// so that a watch stands on the target settings alone, not on a run.
type Backend interface {
	// Resolve settles the model against the server, giving a starting
	// server up to wait to answer; notes are for the user.
	Resolve(ctx context.Context, wait time.Duration) (model string, notes []string, err error)
	// Prepare builds request id as a call that streams it into a Record.
	Prepare(id string, r workload.Request) (func(ctx context.Context, rec *runlog.Record), error)
	// Close releases connections.
	Close()
}

var _ Backend = (*wire.Client)(nil)

// Options are what a Watcher needs besides its Config. Only Open is
// required.
type Options struct {
	// Open makes the backend of a target, stamping records with now (ns on
	// the watch's clock). It is called once per target, by New.
	Open func(t Target, now func() int64) (Backend, error)
	// Registerer receives the metrics (nil: a private registry, so the
	// metrics are only counted).
	Registerer prometheus.Registerer
	// RecordsDir, when set, gets one records file per target (see
	// RecordsPath).
	RecordsDir string
	// Filter passes every byte written to records files (credentials
	// blanked); nil writes as is.
	Filter func(io.Writer) io.Writer
	// Clock is the time source (nil: the system clock).
	Clock Clock
	// Version is goodput's version, for the records' meta lines.
	Version string
	// Note receives messages for the user: a model not resolved, a
	// records file continued or moved aside (nil: dropped).
	Note func(string)
	// OnProbe, when set, is called after each probe with its result, on
	// the target's goroutine.
	OnProbe func(Result)
}

// Result is one finished probe.
type Result struct {
	// Target names the target; Model is its model label.
	Target, Model string
	// Outcome is OutcomeOK, OutcomeSLOMiss, OutcomeResolve, OutcomePrepare
	// or the record's error class.
	Outcome string
	// Counted says the probe counts toward the SLO (not rate limited, not
	// cancelled, not our own failure to build it); Good that it met it.
	Counted, Good bool
	// Record is the probe's measurement; nil when no request was sent.
	Record *runlog.Record
	// Err says why no request was sent (Outcome resolve_error or
	// prepare_error).
	Err error
}

// TargetSummary is what a Watcher has seen of one target so far.
type TargetSummary struct {
	Target, Model string
	// Probes counts finished probes; Outcomes them by outcome.
	Probes   int
	Outcomes map[string]int
	// Missed counts probes skipped while an earlier one still ran.
	Missed int
	// Burn is the burn rate over each of Windows (by label) that holds a
	// counted probe.
	Burn map[string]float64
}

// Watcher probes a Config's targets. See the package documentation.
type Watcher struct {
	opt     Options
	clock   Clock
	start   time.Time // zero of the watch clock
	metrics *Metrics
	probers []*prober
}

// errProbeTimeout is the cause of a probe's context that ran out.
var errProbeTimeout = errors.New("probe timeout")

// New opens every target's backend and registers the metrics.
func New(cfg *Config, o Options) (*Watcher, error) {
	if o.Open == nil {
		return nil, errors.New("watch: Options.Open is required")
	}
	if cfg == nil || len(cfg.Targets) == 0 {
		return nil, errors.New("watch: no targets")
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.Note == nil {
		o.Note = func(string) {}
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := NewMetrics(reg, o.Clock)
	if err != nil {
		return nil, err
	}
	w := &Watcher{opt: o, clock: o.Clock, start: o.Clock.Now(), metrics: m}
	now := func() int64 { return int64(w.clock.Now().Sub(w.start)) }
	for i := range cfg.Targets {
		t := cfg.Targets[i]
		b, err := o.Open(t, now)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		p := &prober{w: w, t: t, b: b, counts: map[string]int{}}
		p.state = &targetState{name: t.Name, slo: t.SLO, objective: t.Objective, budget: NewBudget(t.Objective), model: labelValue(t.Model)}
		if t.Model == "" {
			p.state.model = modelUnknown
		}
		if t.Probe.Prompt == "" {
			// Fresh text every probe, and every watch start, so no prefix
			// cache serves a probe's prompt: TTFT includes the prefill.
			h := fnv.New64a()
			h.Write([]byte(t.Name))
			seed := int64(h.Sum64()) ^ w.start.UnixNano()
			p.data, err = workload.NewRandom(workload.RandomConfig{InputLen: t.Probe.PromptTokens, OutputLen: t.Probe.MaxTokens, NumPrompts: 1 << 16, Seed: seed})
			if err != nil {
				b.Close()
				w.Close()
				return nil, fmt.Errorf("target %s: %w", t.Name, err)
			}
		}
		m.track(p.state)
		w.probers = append(w.probers, p)
	}
	return w, nil
}

// Metrics returns the watcher's metrics.
func (w *Watcher) Metrics() *Metrics { return w.metrics }

// Run probes every target on its schedule (see MaxJitter for how probes
// are spread) until ctx is done, then returns; in-flight probes are
// cancelled (recorded with class cancelled, outside the SLO). The error
// is a records file that could not be written (probing and metrics went
// on regardless).
func (w *Watcher) Run(ctx context.Context) error {
	start := w.clock.Now()
	var wg sync.WaitGroup
	for i, p := range w.probers {
		s := newSchedule(start, p.t.Name, i, len(w.probers), p.t.Interval)
		wg.Go(func() { p.loop(ctx, s) })
	}
	wg.Wait()
	return w.recordsErr()
}

// Once probes every target once, all at the same time (they are different
// vendors), and returns the results in config order. The error is a
// records file that could not be written.
func (w *Watcher) Once(ctx context.Context) ([]Result, error) {
	out := make([]Result, len(w.probers))
	due := w.clock.Now()
	var wg sync.WaitGroup
	for i, p := range w.probers {
		wg.Go(func() { out[i] = p.probe(ctx, due) })
	}
	wg.Wait()
	return out, w.recordsErr()
}

// Summary returns what each target's probes have shown so far.
func (w *Watcher) Summary() []TargetSummary {
	now := w.clock.Now()
	out := make([]TargetSummary, 0, len(w.probers))
	for _, p := range w.probers {
		_, model := p.state.labels()
		s := TargetSummary{Target: p.t.Name, Model: model, Outcomes: map[string]int{}, Burn: map[string]float64{}}
		p.mu.Lock()
		for k, v := range p.counts {
			s.Outcomes[k] = v
			s.Probes += v
		}
		s.Missed = p.missed
		p.mu.Unlock()
		for _, win := range Windows {
			if rate, _, _, ok := p.state.budget.Burn(now, win.D); ok {
				s.Burn[win.Label] = rate
			}
		}
		out = append(out, s)
	}
	return out
}

// Close releases the backends and closes the records files.
func (w *Watcher) Close() error {
	var errs []error
	for _, p := range w.probers {
		p.b.Close()
		if p.file != nil {
			errs = append(errs, p.file.close())
		}
	}
	return errors.Join(errs...)
}

func (w *Watcher) recordsErr() error {
	var errs []error
	for _, p := range w.probers {
		p.mu.Lock()
		errs = append(errs, p.fileErr)
		p.mu.Unlock()
	}
	return errors.Join(errs...)
}

// prober is one target's probing state, owned by the goroutine probing it.
type prober struct {
	w     *Watcher
	t     Target
	b     Backend
	state *targetState
	data  *workload.Random // nil with a fixed prompt

	resolved bool
	seq      int64 // probes prepared, for ids and prompts
	file     *recordsFile
	capNoted bool // a rate limit's wait was cut (and the user told)

	mu      sync.Mutex // guards what Summary reads
	counts  map[string]int
	missed  int
	fileErr error // the first records failure
}

// loop probes on schedule s until ctx is done.
func (p *prober) loop(ctx context.Context, s schedule) {
	var k int64
	for {
		due := s.due(k)
		if p.w.clock.SleepUntil(ctx, due) != nil || ctx.Err() != nil {
			return
		}
		r := p.probe(ctx, due)
		if ctx.Err() != nil {
			return
		}
		// A rate limit that said when to come back is obeyed: the probes
		// due before then are skipped, not sent into the limit. But only
		// for a while: a vendor asking for a day would blind the watch.
		from := p.w.clock.Now()
		if rec := r.Record; rec != nil && rec.ErrorClass == runlog.ErrHTTP429 && rec.RetryAfterNs > 0 {
			from = from.Add(p.backOff(time.Duration(rec.RetryAfterNs)))
		}
		var missed int64
		k, missed = s.next(k, from)
		if missed > 0 {
			p.skipped(int(missed))
		}
	}
}

// backOff is how long the probes wait after a rate limit that asked for
// wait: at most loadgen.MaxRetryAfter, said once per target.
func (p *prober) backOff(wait time.Duration) time.Duration {
	if wait <= loadgen.MaxRetryAfter {
		return wait
	}
	if !p.capNoted {
		p.capNoted = true
		p.w.opt.Note(fmt.Sprintf("%s: rate limited, asked to wait %v: probing again after %v at most, so the watch keeps seeing the target", p.t.Name, wait, loadgen.MaxRetryAfter))
	}
	return loadgen.MaxRetryAfter
}

// skipped counts n probes skipped while one ran.
func (p *prober) skipped(n int) {
	vendor, model := p.state.labels()
	p.w.metrics.missed.WithLabelValues(vendor, model).Add(float64(n))
	p.mu.Lock()
	p.missed += n
	p.mu.Unlock()
}

// probe sends one probe due at due and accounts for it.
func (p *prober) probe(ctx context.Context, due time.Time) Result {
	if !p.resolved {
		if err := p.resolve(ctx); err != nil {
			if ctx.Err() != nil {
				return p.finish(Result{Outcome: string(runlog.ErrCancelled), Err: err})
			}
			p.w.opt.Note(fmt.Sprintf("%s: %v (tried again at the next probe)", p.t.Name, err))
			// An unreachable target is what a watch is for: its records
			// say so too, not only its metrics.
			p.write(p.failedRecord(due, err))
			return p.finish(Result{Outcome: OutcomeResolve, Counted: true, Err: err})
		}
	}
	id := fmt.Sprintf("goodput-watch-%s-%d-%d", p.t.Name, p.w.start.Unix(), p.seq)
	req := p.request(p.seq)
	p.seq++
	call, err := p.b.Prepare(id, req)
	if err != nil {
		// Our request, not the vendor's answer: no budget spent.
		p.w.opt.Note(fmt.Sprintf("%s: cannot build the probe: %v", p.t.Name, err))
		return p.finish(Result{Outcome: OutcomePrepare, Err: err})
	}
	pctx, cancel := context.WithTimeoutCause(ctx, p.t.Timeout, errProbeTimeout)
	rec := &runlog.Record{ID: id, Intended: int64(due.Sub(p.w.start))}
	call(pctx, rec)
	timedOut := context.Cause(pctx) == errProbeTimeout
	cancel()
	if rec.ErrorClass == runlog.ErrCancelled && timedOut && ctx.Err() == nil {
		// The backend saw a cancelled context; the cause was our timeout.
		rec.ErrorClass, rec.Error = runlog.ErrTimeout, fmt.Sprintf("no complete answer within the probe timeout (%v)", p.t.Timeout)
	}
	r := Result{Record: rec}
	r.Outcome, r.Counted, r.Good = Outcome(rec, p.t.SLO)
	p.write(rec)
	return p.finish(r)
}

// failedRecord is the record of a probe due at due that failed before
// its request was sent (the model could not be resolved): classed as a
// connection failure, a timeout or a bad answer.
func (p *prober) failedRecord(due time.Time, err error) *runlog.Record {
	now := int64(p.w.clock.Now().Sub(p.w.start))
	rec := &runlog.Record{ID: fmt.Sprintf("goodput-watch-%s-%d-%d", p.t.Name, p.w.start.Unix(), p.seq),
		Intended: int64(due.Sub(p.w.start)), Sent: now, End: now, Error: "resolving the model: " + err.Error()}
	p.seq++ // the id is this probe's
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		rec.ErrorClass = runlog.ErrTimeout
	case errors.As(err, &ne), errors.Is(err, syscall.ECONNREFUSED):
		rec.ErrorClass = runlog.ErrConnect
	default:
		rec.ErrorClass = runlog.ErrBadResponse
	}
	return rec
}

// resolve settles the target's model with the server.
func (p *prober) resolve(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, p.t.Timeout)
	defer cancel()
	model, notes, err := p.b.Resolve(rctx, 0)
	if err != nil {
		return err
	}
	for _, n := range notes {
		p.w.opt.Note(p.t.Name + ": " + n)
	}
	p.resolved = true
	if p.t.Model == "" && model != "" {
		p.state.mu.Lock()
		p.state.model = labelValue(model)
		p.state.mu.Unlock()
	}
	return nil
}

// request is probe k's request.
func (p *prober) request(k int64) workload.Request {
	if p.data == nil {
		return workload.Request{Index: int(k), Prompt: p.t.Probe.Prompt, OutputTokens: p.t.Probe.MaxTokens}
	}
	r := p.data.Request(int(k % int64(p.data.Len())))
	r.Index = int(k)
	return r
}

// finish counts r in the metrics, the budget and the summary.
func (p *prober) finish(r Result) Result {
	r.Target = p.t.Name
	_, r.Model = p.state.labels()
	if r.Counted {
		p.state.budget.Add(p.w.clock.Now(), r.Good)
	}
	p.w.metrics.observe(p.state, &r)
	p.mu.Lock()
	p.counts[r.Outcome]++
	p.mu.Unlock()
	if p.w.opt.OnProbe != nil {
		p.w.opt.OnProbe(r)
	}
	return r
}

// write appends rec to the target's records file, opening it at the
// first record (the meta line names the resolved model).
func (p *prober) write(rec *runlog.Record) {
	if p.w.opt.RecordsDir == "" {
		return
	}
	p.mu.Lock()
	failed := p.fileErr != nil
	p.mu.Unlock()
	if failed {
		return
	}
	var err error
	if p.file == nil {
		p.file, err = openRecords(p.w.opt.RecordsDir, p.t.Name, p.meta(), p.w.start, p.w.opt.Filter, p.w.opt.Note)
	}
	if err == nil {
		err = p.file.write(rec)
	}
	if err != nil {
		p.w.opt.Note(fmt.Sprintf("%s: records not written from here on: %v", p.t.Name, err))
		p.mu.Lock()
		p.fileErr = fmt.Errorf("%s: records: %w", p.t.Name, err)
		p.mu.Unlock()
	}
}

// meta is the records file's meta line for the target.
func (p *prober) meta() *runlog.Meta {
	t := p.t
	target := redact.URLString(t.BaseURL)
	if t.BaseURL == Embedded {
		target = "embedded-sim"
	}
	_, model := p.state.labels()
	probe := fmt.Sprintf("prompt_tokens=%d", t.Probe.PromptTokens)
	if t.Probe.Prompt != "" {
		probe = fmt.Sprintf("prompt=%dB", len(t.Probe.Prompt))
	}
	probe += fmt.Sprintf(",max_tokens=%d", t.Probe.MaxTokens)
	if t.Probe.ReasoningEffort != "" {
		probe += ",reasoning_effort=" + t.Probe.ReasoningEffort
	}
	if len(t.Probe.ExtraBody) > 0 {
		probe += ",extra_body"
	}
	return &runlog.Meta{
		Tool: "goodput", Version: p.w.opt.Version, Command: "watch", Target: target,
		Backend: t.Backend, Endpoint: t.Endpoint, Model: model, Dataset: "watch-probe:" + probe,
		Levels: []runlog.Level{{RequestRate: 1 / t.Interval.Seconds(), Burstiness: 1, MaxConcurrency: 1,
			Label: "probe every " + shortDuration(t.Interval)}},
		Analysis: &runlog.Analysis{SLO: t.SLO.String()},
		Metadata: map[string]string{"vendor": t.Name},
	}
}

// shortDuration is d as time.Duration writes it, without trailing zero
// units: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
