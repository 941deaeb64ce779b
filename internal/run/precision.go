package run

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// minPrecisionRequests is the fewest measured requests a level judges its
// precision on: below it a batch-means interval rests on too few batches
// to trust, however narrow it looks.
const minPrecisionRequests = 30

// halt ends a level's sending early while its requests in flight finish
// (--target-precision reached); a nil *halt never halts. It also carries
// the watch's latest state for the progress line.
type halt struct {
	once   sync.Once
	ch     chan struct{}
	flag   atomic.Bool
	status atomic.Pointer[string]
}

func newHalt() *halt { return &halt{ch: make(chan struct{})} }

// stop halts sending; later calls do nothing.
func (h *halt) stop() {
	h.once.Do(func() {
		h.flag.Store(true)
		close(h.ch)
	})
}

// done is closed once the level is halted (nil, never closed, for nil h).
func (h *halt) done() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.ch
}

// halted says the level is halted.
func (h *halt) halted() bool { return h != nil && h.flag.Load() }

// progress is the watch's latest state for the progress line ("" none).
func (h *halt) progress() string {
	if h == nil {
		return ""
	}
	if s := h.status.Load(); s != nil {
		return *s
	}
	return ""
}

// precisionWatch judges a level's targets as its records arrive, on a
// summary of the targeted figures alone, at checkpoints 1 % of the count
// apart (every record below 100), and halts the level once all are met.
type precisionWatch struct {
	targets []stats.PrecisionTarget
	acc     *stats.Accumulator
	h       *halt
	n, next int
	state   []stats.PrecisionState
	reached int // measured requests when the targets were met; 0 not yet
	// first and last bound the measured sends seen (ns), for the rate an
	// ETA needs.
	first, last int64
}

func newPrecisionWatch(ts []stats.PrecisionTarget, so stats.Options, h *halt) *precisionWatch {
	return &precisionWatch{targets: ts, acc: stats.NewAccumulator(stats.PrecisionOptions(ts, so.Confidence, so.SLO)), h: h, next: minPrecisionRequests}
}

// Record adds r and, at a checkpoint, judges the targets.
func (w *precisionWatch) Record(r *runlog.Record) {
	w.acc.Add(r)
	if r.Warmup || r.Attempt > 1 {
		return
	}
	if w.n == 0 || r.Sent < w.first {
		w.first = r.Sent
	}
	w.last = max(w.last, r.End)
	w.n++
	if w.reached > 0 || w.n < w.next {
		return
	}
	w.next = w.n + max(1, w.n/100)
	s := w.acc.Summary()
	w.state = stats.Precision(&s, w.targets)
	met := true
	for _, st := range w.state {
		met = met && st.Met()
	}
	line := w.progressText(met)
	w.h.status.Store(&line)
	if met {
		w.reached = w.n
		w.h.stop()
	}
}

// progressText is the progress line's part: each figure's half-width and,
// until met, about how many more requests and seconds the targets need.
func (w *precisionWatch) progressText(met bool) string {
	parts := make([]string, len(w.state))
	for i, st := range w.state {
		parts[i] = st.String()
	}
	s := strings.Join(parts, ", ")
	if met {
		return s + ": reached"
	}
	if need := stats.PrecisionNeeded(w.n, w.state); need > w.n {
		s += fmt.Sprintf(", ~%d more requests", need-w.n)
		if span := float64(w.last-w.first) / 1e9; span > 0 {
			s += fmt.Sprintf(" (~%.0fs)", float64(need-w.n)/(float64(w.n)/span))
		}
	}
	return s
}

// outcome is the level's Precision sentence: where it stopped and why,
// or that the targets were not reached and roughly what would reach them.
func (w *precisionWatch) outcome() string {
	if w.reached > 0 {
		parts := make([]string, len(w.state))
		for i, st := range w.state {
			parts[i] = st.String()
		}
		return fmt.Sprintf("reached after %d requests (sending stopped there): %s", w.reached, strings.Join(parts, ", "))
	}
	// Judge once more on every record: the last checkpoint may be behind.
	s := w.acc.Summary()
	w.state = stats.Precision(&s, w.targets)
	parts := make([]string, len(w.state))
	for i, st := range w.state {
		parts[i] = st.String()
	}
	met := len(w.state) > 0
	for _, st := range w.state {
		met = met && st.Met()
	}
	if met {
		return fmt.Sprintf("reached at the level's end, after %d requests: %s", w.n, strings.Join(parts, ", "))
	}
	msg := fmt.Sprintf("not reached in %d requests: %s", w.n, strings.Join(parts, ", "))
	if need := stats.PrecisionNeeded(w.n, w.state); need > w.n {
		msg += fmt.Sprintf("; about %d requests would reach it (--num-prompts or --duration)", need)
	}
	return msg
}
