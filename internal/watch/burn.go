package watch

import (
	"sync"
	"time"
)

// Error-budget burn, as SRE practice defines it: over a window, the share
// of probes that were bad divided by the share the objective allows,
//
//	burn = (1 − good/total) / (1 − objective)
//
// so 1 spends the budget exactly at the pace that exhausts it at the end
// of the SLO period, and 14.4 over an hour spends 2 % of a 30-day budget
// in that hour. It is computed here over the probes themselves rather
// than in PromQL from counters: a 5-minute window holds ten probes at a
// 30 s interval, too few for rate()'s extrapolation to be exact.

// Windows are the burn-rate windows exported, shortest first, with their
// label values.
var Windows = []struct {
	Label string
	D     time.Duration
}{{"5m", 5 * time.Minute}, {"1h", time.Hour}}

// Budget keeps one target's probe verdicts over the longest window and
// computes burn rates from them. The zero value is not usable; use
// NewBudget. Budget is safe for concurrent use.
type Budget struct {
	objective float64
	keep      time.Duration

	mu     sync.Mutex
	events []verdict // in time order; events[head:] are live
	head   int
}

type verdict struct {
	t    time.Time
	good bool
}

// NewBudget returns a Budget for objective (the share of probes that must
// be good, in (0, 1)) keeping verdicts for the longest of Windows.
func NewBudget(objective float64) *Budget {
	keep := time.Duration(0)
	for _, w := range Windows {
		keep = max(keep, w.D)
	}
	return &Budget{objective: objective, keep: keep}
}

// Add records one probe that counts toward the SLO, finished at t.
// Verdicts must come in time order (one goroutine probes a target).
func (b *Budget) Add(t time.Time, good bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, verdict{t: t, good: good})
	b.prune(t)
}

// prune drops verdicts older than the longest window before now,
// compacting the slice only once half of it is dead (amortised O(1)).
func (b *Budget) prune(now time.Time) {
	for b.head < len(b.events) && !b.events[b.head].t.After(now.Add(-b.keep)) {
		b.head++
	}
	if b.head > len(b.events)/2 {
		b.events = append(b.events[:0], b.events[b.head:]...)
		b.head = 0
	}
}

// Burn is the burn rate over the window of length w ending at now: the
// probes finished in (now − w, now]. ok is false when there were none
// (no verdict, no rate).
func (b *Budget) Burn(now time.Time, w time.Duration) (rate float64, good, total int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	from := now.Add(-w)
	for i := len(b.events) - 1; i >= b.head; i-- {
		e := b.events[i]
		if e.t.After(now) {
			continue
		}
		if !e.t.After(from) {
			break
		}
		total++
		if e.good {
			good++
		}
	}
	if total == 0 {
		return 0, 0, 0, false
	}
	return BurnRate(good, total, b.objective), good, total, true
}

// BurnRate is (1 − good/total) / (1 − objective); 0 for total 0.
func BurnRate(good, total int, objective float64) float64 {
	if total <= 0 {
		return 0
	}
	return (1 - float64(good)/float64(total)) / (1 - objective)
}
