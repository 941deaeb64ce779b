package simserve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// Options tunes the server around the engine. The zero value is usable.
type Options struct {
	// ServedModelName is the model id the server answers to and reports in
	// responses and /v1/models; "" means the engine's model id.
	ServedModelName string
	// Aliases are further model ids accepted in requests (compared
	// case-insensitively, like ServedModelName), e.g. a short name.
	Aliases []string
	// Registerer receives the vLLM-named metrics; nil means a fresh
	// registry private to this server. The global registry is never used.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics exposes; nil means Registerer when it is a
	// Gatherer (a *prometheus.Registry is both).
	Gatherer prometheus.Gatherer
	// NaturalOutputMedian is the median natural output length in tokens of
	// requests sent without ignore_eos (see sim.NaturalLength); 0 means 200.
	NaturalOutputMedian int
	// ChatTokensPerMessage is how many tokens the simulated chat template
	// adds to each message's content tokens; 0 (the default) counts content
	// only, so prompts synthesized with tokenize.Approx are exact on chat
	// as on completions.
	ChatTokensPerMessage int
	// RetryAfter is the Retry-After header sent with a 429 (admission
	// rejection); 0 means 1 s.
	RetryAfter time.Duration
	// Logger receives operational messages; nil means slog.Default.
	Logger *slog.Logger
	// IdleTimeout closes a kept-alive client connection idle this long
	// (Start only), so idle clients cannot hold connections forever; 0
	// means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Slowdown is a factor (> 0, at most MaxSlowdown) by which every engine
	// iteration is stretched on the wall clock from SlowdownAfter on: a
	// vendor degraded on purpose (see Server.SetSlowdown). 0 means none.
	Slowdown float64
	// SlowdownAfter is how long after the server is built the Slowdown
	// starts by itself; 0 means at once.
	SlowdownAfter time.Duration
	// EmbeddingDimensions is the length of /v1/embeddings vectors when a
	// request does not ask for one; 0 means DefaultEmbeddingDimensions.
	EmbeddingDimensions int
	// MaxStoredResponses bounds how many /v1/responses answers are kept
	// for previous_response_id (least recently used evicted first); 0
	// means DefaultMaxStoredResponses.
	MaxStoredResponses int
}

// DefaultIdleTimeout is how long Start keeps an idle client connection.
const DefaultIdleTimeout = 2 * time.Minute

// Server is the OpenAI-compatible wall-clock face of the simulated engine.
//
// One goroutine, the one running [Server.Run], owns the engine: HTTP
// handlers hand it submissions and aborts through a channel, it calls
// Engine.Step, sleeps until the iteration's end on a timer, and then hands
// each request its tokens. Handing over never blocks on a client: each
// request has a small mailbox (its undelivered tokens, merged into one
// piece per visibility when the handler has not taken them yet, so its
// memory stays constant) plus a one-slot wake-up channel. A client that
// stops reading therefore only stalls its own handler in Write; the engine
// keeps generating its tokens at the engine's pace (as vLLM does), they
// pile up as a count in the mailbox, and go out as one larger chunk when the
// client reads again, or are dropped when the client disconnects, which
// aborts the request in the engine and frees its KV blocks.
//
// Server is safe for concurrent use by any number of HTTP handlers.
type Server struct {
	opt         Options
	eng         *sim.Engine   // the one engine; nil when fleet drives several
	fleet       cluster.Fleet // the replicas behind a router (NewFleet); nil: eng
	engCfg      sim.Config    // the (first) engine's configuration, resolved
	model       string
	aliases     []string
	maxModelLen int
	blockTokens int
	toolShare   float64 // sim.Config.ToolCallShare
	toolTokens  int     // tokens per tool call
	describe    runlog.Engine
	m           *metrics   // replica 0's series (the one engine's)
	ms          []*metrics // each replica's series, engine="i+1" in a fleet; ms[0] is m
	repDescribe []runlog.Engine
	gatherer    prometheus.Gatherer
	log         *slog.Logger

	base    time.Time // time zero of the server clock
	cmds    chan command
	stopped chan struct{} // closed when Run returns
	started atomic.Bool
	seq     atomic.Uint64
	slow    slowdown
	stored  *responseStore // /v1/responses answers, for previous_response_id

	// Owned by the Run goroutine.
	live      map[string]*stream
	evbuf     []pendingEvent
	touched   []*stream // streams to wake after an iteration's delivery
	added     []*stream // added to the engine since the last Step
	lastEnd   int64     // end of the last iteration (engine time, server clock ns)
	stepStart int64     // start of the last iteration
	lastAdd   int64     // latest arrival handed to the engine
	lag       lagLog    // the host falling behind the engine's schedule
	stretched bool      // some iteration ran slowed down (see stretch)
	fl        fleetState

	// onDepart, when set (tests and benchmarks), is called by handlers
	// after each token chunk is flushed, with the stream's sequence number,
	// the iteration end it was scheduled for and the clock reading after
	// the flush (server ns).
	onDepart func(seq uint64, scheduled, departed int64)
	// onAbort, when set (tests), is called by the engine goroutine when it
	// aborts a request in the engine.
	onAbort func(id string)
}

// pendingEvent is a copy of an engine event, kept while the iteration that
// produced it is still "running" on the wall clock.
type pendingEvent struct {
	ev      sim.Event
	timing  runlog.ServerTiming
	replica int // the replica whose iteration produced it (0: the one engine)
}

type command struct {
	abort   bool
	st      *stream
	req     sim.Request
	session string // a fleet's session-affinity key (SessionHeader)
}

// resyncLag is how far behind its schedule the engine goroutine may wake
// before the engine timeline is re-anchored to the wall clock. Below it,
// the next iteration starts at the previous one's scheduled end, so timer
// jitter never accumulates into the simulated timeline; above it (the host
// is overloaded), the timeline restarts from now rather than replaying a
// backlog of iterations with no sleep between them.
const resyncLag = 5 * time.Millisecond

// lagWarnEvery is the least time between two warnings that the host fell
// behind: the first is logged at once, later ones summarise the interval.
const lagWarnEvery = 30 * time.Second

// lagLog counts the times the engine goroutine woke too late to keep its
// schedule, and rate-limits the warning about it.
type lagLog struct {
	warnedAt int64         // server ns of the last warning; 0: none yet
	late     int           // late iterations since the last warning
	worst    time.Duration // the worst lateness since the last warning
}

// note counts one late iteration at now and says whether to warn (with the
// count and worst lateness since the last warning).
func (l *lagLog) note(now int64, behind time.Duration) (warn bool, late int, worst time.Duration) {
	l.late++
	l.worst = max(l.worst, behind)
	if l.warnedAt != 0 && now-l.warnedAt < int64(lagWarnEvery) {
		return false, 0, 0
	}
	late, worst = l.late, l.worst
	l.warnedAt, l.late, l.worst = max(now, 1), 0, 0
	return true, late, worst
}

// idlePoll is how often a busy engine with nothing runnable is stepped
// again, so that time-based admission (max queue time) still fires.
const idlePoll = 5 * time.Millisecond

// New builds the engine from cfg and a server around it. Call Run (or use
// Start) to make it answer.
func New(cfg sim.Config, opt Options) (*Server, error) {
	if err := checkOptions(opt); err != nil {
		return nil, err
	}
	eng, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	s, err := newServer(opt, cfg, eng.Config(), []runlog.Engine{eng.Describe()}, false)
	if err != nil {
		return nil, err
	}
	s.eng = eng
	return s, nil
}

// checkOptions rejects the Options no server can run with.
func checkOptions(opt Options) error {
	if err := validateSlowdown(opt); err != nil {
		return err
	}
	if opt.EmbeddingDimensions < 0 || opt.EmbeddingDimensions > MaxEmbeddingDimensions {
		return fmt.Errorf("simserve: EmbeddingDimensions %d: want 0 (the default) to %d", opt.EmbeddingDimensions, MaxEmbeddingDimensions)
	}
	if opt.MaxStoredResponses < 0 {
		return fmt.Errorf("simserve: MaxStoredResponses %d: want ≥ 0", opt.MaxStoredResponses)
	}
	return nil
}

// newServer builds the server around engines described by describes (one
// per replica, the first's settings naming the model and its limits); cfg
// is the first engine's configuration as given, resolved as it resolved it.
// fleet says the engines are a fleet's replicas, whose engine labels are
// their numbers from 1, as the client's records and reports number them;
// a lone engine is engine="0", as vLLM's is.
func newServer(opt Options, cfg, resolved sim.Config, describes []runlog.Engine, fleet bool) (*Server, error) {
	s := &Server{
		opt:         opt,
		engCfg:      resolved,
		describe:    describes[0],
		repDescribe: describes,
		log:         opt.Logger,
		base:        time.Now(),
		cmds:        make(chan command, 1024),
		stopped:     make(chan struct{}),
		live:        map[string]*stream{},
		stored:      newResponseStore(cmp.Or(opt.MaxStoredResponses, DefaultMaxStoredResponses), maxStoredBytes),
	}
	if opt.Slowdown != 0 {
		if opt.SlowdownAfter > 0 {
			s.slow.schedule(int64(opt.SlowdownAfter), opt.Slowdown)
		} else {
			s.slow.set(opt.Slowdown)
		}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.model = opt.ServedModelName
	if s.model == "" {
		s.model = engineModelName(cfg, s.describe)
	}
	s.aliases = append([]string{s.model}, opt.Aliases...)
	if opt.ServedModelName == "" {
		s.aliases = append(s.aliases, engineAliases(cfg, s.describe)...)
	}
	s.maxModelLen = engineMaxModelLen(cfg, s.describe)
	s.blockTokens = engineBlockSize(cfg, s.describe)
	s.toolShare, s.toolTokens = cfg.ToolCallShare, cfg.ToolCallTokens
	if s.toolTokens <= 0 {
		s.toolTokens = sim.DefaultToolCallTokens
	}
	reg := opt.Registerer
	gat := opt.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg = r
		if gat == nil {
			gat = r
		}
	}
	if gat == nil {
		g, ok := reg.(prometheus.Gatherer)
		if !ok {
			return nil, errors.New("simserve: Options.Gatherer is required when Registerer is not a Gatherer")
		}
		gat = g
	}
	s.gatherer = gat
	s.ms = make([]*metrics, len(describes))
	for i := range s.ms {
		var err error
		engine := "0"
		if fleet {
			engine = strconv.Itoa(i + 1)
		}
		if s.ms[i], err = newMetrics(reg, s.model, engine); err != nil {
			return nil, err
		}
	}
	s.m = s.ms[0]
	if err := s.m.registerSlowdown(reg, s.model, s.Slowdown); err != nil {
		return nil, err
	}
	return s, nil
}

// Model returns the served model id.
func (s *Server) Model() string { return s.model }

// Describe returns the engine's description (model, GPU, TP, limits), for
// reports and the startup banner; a fleet's is its first replica's plus
// "replicas", their number.
func (s *Server) Describe() runlog.Engine { return s.describe }

// clock returns the server clock: ns since the server was built, on the
// monotonic clock.
func (s *Server) clock() int64 { return int64(time.Since(s.base)) }

// Run drives the engine until ctx is done, then fails every request still
// in flight (streams end; waiting handlers answer 503) and returns nil. It
// must be called exactly once; handlers wait for it. Run returns an error
// only when called twice.
func (s *Server) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("simserve: Run called twice")
	}
	defer s.shutdown()
	if s.fleet != nil {
		return s.runFleet(ctx)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	busyBefore := false
	for {
		if !s.eng.Busy() {
			busyBefore = false
			if !s.idle(ctx) {
				return nil
			}
			continue
		}
		start := s.nextStart(busyBefore, "engine")
		busyBefore = true
		end, evs := s.eng.Step(start)
		// A slowdown stretches the iteration on the wall clock; the engine
		// starts its next one at the stretched end, as if it had taken
		// that long.
		end = s.stretch(start, end)
		s.evbuf = s.evbuf[:0]
		s.takeEvents(0, evs)
		s.admitAdded()
		wait := end - s.clock()
		if end == start && len(evs) == 0 {
			// Busy but nothing runnable: wait for news or poll.
			end, wait = s.clock()+int64(idlePoll), int64(idlePoll)
		}
		if wait > 0 {
			timer.Reset(time.Duration(wait))
		wait:
			for {
				select {
				case <-ctx.Done():
					return nil
				case c := <-s.cmds:
					s.apply(c)
				case <-timer.C:
					break wait
				}
			}
		}
		s.lastEnd = end
		s.deliver(end)
		s.drain()
	}
}

// idle waits, with nothing to run, for the next command and applies it
// and any queued behind it; false when ctx ended first.
func (s *Server) idle(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case c := <-s.cmds:
		s.apply(c)
		s.drain()
		return true
	}
}

// nextStart is when the next step starts, and sets stepStart to it: at
// the previous step's scheduled end (no drift), unless the engine was idle
// (busyBefore false) or the host is far behind, when it is now (warning
// that the host cannot keep the simulated what's schedule); never before
// the latest arrival.
func (s *Server) nextStart(busyBefore bool, what string) int64 {
	start := s.lastEnd
	if now := s.clock(); !busyBefore || now-start > int64(resyncLag) {
		if busyBefore {
			if warn, late, worst := s.lag.note(now, time.Duration(now-start)); warn {
				s.log.Warn("simserve: this host cannot keep the simulated "+what+"'s schedule, so token times run late "+
					"and latencies measured against it include the host's own delay (goodput sim measures in virtual time, without it)",
					"late_iterations", late, "worst", worst.Round(time.Microsecond), "model", s.model)
			}
		}
		start = now
	}
	start = max(start, s.lastAdd)
	s.stepStart = start
	return start
}

// takeEvents keeps the events of replica's iteration (0: the one engine)
// in evbuf for delivery at its end, but answers rejections at once:
// admission decisions are made as the step starts.
func (s *Server) takeEvents(replica int, evs []sim.Event) {
	for _, ev := range evs {
		if ev.Kind == sim.EventRejected {
			if st := s.live[ev.ID]; st != nil {
				delete(s.live, st.id)
				s.finished(st)
				st.retryAfterNs = ev.RetryAfterNs
				st.fail(429, ev.Err)
				st.wake()
			}
			continue
		}
		if s.fleet != nil {
			if st := s.live[ev.ID]; st != nil {
				s.moved(st, replica)
			}
		}
		pe := pendingEvent{ev: ev, replica: replica}
		if ev.Timing != nil {
			pe.timing = *ev.Timing
			pe.ev.Timing = nil
		}
		s.evbuf = append(s.evbuf, pe)
	}
}

// admitAdded lets the streams of the requests added before this step
// start: they passed admission control unless it just rejected them.
func (s *Server) admitAdded() {
	for i, st := range s.added {
		if s.live[st.id] == st {
			st.admit()
			st.wake()
		}
		s.added[i] = nil
	}
	s.added = s.added[:0]
}

// drain applies every command already queued, without blocking.
func (s *Server) drain() {
	for {
		select {
		case c := <-s.cmds:
			s.apply(c)
		default:
			return
		}
	}
}

// apply hands one submission or abort to the engine.
func (s *Server) apply(c command) {
	if s.fleet != nil {
		s.applyFleet(c)
		return
	}
	st := c.st
	if c.abort {
		if s.live[st.id] == st {
			delete(s.live, st.id)
			s.eng.Abort(max(s.clock(), s.lastAdd), st.id)
			s.m.success["abort"].Inc()
			if s.onAbort != nil {
				s.onAbort(st.id)
			}
		}
		return
	}
	// The engine's time only moves forward: a request stamped before the
	// current iteration started is added at that start.
	at := max(st.arrival, s.stepStart, s.lastAdd)
	if err := s.eng.Add(at, c.req); err != nil {
		st.fail(400, err.Error())
		return
	}
	s.lastAdd = at
	s.live[st.id] = st
	s.added = append(s.added, st)
}

// deliver hands the finished iteration's events to their requests.
func (s *Server) deliver(end int64) {
	s.deliverEvents(end)
	// Metrics first, so that a client holding its answer sees it counted.
	s.m.observeSnapshot(s.eng.Snapshot())
	s.wakeTouched()
}

// deliverEvents hands the events in evbuf, of iterations that ended at
// end, to their requests, observing their replicas' latency histograms.
func (s *Server) deliverEvents(end int64) {
	for i := range s.evbuf {
		pe := &s.evbuf[i]
		st := s.live[pe.ev.ID]
		if st == nil {
			continue // aborted meanwhile
		}
		m := s.ms[pe.replica]
		switch pe.ev.Kind {
		case sim.EventTokens:
			if st.firstAt == 0 {
				st.firstAt = end
				m.ttft.Observe(seconds(end - st.arrival))
			} else {
				m.itl.Observe(seconds(end - st.lastAt))
			}
			st.lastAt = end
			st.push(delivery{at: end, tokens: pe.ev.Tokens, hidden: pe.ev.Hidden}, pe.ev.Cached)
			s.touched = append(s.touched, st)
		case sim.EventFinished:
			delete(s.live, st.id)
			t := pe.timing
			if s.stretched {
				// The engine timed its first and last tokens at the
				// unstretched ends of their iterations; the wall clock
				// saw them at the stretched ones.
				t.PrefillNs = st.firstAt - (t.ArrivalNs + t.QueueNs)
				t.DecodeNs = st.lastAt - st.firstAt
			}
			m.e2e.Observe(seconds(end - st.arrival))
			m.queue.Observe(seconds(t.QueueNs))
			m.prefill.Observe(seconds(t.PrefillNs))
			m.decode.Observe(seconds(t.DecodeNs))
			m.success[st.finishReason].Inc()
			s.finished(st)
			st.finish(&t)
			s.touched = append(s.touched, st)
		}
	}
}

// wakeTouched wakes the handlers of the requests deliverEvents served.
func (s *Server) wakeTouched() {
	// Wake handlers only now, so one that wakes sees its tokens and its
	// finish together.
	for i, st := range s.touched {
		st.wake()
		s.touched[i] = nil
	}
	s.touched = s.touched[:0]
}

// shutdown fails every request still known, once Run ends.
func (s *Server) shutdown() {
	close(s.stopped)
	for id, st := range s.live {
		delete(s.live, id)
		st.fail(503, "server shutting down")
	}
	// Submissions queued but never applied: fail them too.
	for {
		select {
		case c := <-s.cmds:
			if !c.abort {
				c.st.fail(503, "server shutting down")
			}
		default:
			return
		}
	}
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// submit queues st for the engine; false when the server stopped or the
// client left first.
func (s *Server) submit(ctx context.Context, st *stream, req sim.Request) bool {
	c := command{st: st, req: req}
	if s.fleet != nil {
		c.session, _ = ctx.Value(sessionKey{}).(string)
	}
	select {
	case s.cmds <- c:
		return true
	case <-s.stopped:
		return false
	case <-ctx.Done():
		return false
	}
}

// abort tells the engine the client went away. It does not wait when the
// server has stopped.
func (s *Server) abort(st *stream) {
	select {
	case s.cmds <- command{abort: true, st: st}:
	case <-s.stopped:
	}
}

// matchModel reports whether name (as sent) selects this server's model.
func (s *Server) matchModel(name string) bool {
	if name == "" {
		return true
	}
	for _, a := range s.aliases {
		if strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// nextID returns a fresh engine request id.
func (s *Server) nextID() (string, uint64) {
	n := s.seq.Add(1)
	return "r" + strconv.FormatUint(n, 10), n
}

// delivery is a piece of output handed to a request: tokens generated by an
// iteration that ended at `at` (server clock ns).
type delivery struct {
	at     int64
	tokens int
	hidden bool
}

type streamState uint8

const (
	stateLive streamState = iota
	stateFinished
	stateFailed
)

// stream is one request's mailbox between the engine goroutine and its
// HTTP handler.
type stream struct {
	id           string
	seq          uint64
	arrival      int64 // server clock ns when the request was received
	finishReason string
	notify       chan struct{} // one slot: "something changed"

	mu       sync.Mutex
	pending  []delivery
	cached   int
	state    streamState
	admitted bool
	replica  int // the replica serving it (0: the one engine)
	status   int // stateFailed: the HTTP status to answer
	errMsg   string
	retry    int64 // stateFailed with 429: the advertised wait (ns; 0: the default)
	timing   *runlog.ServerTiming

	// Owned by the engine goroutine.
	firstAt, lastAt int64
	// on is the replica of a fleet that counts the request outstanding
	// (-1: none, e.g. refused by a gateway, or no longer).
	on int
	// routed: a fleet routed it, to firstRep (a split's prefill replica).
	routed   bool
	firstRep int
	// retryAfterNs is a rejection's advertised wait (sim.Event.RetryAfterNs),
	// set before fail publishes it; 0: Options.RetryAfter.
	retryAfterNs int64
}

func newStream(id string, seq uint64, arrival int64) *stream {
	return &stream{id: id, seq: seq, arrival: arrival, notify: make(chan struct{}, 1), on: -1}
}

func (st *stream) wake() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// push adds generated tokens (the caller wakes the handler). Tokens the handler has not yet taken are
// merged with the newest undelivered piece of the same visibility (keeping
// its earlier schedule time), so a stalled client costs O(1) memory.
func (st *stream) push(d delivery, cached int) {
	st.mu.Lock()
	if cached > 0 {
		st.cached = cached
	}
	if n := len(st.pending); n > 0 && st.pending[n-1].hidden == d.hidden {
		st.pending[n-1].tokens += d.tokens
	} else {
		st.pending = append(st.pending, d)
	}
	st.mu.Unlock()
}

// route records the replica the router sent the request to.
func (st *stream) route(replica int) {
	st.mu.Lock()
	st.replica = replica
	st.mu.Unlock()
}

// admit records that the request passed admission control (the first
// step after its Add did not reject it); the caller wakes the handler.
func (st *stream) admit() {
	st.mu.Lock()
	st.admitted = true
	st.mu.Unlock()
}

// finish marks the request done; like push it leaves waking to the caller.
func (st *stream) finish(t *runlog.ServerTiming) {
	st.mu.Lock()
	st.state = stateFinished
	st.timing = t
	st.mu.Unlock()
}

func (st *stream) fail(status int, msg string) {
	st.mu.Lock()
	if st.state == stateLive {
		st.state = stateFailed
		st.status = status
		st.errMsg = msg
		st.retry = st.retryAfterNs
	}
	st.mu.Unlock()
	st.wake()
}

// snapshot is what a handler takes from the mailbox in one go.
type snapshot struct {
	deliveries []delivery
	cached     int
	state      streamState
	admitted   bool
	replica    int
	status     int
	errMsg     string
	retry      int64 // a 429's advertised wait, ns (0: Options.RetryAfter)
	timing     *runlog.ServerTiming
}

// take moves the undelivered pieces into buf and reports the state.
func (st *stream) take(buf []delivery) snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := snapshot{
		deliveries: append(buf[:0], st.pending...),
		cached:     st.cached,
		state:      st.state,
		admitted:   st.admitted,
		replica:    st.replica,
		status:     st.status,
		errMsg:     st.errMsg,
		retry:      st.retry,
		timing:     st.timing,
	}
	st.pending = st.pending[:0]
	return s
}
