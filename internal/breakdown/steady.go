package breakdown

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// RankSteady places the steady-state block first: whether the level
// settled says how to read every figure after it.
const RankSteady = 5

// Steady is a level's steady-state judgement (stats.SteadyState): its
// warm-up transient and any drift after it.
type Steady struct {
	stats.SteadyState
	// Trimmed says the transient's requests were left out of the level's
	// figures (--steady-state auto).
	Trimmed bool
}

// Rank places it before the other breakdowns.
func (*Steady) Rank() int { return RankSteady }

// steadyMaxBatches bounds a level's batches: past it neighbours merge and
// the batch doubles, so a soak of millions of requests holds 4,096
// batches (128 KB a metric) and the transient is found to within a batch.
const steadyMaxBatches = 4096

// steadySeries streams one latency into batches of 5 requests (MSER-5's),
// in the order the records arrive (completion order: close to send order
// at a level's scale).
type steadySeries struct {
	bs   []stats.SteadyBatch
	size int
}

func (s *steadySeries) add(sent int64, ms float64) {
	if s.size == 0 {
		s.size = 5
	}
	if n := len(s.bs); n > 0 && s.bs[n-1].N < s.size {
		b := &s.bs[n-1]
		b.N++
		b.Sum += ms
		b.FirstSent, b.LastSent = min(b.FirstSent, sent), max(b.LastSent, sent)
		return
	}
	if len(s.bs) == steadyMaxBatches {
		for j := range steadyMaxBatches / 2 {
			a, b := s.bs[2*j], s.bs[2*j+1]
			s.bs[j] = stats.SteadyBatch{N: a.N + b.N, Sum: a.Sum + b.Sum, FirstSent: min(a.FirstSent, b.FirstSent), LastSent: max(a.LastSent, b.LastSent)}
		}
		s.bs = s.bs[:steadyMaxBatches/2]
		s.size *= 2
	}
	s.bs = append(s.bs, stats.SteadyBatch{N: 1, Sum: ms, FirstSent: sent, LastSent: sent})
}

// full is the batches that are full (the last, partial one left out).
func (s *steadySeries) full() []stats.SteadyBatch {
	if n := len(s.bs); n > 0 && s.bs[n-1].N < s.size {
		return s.bs[:n-1]
	}
	return s.bs
}

// SteadyTracker collects each measured, successful request's latency —
// TTFT when it streamed, else E2E — in bounded batches, for the
// steady-state judgement at the level's end.
type SteadyTracker struct{ ttft, e2e steadySeries }

func init() { Register(func(Options) Accumulator { return new(SteadyTracker) }) }

// Add counts r's latency.
func (t *SteadyTracker) Add(r *runlog.Record) {
	if r.Warmup || !r.OK() {
		return
	}
	if d, ok := r.TTFT(); ok {
		t.ttft.add(r.Sent, float64(d)/1e6)
	}
	if d, ok := stats.RequestMetric(r, stats.MetricE2E); ok {
		t.e2e.add(r.Sent, float64(d)/1e6)
	}
}

// Breakdown judges TTFT when most requests had one, else E2E; nil with
// too few requests to judge.
func (t *SteadyTracker) Breakdown() Breakdown {
	s, metric := &t.ttft, stats.MetricTTFT
	if 2*len(t.ttft.bs) < len(t.e2e.bs) {
		s, metric = &t.e2e, stats.MetricE2E
	}
	st, ok := stats.DetectSteadyBatches(metric, s.full())
	if !ok {
		return nil
	}
	return &Steady{SteadyState: st}
}
