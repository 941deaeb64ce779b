package report

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/goodput/goodput/internal/runlog"
)

// Progress shows a live line while a run goes on: done/total with the
// percentage and the time left, in flight, running TTFT and TPOT P50/P99,
// output tok/s and failures. On a terminal it redraws one line (through the
// console, so notes print above it); otherwise it prints a plain line every
// interval.
type Progress struct {
	w        io.Writer
	con      *Console
	tty      bool
	quiet    bool
	total    int
	dur      time.Duration // the level's time limit (0: none)
	interval time.Duration

	mu      sync.Mutex
	sent    int
	done    int
	failed  int
	outTok  int64
	ttft    *hdrhistogram.Histogram // µs
	tpot    *hdrhistogram.Histogram // µs
	started time.Time
	// follow, when set, is more of the level's state for the line (the
	// precision reached so far); "" adds nothing.
	follow func() string

	stopCh chan struct{}
	wg     sync.WaitGroup
}

// NewProgress is the live line of one level of total requests (0
// unknown) and time limit dur (0 none), written to w — through con on a
// terminal (tty), so that notes print above it; quiet prints nothing.
func NewProgress(w io.Writer, con *Console, tty, quiet bool, total int, dur time.Duration) *Progress {
	if con == nil {
		con = NewConsole(w, tty)
	}
	iv := 10 * time.Second
	if tty {
		iv = 500 * time.Millisecond
	}
	return &Progress{
		w: w, con: con, tty: tty, quiet: quiet, total: total, dur: dur, interval: iv,
		ttft: hdrhistogram.New(1, 3_600_000_000, 2), tpot: hdrhistogram.New(1, 3_600_000_000, 2),
	}
}

// send counts a request leaving; safe for concurrent use.
func (p *Progress) send() {
	p.mu.Lock()
	p.sent++
	p.mu.Unlock()
}

// observe counts a finished record; safe for concurrent use.
func (p *Progress) observe(r *runlog.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if !r.OK() {
		p.failed++
		return
	}
	p.outTok += int64(r.OutputTokens())
	if d, ok := r.TTFT(); ok {
		_ = p.ttft.RecordValue(max(d.Microseconds(), 1))
	}
	if d, ok := r.TPOT(); ok {
		_ = p.tpot.RecordValue(max(d.Microseconds(), 1))
	}
}

// Start draws the line until Stop (or ctx ends).
func (p *Progress) Start(ctx context.Context) {
	p.started = time.Now()
	if p.quiet {
		return
	}
	p.stopCh = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.print(false)
			case <-p.stopCh:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
}

func (p *Progress) stop() {
	if p.quiet || p.stopCh == nil {
		return
	}
	close(p.stopCh)
	p.wg.Wait()
	p.print(true)
}

func (p *Progress) print(final bool) {
	p.mu.Lock()
	el := time.Since(p.started).Seconds()
	tot := "?"
	if p.total > 0 {
		tot = fmt.Sprint(p.total)
	}
	line := fmt.Sprintf("%d/%s done%s, %d in flight, %d failed | TTFT p50 %s p99 %s | TPOT p50 %s p99 %s | %.0f out tok/s | %.0fs%s",
		p.done, tot, donePct(p.fraction(el)), max(p.sent-p.done, 0), p.failed,
		usText(p.ttft.ValueAtQuantile(50)), usText(p.ttft.ValueAtQuantile(99)),
		usText(p.tpot.ValueAtQuantile(50)), usText(p.tpot.ValueAtQuantile(99)),
		float64(p.outTok)/max(el, 1e-9), el, eta(p.fraction(el), el, final))
	if p.follow != nil {
		if x := p.follow(); x != "" {
			line += " | " + x
		}
	}
	p.mu.Unlock()
	if p.tty {
		p.con.Draw(line)
		if final {
			p.con.End()
		}
		return
	}
	if !final {
		fmt.Fprintln(p.w, "goodput: "+line)
	}
}

// fraction is how much of the level is done (0–1), by requests or, for a
// level bounded by time only, by time; -1 when neither is known. Callers
// hold p.mu.
func (p *Progress) fraction(elapsed float64) float64 {
	f := -1.0
	if p.total > 0 {
		f = float64(p.done) / float64(p.total)
	}
	if p.dur > 0 {
		// A time limit ends the level whichever comes first.
		f = max(f, elapsed/p.dur.Seconds())
	}
	return min(f, 1)
}

// donePct is " (42 %)", or nothing when the fraction is unknown.
func donePct(f float64) string {
	if f < 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f%%)", 100*f)
}

// eta is " | ETA 1m20s" from the pace so far, or nothing when it cannot be
// told yet (nothing done) or the level is over.
func eta(f, elapsed float64, final bool) string {
	if final || f <= 0 || f >= 1 {
		return ""
	}
	left := time.Duration(elapsed * (1 - f) / f * float64(time.Second))
	return " | ETA " + left.Round(time.Second).String()
}

func usText(us int64) string {
	if us == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fms", float64(us)/1000)
}

// Sent counts a request leaving; safe for concurrent use.
func (p *Progress) Sent() { p.send() }

// Follow adds f's text to the line each time it is drawn; safe while the
// line is live.
func (p *Progress) Follow(f func() string) {
	p.mu.Lock()
	p.follow = f
	p.mu.Unlock()
}

// Record counts a finished record.
func (p *Progress) Record(r *runlog.Record) error {
	p.observe(r)
	return nil
}

// Stop ends the line, printing it a last time.
func (p *Progress) Stop() { p.stop() }
