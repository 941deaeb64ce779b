package sweep

import (
	"fmt"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Saturation thresholds.
const (
	// DefaultMaxErrorRate is the failed share (cancellations aside) above
	// which a level counts as saturated.
	DefaultMaxErrorRate = 0.1
	// minErrorRecords is the fewest records before the error rate counts.
	minErrorRecords = 50
	// growthWindows is the fewest windows of records before the queue
	// growth test runs; windowsPerLevel splits a level's expected records
	// into windows (at least minWindow records each).
	growthWindows   = 6
	windowsPerLevel = 20
	minWindow       = 20
	// growthRatio: the middle third's mean wait must exceed the first
	// third's, and the last third's the middle's, by this factor.
	growthRatio = 1.3
	// minGrowthMs: and the last third must wait this much longer than the
	// first, so noise at low latency is no growth.
	minGrowthMs = 500.0
	// behindFactor and minBehindRequests: an open-loop level whose duration
	// exceeds this multiple of what its schedule needs (requests/rate plus
	// a median E2E), over ≥ 100 requests, fell behind.
	behindFactor      = 1.5
	minBehindRequests = 100
)

// Saturation says when a level counts as saturated and whether that stops
// the sweep.
type Saturation struct {
	// MaxErrorRate is the failed share above which a level is saturated;
	// 0 means DefaultMaxErrorRate, negative disables the check.
	MaxErrorRate float64
	// Off runs every level whatever happens (no early stop of a level, no
	// stop of the sweep); saturated levels are still reported.
	Off bool
}

func (s Saturation) maxErr() float64 {
	if s.MaxErrorRate == 0 {
		return DefaultMaxErrorRate
	}
	return s.MaxErrorRate
}

// Judge says why a finished level counts as saturated, or "": it was
// stopped early, its error rate (cancellations aside) exceeded the limit, or
// an open-loop level took more than 1.5× the time its schedule needs
// (requests/rate plus the median E2E), i.e. the server fell behind.
func (s Saturation) Judge(p Point) string {
	if p.Partial() {
		return "" // the user's doing, not the server's
	}
	if p.Stopped != "" {
		return p.Stopped
	}
	sum := &p.Summary
	failed := sum.Failed - sum.Failures[runlog.ErrCancelled]
	if me := s.maxErr(); me >= 0 && sum.Requests >= minErrorRecords/5 && float64(failed) > me*float64(sum.Requests) {
		return fmt.Sprintf("error rate %.1f %% (%d of %d) above %g %%", 100*float64(failed)/float64(sum.Requests), failed, sum.Requests, 100*me)
	}
	if p.Level.RequestRate > 0 && sum.Requests >= minBehindRequests && sum.DurationS > 0 {
		e2e := 0.0
		if m, ok := sum.Metric(stats.MetricE2E); ok {
			e2e = m.Median / 1000
		}
		// The rate the schedule delivered, not its name: a short random
		// schedule can run well off its nominal rate.
		rate := p.Load(AxisRate)
		need := float64(sum.Requests)/rate + e2e
		if sum.DurationS > behindFactor*need {
			return fmt.Sprintf("the server fell behind: the level took %.1f s where its schedule needs %.1f s at %s req/s", sum.DurationS, need, g(rate))
		}
	}
	return ""
}

// Monitor watches a level's records as they finish and says when the level
// should stop early: the error rate (cancellations aside, after 50 records)
// exceeds the limit, or the queue grows without bound — the wait from each
// request's scheduled send to its first token (or its end, if it failed),
// averaged over windows of records in completion order, rises by 1.3× from
// the first third of the windows to the middle and again to the last, and
// by 500 ms overall. A Monitor is not safe for concurrent use.
type Monitor struct {
	cfg     Saturation
	window  int
	seen    int
	failed  int
	sum     float64 // current window's wait sum, ms
	n       int     // records in the current window
	windows []float64
	reason  string
}

// NewMonitor returns a Monitor for a level expected to have about expected
// measured records (0 if unknown), which sets the window size.
func NewMonitor(cfg Saturation, expected int) *Monitor {
	w := max(expected/windowsPerLevel, minWindow)
	if expected <= 0 {
		w = 50
	}
	return &Monitor{cfg: cfg, window: w}
}

// Observe folds in one finished record and returns why the level should
// stop, or "" to go on; once it has returned a reason it keeps returning it.
// Warm-ups and cancelled records are ignored.
func (m *Monitor) Observe(r *runlog.Record) string {
	if m.reason != "" || m.cfg.Off || r.Warmup || r.ErrorClass == runlog.ErrCancelled {
		return m.reason
	}
	m.seen++
	if !r.OK() {
		m.failed++
	}
	if me := m.cfg.maxErr(); me >= 0 && m.seen >= minErrorRecords && float64(m.failed) > me*float64(m.seen) {
		m.reason = fmt.Sprintf("stopped early: error rate %.1f %% (%d of %d) above %g %%", 100*float64(m.failed)/float64(m.seen), m.failed, m.seen, 100*me)
		return m.reason
	}
	end := r.FirstTokenAt()
	if end < 0 {
		end = r.End
	}
	m.sum += float64(end-r.Intended) / 1e6
	m.n++
	if m.n < m.window {
		return ""
	}
	m.windows = append(m.windows, m.sum/float64(m.n))
	m.sum, m.n = 0, 0
	if k := len(m.windows); k >= growthWindows {
		a, b, c := mean(m.windows[:k/3]), mean(m.windows[k/3:2*k/3]), mean(m.windows[2*k/3:])
		if b > growthRatio*a && c > growthRatio*b && c-a > minGrowthMs {
			m.reason = fmt.Sprintf("stopped early: queue growing without bound (mean wait for the first token rose from %.0f ms to %.0f ms over %d requests)", a, c, m.seen)
		}
	}
	return m.reason
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
