package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// SimRunner runs each level on a fresh simulated engine in virtual time (no
// HTTP, no clock, no sleeping): deterministic, and thousands of requests per
// level in milliseconds. Every level replays the same requests under the
// same arrival seed, only scaled to its load (common random numbers), so
// the curve is smooth and a bisection sees a monotone boundary.
type SimRunner struct {
	// Engine configures the simulated engine; each level gets a new one.
	Engine sim.Config
	// Dataset is the workload; requests 0..NumPrompts−1 are replayed.
	Dataset workload.Dataset
	// NumPrompts, NumWarmups and Duration bound each level as in
	// simrun.Load.
	NumPrompts, NumWarmups int
	Duration               time.Duration
	// Burstiness is the gamma shape of inter-arrival gaps (0 means 1).
	Burstiness float64
	// Seed seeds the arrival schedule of every level.
	Seed int64
	// NaturalStop lets requests stop at their natural length, as requests
	// sent without ignore_eos do (see simrun.Load).
	NaturalStop bool
	// Stats says what each level's Summary holds (SLO, percentiles…).
	Stats stats.Options
	// Saturation configures the early stop of a saturated level.
	Saturation Saturation
	// Emit, if set, receives every record first (e.g. to write the records
	// file); an error stops the level and is returned.
	Emit func(*runlog.Record) error
	// Track builds a findings.Tracker per level (Point.Requests).
	Track bool
}

var _ Runner = (*SimRunner)(nil)

// errSaturated cancels a level the Monitor judged saturated.
var errSaturated = errors.New("level saturated")

// RunLevel runs level l in virtual time.
func (s *SimRunner) RunLevel(ctx context.Context, idx int, l Level) (Point, error) {
	eng, err := sim.New(s.Engine)
	if err != nil {
		return Point{}, err
	}
	acc := stats.NewAccumulator(s.Stats)
	mon := NewMonitor(s.Saturation, s.NumPrompts)
	var tr *findings.Tracker
	if s.Track {
		tr = findings.NewTracker()
	}
	var queue []int64
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopped := ""
	emit := func(r *runlog.Record) error {
		if s.Emit != nil {
			if err := s.Emit(r); err != nil {
				return err
			}
		}
		acc.Add(r)
		if tr != nil {
			tr.Add(r)
		}
		if !r.Warmup && r.OK() && r.Server != nil {
			queue = append(queue, r.Server.QueueNs)
		}
		if why := mon.Observe(r); why != "" && stopped == "" {
			stopped = why
			cancel(errSaturated)
		}
		return nil
	}
	res, err := simrun.Run(lctx, eng, s.Dataset, simrun.Load{
		RequestRate: l.Rate, Burstiness: s.Burstiness, MaxConcurrency: l.Concurrency,
		NumPrompts: s.NumPrompts, NumWarmups: s.NumWarmups, Duration: s.Duration, Seed: s.Seed, Level: idx,
		NaturalStop: s.NaturalStop,
	}, emit)
	if err != nil && !(stopped != "" && ctx.Err() == nil && errors.Is(context.Cause(lctx), errSaturated)) {
		return Point{}, fmt.Errorf("level %d (%s): %w", idx, l.Label, err)
	}
	p := Point{Index: idx, Level: l, Summary: acc.Summary(), DelayedArrivals: res.DelayedArrivals, Stopped: stopped, Requests: tr}
	if len(queue) > 0 {
		slices.Sort(queue)
		p.MedianQueueMs = medianNs(queue) / 1e6
		p.QueueFromServer = true
	} else {
		p.MedianQueueMs = QueueEstimateMs(&p.Summary)
	}
	return p, nil
}

// medianNs is the median of ascending values (mean of the middle two).
func medianNs(xs []int64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return float64(xs[n/2])
	}
	return (float64(xs[n/2-1]) + float64(xs[n/2])) / 2
}
