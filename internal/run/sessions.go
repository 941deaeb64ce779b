package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// SessionLoad is a run of sessions (conversations) instead of independent
// requests: sessions arrive open-loop, and inside a session the turns are
// closed-loop — a turn is sent when the previous reply has ended and the
// user's think time has passed, its history carrying the earlier turns.
type SessionLoad struct {
	// Set is the sessions; NumSessions of them run (0: the set's Len),
	// cycling past its end.
	Set         workload.SessionSet
	NumSessions int
	// Rate is the sessions' arrival rate, sessions/s (0: every session due
	// at once, MaxConcurrent paces them); Burstiness the gamma shape of the
	// gaps (0: 1). Sets with arrival times (traces) keep their own.
	Rate, Burstiness float64
	// MaxConcurrent caps the sessions in progress (0: none).
	MaxConcurrent int
	// History says what later turns resend as the earlier answers: the
	// text the server returned (runlog.HistoryServer, the default, so a
	// prefix cache sees what it would in production) or the recorded
	// replies (runlog.HistoryRecorded, where the set has them).
	History runlog.HistorySource
	// MaxContext caps a turn's request, history plus the reply asked for,
	// in tokens (0: none): the earliest turns are left out until it fits
	// (the system prompt and the turn's own message always stay), and each
	// record counts the turns left out (HistoryDropped).
	MaxContext int
}

// sessionsRun is what the sessions of one run share: the text of turns
// that give only a length (the same for a seed, session and turn, whatever
// runs before), token counting, the progress watch and a note given once.
type sessionsRun struct {
	seed  int64
	synth *tokenize.Synthesizer
	tok   tokenize.Tokenizer
	// toolsNoted says the user was told tool calls are not replayed.
	toolsNoted sync.Once
	// watch is the caller's view of the run's requests (a progress line).
	watch Watch
}

func (sr *sessionsRun) text(session, turn, n int) string {
	rng := rand.New(rand.NewPCG(uint64(sr.seed), uint64(session)<<20|uint64(turn)))
	return sr.synth.Text(n, rng)
}

// runSessions runs the sessions of s over the wall target as level 0.
func (r *runner) runSessions(ctx context.Context, s *SessionLoad) (levelData, error) {
	c, w := r.cfg, r.wall
	n := s.NumSessions
	if n <= 0 {
		n = s.Set.Len()
	}
	tok, err := tokenize.Load(c.Workload.Options.Tokenizer)
	if err != nil {
		return levelData{}, &ConfigError{Field: "Tokenizer", Err: err}
	}
	synth, err := tokenize.NewSynthesizer(tok)
	if err != nil {
		return levelData{}, &ConfigError{Field: "Tokenizer", Err: err}
	}
	sr := &sessionsRun{seed: c.Seed, synth: synth, tok: tok}
	col := newCollector(c.Stats, false, nil, nil)
	r.fan.setLevel(col)
	defer r.fan.setLevel()
	var arrivals *workload.Arrivals
	if s.Rate > 0 {
		b := s.Burstiness
		if b <= 0 {
			b = 1
		}
		arrivals = workload.NewArrivals(s.Rate, b, c.Seed)
	}
	var slots chan struct{}
	if s.MaxConcurrent > 0 {
		slots = make(chan struct{}, s.MaxConcurrent)
	}
	if c.Hooks.Level != nil {
		watch := c.Hooks.Level(ctx, 0, 0) // the turns to come are not known ahead
		sr.watch = watch
		defer watch.Stop()
	}
	cpu := startCPU(w.embedded)
	t0 := w.now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent, delayed := 0, 0
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sess := s.Set.Session(i % s.Set.Len())
		var due time.Duration
		switch {
		case sess.HasArrival:
			due = sess.Arrival
		case arrivals != nil:
			due = arrivals.Next()
		}
		if !sleepUntil(ctx, w.now, t0+int64(due)) {
			break
		}
		intended := t0 + int64(due)
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			switch {
			case arrivals == nil && !sess.HasArrival:
				// Unpaced: a session is due when a slot frees, as an
				// unpaced request is.
				intended = w.now()
			case w.now()-intended > int64(time.Millisecond):
				delayed++ // the cap held it past its arrival: in its turns' lag
			}
		}
		wg.Add(1)
		go func(i int, sess workload.Session, intended int64) {
			defer wg.Done()
			if slots != nil {
				defer func() { <-slots }()
			}
			k := r.session(ctx, i, sess, intended, s, sr)
			mu.Lock()
			sent += k
			mu.Unlock()
		}(i, sess, intended)
	}
	wg.Wait()
	r.sent += sent
	lv := c.Load
	lv.Label = fmt.Sprintf("sessions %s", s.Set.Name())
	lv.ClientCPU, lv.DelayedArrivals = cpu.share(), delayed
	if ctx.Err() != nil && r.fan.error() == nil {
		r.cancelled = true
	}
	return col.data(0, lv), nil
}

// session runs one session's turns in order and returns the requests it
// sent. A failed request ends the session: later turns are not sent (the
// session counts as failed), and every request sent has its record.
func (r *runner) session(ctx context.Context, idx int, sess workload.Session, start int64, load *SessionLoad,
	sr *sessionsRun) int {
	w, c := r.wall, r.cfg
	history := load.History
	if history == "" {
		history = runlog.HistoryServer
	}
	// msgs is the history; sizes their lengths in tokens, for the cap.
	var msgs []workload.Message
	var sizes []int
	system := 0
	if sys, err := sess.SystemText(c.Seed, sr.synth); err == nil && sys != "" {
		msgs, sizes, system = append(msgs, workload.Message{Role: "system", Content: sys}), append(sizes, sr.tok.Count(sys)), 1
	}
	dropped := 0
	sent := 0
	prevSend, prevEnd := start, start
	for ti, turn := range sess.Turns {
		if len(turn.ToolCalls) > 0 {
			sr.toolsNoted.Do(func() {
				c.note("the sessions' tool calls are not sent yet: each turn is one request, without tools")
			})
		}
		content := turn.Content
		if content == "" {
			content = sr.text(idx, ti, turn.InputTokens)
		}
		size := turn.InputTokens // the loader's count of the content, or the length written
		if size <= 0 {
			size = sr.tok.Count(content)
		}
		msgs, sizes = append(msgs, workload.Message{Role: "user", Content: content}), append(sizes, size)
		if load.MaxContext > 0 {
			// Drop the earliest turn (its message and answer) while the
			// request would not fit, keeping the system prompt and this
			// turn's message.
			for sum(sizes)+turn.OutputTokens > load.MaxContext && len(msgs)-system > 1 {
				msgs = append(msgs[:system], msgs[system+2:]...)
				sizes = append(sizes[:system], sizes[system+2:]...)
				dropped++
			}
		}
		intended := prevEnd + int64(turn.ThinkTime)
		if sess.ThinkFromSend && ti > 0 {
			intended = max(prevEnd, prevSend+int64(turn.ThinkTime))
		}
		if ti == 0 {
			intended = start + int64(turn.ThinkTime)
		}
		if !sleepUntil(ctx, w.now, intended) {
			return sent
		}
		id := w.prefix + "s" + strconv.Itoa(idx) + "-t" + strconv.Itoa(ti+1)
		call, err := w.backend.Prepare(id, workload.Request{Messages: msgs, OutputTokens: turn.OutputTokens})
		rec := runlog.Record{Intended: intended} // the backend keeps it, and resets the rest
		if err != nil {
			rec.ID, rec.Sent, rec.End = id, w.now(), w.now()
			rec.ErrorClass, rec.Error = runlog.ErrMalformed, "preparing the request: "+err.Error()
		} else {
			if sr.watch != nil {
				sr.watch.Sent()
			}
			call(ctx, &rec)
		}
		rec.SessionID, rec.Turn, rec.History, rec.HistoryDropped = sess.ID, ti+1, history, dropped
		sent++
		answer := rec.GeneratedText
		if history == runlog.HistoryRecorded && turn.RecordedReply != "" {
			answer = turn.RecordedReply
		}
		if !c.Output.KeepText {
			rec.GeneratedText = ""
		}
		_ = r.fan.Record(&rec)
		if sr.watch != nil {
			_ = sr.watch.Record(&rec)
		}
		if !rec.OK() {
			return sent
		}
		answerSize := rec.CompletionTokens - rec.ReasoningTokens
		if history == runlog.HistoryRecorded && turn.RecordedReply != "" {
			answerSize = sr.tok.Count(answer)
		}
		msgs, sizes = append(msgs, workload.Message{Role: "assistant", Content: answer}), append(sizes, max(answerSize, 0))
		prevSend, prevEnd = rec.Sent, rec.End
	}
	return sent
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// sleepUntil waits until the run clock now reads at (ns); false when ctx
// ended first.
func sleepUntil(ctx context.Context, now func() int64, at int64) bool {
	d := time.Duration(at - now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
