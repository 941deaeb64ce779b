package sim

import (
	"slices"
	"testing"
)

// arrival is one request of a replayed trace: when it arrives (ns) and what
// it asks.
type arrival struct {
	at  int64
	req Request
}

// outcome is what the test loop saw of one request, times in ns.
type outcome struct {
	arrival, first, last int64
	tokens               int
	timing               Timing
	rejected             bool
}

// Timing aliases the server timing for brevity in tests.
type Timing = struct{ Queue, Prefill, Decode int64 }

// replay drives e in virtual time over arrivals (sorted by at) until all
// requests end, the way simrun does: add what has arrived, step, jump to the
// step's end or, when idle, to the next arrival. It returns outcomes by id
// and the number of steps.
func replay(t testing.TB, e *Engine, arrivals []arrival) (map[string]*outcome, int) {
	t.Helper()
	out := make(map[string]*outcome, len(arrivals))
	var now int64
	i, steps := 0, 0
	for i < len(arrivals) || e.Busy() {
		for i < len(arrivals) && arrivals[i].at <= now {
			a := arrivals[i]
			if err := e.Add(a.at, a.req); err != nil {
				t.Fatalf("Add(%s) = %v", a.req.ID, err)
			}
			out[a.req.ID] = &outcome{arrival: a.at, first: -1}
			i++
		}
		end, evs := e.Step(now)
		steps++
		for _, ev := range evs {
			o := out[ev.ID]
			switch ev.Kind {
			case EventTokens:
				if o.first < 0 {
					o.first = end
				}
				o.last = end
				o.tokens += ev.Tokens
			case EventRejected:
				o.rejected = true
			case EventFinished:
				o.timing = Timing{ev.Timing.QueueNs, ev.Timing.PrefillNs, ev.Timing.DecodeNs}
			}
		}
		if end > now {
			now = end
			continue
		}
		if i < len(arrivals) {
			now = max(now, arrivals[i].at)
		} else if len(evs) == 0 && e.Busy() {
			t.Fatalf("engine busy but made no progress at %d", now)
		}
	}
	return out, steps
}

// percentile is numpy's default (linear between closest ranks).
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	r := p / 100 * float64(len(s)-1)
	lo := int(r)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (s[lo+1]-s[lo])*(r-float64(lo))
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
