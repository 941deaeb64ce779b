// Package shard splits a run over several processes (machines): every
// shard builds the same workload and draws the same arrival schedule from
// the same seed, and
// sends only its share of it — arrival k goes to shard k mod Count, with
// the prompt one process would have sent it; a concurrency cap is split so
// that the shards' caps add up to it; a session goes whole to one shard.
// The shards' records, merged (runlog.Merge), are the one process's run.
// For the shards to share one schedule they share its time zero: an
// agreed wall-clock instant (run.Config.StartAt), or one that shard 0 sets once
// every shard has checked in at its rendezvous. Each shard measures its
// clock against the target's, so the merged report can say how far apart
// the shards' clocks, and so their starts, may have been.
//
// It holds the shard syntax (Parse, ParseStartAt), a shard's share of a
// level, the rendezvous that agrees the start, the measurement of a
// machine's clock against the target's, and the Kubernetes Indexed Job
// that runs the shards and the Job that collects their records (Job,
// Collect). Errors about a user's settings are *setting.Error naming the
// field. The rendezvous point is safe for concurrent use; the rest holds no
// state.
package shard

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
)

// Shard is this process's place in a run split over several processes.
type Shard struct {
	// Index is this process's shard, from 0, of Count shards.
	Index, Count int
	// Rendezvous, when set, is the host:port of shard 0's rendezvous, for
	// a start none of the shards knows ahead (pods of one job): shard 0
	// listens there (on every interface at that port, or on the loopback
	// address given), each shard checks in once its target is resolved
	// and its prompts made, and when all have, shard 0 sets the start
	// RendezvousLead ahead and every shard learns it. Not with StartAt.
	Rendezvous string
	// RendezvousTimeout bounds the wait for the other shards (0:
	// DefaultRendezvousTimeout).
	RendezvousTimeout time.Duration
	// ClockSamples is how many requests measure this machine's clock
	// against the target's Date header (0: DefaultClockSamples; < 0: not
	// measured).
	ClockSamples int
}

// Limits of a synchronised start.
const (
	// StartAtGrace is how far in the past a start may be and still be
	// taken (the schedule's first arrivals then leave late).
	StartAtGrace = 2 * time.Second
	// MaxStartAhead is how far ahead a start may be.
	MaxStartAhead = 24 * time.Hour
	// RendezvousLead is how far ahead of the last shard's check-in shard 0
	// sets the start: time for every shard's next poll (every
	// rendezvousPoll) and its warm-ups' first requests.
	RendezvousLead = 3 * time.Second
	// DefaultRendezvousTimeout bounds the wait for all shards to check in
	// (pods pulling an image, waiting for a node).
	DefaultRendezvousTimeout = 10 * time.Minute
	// DefaultClockSamples requests, spread over a second, measure a
	// shard's clock against the target's Date header.
	DefaultClockSamples = 20
)

// rendezvousPoll is how often a shard asks shard 0 for the start.
const rendezvousPoll = 200 * time.Millisecond

// rendezvousPath is the rendezvous' one endpoint.
const rendezvousPath = "/goodput/rendezvous"

// CheckStartAt checks a start instant against now: at most StartAtGrace
// in the past, at most MaxStartAhead ahead. The error says what is wrong
// with at; its caller names the setting.
func CheckStartAt(at, now time.Time) error {
	switch d := at.Sub(now); {
	case d < -StartAtGrace:
		return fmt.Errorf("%s is %s in the past: give an instant ahead (a start within %s of now is taken as now)",
			at.Format(time.RFC3339Nano), (-d).Round(time.Millisecond), StartAtGrace)
	case d > MaxStartAhead:
		return fmt.Errorf("%s is %s ahead: more than %s", at.Format(time.RFC3339Nano), d.Round(time.Second), MaxStartAhead)
	}
	return nil
}

// MaxCount bounds the shard count (Shard.Count): far beyond any cluster,
// small enough for the merge to list every shard.
const MaxCount = 10000

// Share is how many of n (warm-ups, arrivals, sessions, a concurrency
// cap), dealt round-robin over the shards, are this shard's; all n for a
// whole run (nil).
func (sh *Shard) Share(n int) int {
	if sh == nil {
		return n
	}
	return runlog.ShareOf(n, sh.Index, sh.Count)
}

// Level is the shard's share of the whole level lv as it ran: its
// part of the requests, warm-ups and concurrency cap, and the rate it sent
// at on average (arrival k of every Count), with the whole level beside it
// and what the shard sent.
func (sh *Shard) Level(lv runlog.Level, sent int) runlog.Level {
	whole := lv
	whole.DelayedArrivals, whole.ClientCPU, whole.Stopped, whole.Shard = 0, 0, "", nil
	part := lv
	part.NumPrompts, part.NumWarmups, part.MaxConcurrency = sh.Share(lv.NumPrompts), sh.Share(lv.NumWarmups), sh.Share(lv.MaxConcurrency)
	n := float64(sh.Count)
	part.RequestRate = lv.RequestRate / n
	if r := lv.Ramp; r != nil {
		part.Ramp = &runlog.Ramp{Strategy: r.Strategy, StartRPS: r.StartRPS / n, EndRPS: r.EndRPS / n}
	}
	part.Shard = &runlog.LevelShard{Whole: whole, Sent: sent}
	return part
}

// RunName names a run whose shards were given one start: the same name
// on every shard, from what they share.
func RunName(start time.Time, seed int64, count int) string {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(start.UnixNano()))
	binary.LittleEndian.PutUint64(b[8:], uint64(seed))
	binary.LittleEndian.PutUint64(b[16:], uint64(count))
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil)[:3])
}

// OffsetText is a clock offset for people: "12.3ms ahead of", "behind".
func OffsetText(ns int64) string {
	d := time.Duration(ns).Round(time.Microsecond)
	switch {
	case d > 0:
		return d.String() + " ahead of"
	case d < 0:
		return (-d).String() + " behind"
	}
	return "level with"
}

// MeasureClock measures this machine's wall clock against the server at
// base from the Date header of n requests (GET /v1/models; any answer
// carries a Date). A Date names the second the server was in when it
// answered, so each sample bounds the offset to a range of a second plus
// its round trip; the offset lies in the intersection of the ranges. The
// first half of the samples, spread evenly over a second, narrow it to
// about their spacing plus a round trip; the second half, spread over that
// range around the server's next tick of the second, to about their own
// spacing plus a round trip. Samples that contradict each other (a server
// clock stepping) leave the middle of their single ranges, with half a
// second of error.
func MeasureClock(ctx context.Context, base string, n int) (*runlog.ClockOffset, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := strings.TrimRight(base, "/") + "/v1/models"
	lo, hi := int64(-1<<62), int64(1<<62)
	var mids, rtts []int64
	var lastErr error
	// sample asks once at the local wall-clock instant at (UnixNano).
	sample := func(at int64) bool {
		if !loadgen.SleepUntil(ctx, func() int64 { return time.Now().UnixNano() }, at) {
			return false
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			lastErr = err
			return false
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		t1 := time.Now()
		if err != nil {
			lastErr = err
			return ctx.Err() == nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			lastErr = errors.New("the target's answers carry no Date header")
			return true
		}
		a, b, s := t0.UnixNano(), t1.UnixNano(), d.UnixNano()
		// Server time at the answer ∈ [s, s+1s); local ∈ [a, b].
		lo, hi = max(lo, a-s-int64(time.Second)), min(hi, b-s)
		mids = append(mids, (a+b)/2-s-int64(time.Second/2))
		rtts = append(rtts, b-a)
		return true
	}
	first := max(n/2, 1)
	begin := time.Now().UnixNano()
	spacing := int64(time.Second) / int64(first)
	for i := range first {
		if !sample(begin + int64(i)*spacing) {
			break
		}
	}
	if rest := n - first; rest > 0 && len(mids) > 0 && lo <= hi {
		// The next whole second of the server's that is far enough ahead:
		// it ticks at a local time in [S+lo, S+hi].
		rtt := slices.Min(rtts)
		now := time.Now().UnixNano()
		sec := int64(time.Second)
		S := (now-lo)/sec*sec + sec
		for S+lo-rtt/2 < now+int64(10*time.Millisecond) {
			S += sec
		}
		step := (hi - lo) / int64(rest)
		for j := range rest {
			// Aim the request's arrival (half a round trip after its send)
			// across the range.
			if !sample(S + lo + step*int64(j) + step/2 - rtt/2) {
				break
			}
		}
	}
	if len(mids) == 0 {
		if lastErr == nil {
			lastErr = ctx.Err()
		}
		return nil, lastErr
	}
	c := &runlog.ClockOffset{Source: "http-date", Samples: len(mids)}
	if lo <= hi {
		c.OffsetNs, c.ErrorNs = lo+(hi-lo)/2, (hi-lo+1)/2
		return c, nil
	}
	slices.Sort(mids)
	c.OffsetNs, c.ErrorNs = mids[len(mids)/2], int64(time.Second/2)+slices.Max(rtts)/2
	return c, nil
}

// Rendezvous agrees the start with the other shards: shard 0 serves the
// rendezvous and sets the start once all have checked in, naming the run
// run; the others ask it until it answers. It returns the start, the run's
// name and, on shard 0, what stops its server (called when the run
// closes). The error says what failed; its caller names the setting
// (Shard.Rendezvous).
func Rendezvous(ctx context.Context, sh *Shard, run string, note func(string)) (time.Time, string, func(), error) {
	timeout := sh.RendezvousTimeout
	if timeout <= 0 {
		timeout = DefaultRendezvousTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if sh.Index != 0 {
		note(fmt.Sprintf("shard %d of %d: asking shard 0 at %s for the start", sh.Index, sh.Count, sh.Rendezvous))
		at, name, err := joinRendezvous(ctx, "http://"+sh.Rendezvous+rendezvousPath, sh.Index, sh.Count)
		if err != nil {
			return time.Time{}, "", nil, err
		}
		return at, name, func() {}, nil
	}
	ln, err := net.Listen("tcp", listenAddr(sh.Rendezvous))
	if err != nil {
		return time.Time{}, "", nil, fmt.Errorf("shard 0 listens for the others: %w", err)
	}
	rv := newRendezvous(sh.Count, RendezvousLead, run, time.Now)
	srv := &http.Server{Handler: rv, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln)
	}()
	stop := func() {
		_ = srv.Close()
		wg.Wait()
	}
	note(fmt.Sprintf("shard 0 of %d: waiting at %s for the other shards to check in", sh.Count, ln.Addr()))
	rv.checkIn(0)
	select {
	case <-rv.decided:
	case <-ctx.Done():
		stop()
		return time.Time{}, "", nil, fmt.Errorf("waited %s for shards %s to check in at %s", timeout, rv.waitingText(), sh.Rendezvous)
	}
	at, run := rv.result()
	return at, run, stop, nil
}

// listenAddr is where shard 0 listens for a rendezvous at addr: the address
// itself when it is a loopback one, else every interface at its port (the
// name the others dial resolves to this machine from elsewhere).
func listenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return addr
	}
	return ":" + port
}

// rendezvousPoint is shard 0's side of a rendezvous: who has checked in,
// and the start once all have. It is safe for concurrent use.
type rendezvousPoint struct {
	count int
	lead  time.Duration
	run   string
	now   func() time.Time

	mu      sync.Mutex
	in      map[int]bool
	start   time.Time
	decided chan struct{}
}

func newRendezvous(count int, lead time.Duration, run string, now func() time.Time) *rendezvousPoint {
	return &rendezvousPoint{count: count, lead: lead, run: run, now: now, in: map[int]bool{}, decided: make(chan struct{})}
}

// checkIn counts shard i in; the last one in sets the start.
func (p *rendezvousPoint) checkIn(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.in[i] = true
	if len(p.in) == p.count && p.start.IsZero() {
		p.start = p.now().Add(p.lead)
		close(p.decided)
	}
}

// result is the start (zero before every shard has checked in) and the
// run's name.
func (p *rendezvousPoint) result() (time.Time, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start, p.run
}

// waitingText lists the shards not checked in, e.g. "2, 3".
func (p *rendezvousPoint) waitingText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i := range p.count {
		if !p.in[i] {
			out = append(out, strconv.Itoa(i))
		}
	}
	return strings.Join(out, ", ")
}

// rendezvousAnswer is the rendezvous' JSON answer: the start and run once
// set, else the shards still awaited.
type rendezvousAnswer struct {
	Start   time.Time `json:"start,omitzero"`
	Run     string    `json:"run,omitempty"`
	Waiting string    `json:"waiting,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// ServeHTTP answers GET rendezvousPath?shard=I&count=N: 200 with the start
// once every shard is in, 202 with the shards awaited before, 400/409 for
// a shard of another count or out of range.
func (p *rendezvousPoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	answer := func(code int, a rendezvousAnswer) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(a)
	}
	if r.URL.Path != rendezvousPath || r.Method != http.MethodGet {
		answer(http.StatusNotFound, rendezvousAnswer{Error: "GET " + rendezvousPath + "?shard=I&count=N"})
		return
	}
	i, err1 := strconv.Atoi(r.URL.Query().Get("shard"))
	n, err2 := strconv.Atoi(r.URL.Query().Get("count"))
	switch {
	case err1 != nil || err2 != nil:
		answer(http.StatusBadRequest, rendezvousAnswer{Error: "want ?shard=I&count=N"})
		return
	case n != p.count:
		answer(http.StatusConflict, rendezvousAnswer{Error: fmt.Sprintf("shard 0 runs %d shards, this one was told %d", p.count, n)})
		return
	case i < 1 || i >= p.count:
		answer(http.StatusBadRequest, rendezvousAnswer{Error: fmt.Sprintf("shard %d: want 1 to %d", i, p.count-1)})
		return
	}
	p.checkIn(i)
	if start, run := p.result(); !start.IsZero() {
		answer(http.StatusOK, rendezvousAnswer{Start: start, Run: run})
		return
	}
	answer(http.StatusAccepted, rendezvousAnswer{Waiting: p.waitingText()})
}

// joinRendezvous asks the rendezvous at url for the start until it is set,
// ctx ends (its deadline: the rendezvous timeout) or the rendezvous refuses
// the shard. Failing to connect is retried: shard 0 may not be up yet.
func joinRendezvous(ctx context.Context, url string, index, count int) (time.Time, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	q := fmt.Sprintf("%s?shard=%d&count=%d", url, index, count)
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, q, nil)
		if err != nil {
			return time.Time{}, "", err
		}
		resp, err := client.Do(req)
		if err == nil {
			var a rendezvousAnswer
			derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&a)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK && derr == nil && !a.Start.IsZero():
				return a.Start, a.Run, nil
			case resp.StatusCode == http.StatusAccepted:
				last = "waiting for shards " + a.Waiting
			case resp.StatusCode >= 400 && resp.StatusCode < 500:
				return time.Time{}, "", fmt.Errorf("shard 0 at %s refused shard %d: %s", url, index, a.Error)
			default:
				last = fmt.Sprintf("HTTP %d", resp.StatusCode)
			}
		} else {
			last = err.Error()
		}
		t := time.NewTimer(rendezvousPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, "", fmt.Errorf("no start from shard 0 at %s (%s)", url, last)
		}
	}
}
