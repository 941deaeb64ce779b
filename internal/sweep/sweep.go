// Package sweep answers "how much load can we take": it runs a series of
// load levels through a Runner it defines (bench over HTTP, or the
// virtual-time simulator), finds the knee of the P99-TTFT curve, the
// throughput peak and the goodput peak (and how deep in SLO violation the
// throughput peak sits), bisects for the highest load that keeps the SLO,
// and stops levels and the sweep when the server is clearly saturated.
//
// The package is pure logic over Points: the runners (HTTP, virtual time)
// live in package run. Run and Search call the Runner
// from the calling goroutine, one level at a time; nothing here is safe for
// concurrent use unless stated.
package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Runner runs one load level. idx tags the level's records; the Point's
// Summary covers its measured requests.
type Runner interface {
	RunLevel(ctx context.Context, idx int, l runlog.Level) (Point, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, idx int, l runlog.Level) (Point, error)

// RunLevel calls f.
func (f RunnerFunc) RunLevel(ctx context.Context, idx int, l runlog.Level) (Point, error) {
	return f(ctx, idx, l)
}

var _ Runner = RunnerFunc(nil)

// Point is one level's measurement.
type Point struct {
	// Index is the level index its records carry.
	Index int
	// Level is the load as planned (its label and nominal rate).
	Level runlog.Level
	// Offered is the arrival rate the level's schedule delivered, req/s
	// (0 when unknown: a closed loop, or fewer than two arrivals). A
	// random schedule of a few requests strays from its nominal rate, so
	// verdicts on the rate axis are keyed on this, not on the label.
	Offered float64
	// Summary aggregates the level's measured requests.
	Summary stats.Summary
	// DelayedArrivals counts arrivals that waited for a free slot under
	// the concurrency cap.
	DelayedArrivals int
	// MedianQueueMs is the median time requests waited before being
	// served, ms (Sarathi-Serve's scheduling delay).
	MedianQueueMs float64
	// QueueFromServer says MedianQueueMs is the engine's own figure; false
	// means the upper bound QueueEstimateMs.
	QueueFromServer bool
	// Stopped says why the level stopped before its last request ("" when
	// it ran to the end); Interrupted when the user cut it short.
	Stopped string
	// Requests is the per-request view for findings; may be nil.
	Requests *findings.Tracker
}

// Interrupted is Point.Stopped of a level the user cut short (Ctrl-C):
// its figures cover part of a level, so the verdicts leave it out.
const Interrupted = "interrupted"

// Partial says p was cut short by the user: shown, but not judged.
func (p Point) Partial() bool { return p.Stopped == Interrupted }

// Load is the point's position on axis a: on the rate axis the offered
// rate where measured, else the level's nominal one.
func (p Point) Load(a Axis) float64 {
	if a == AxisRate && p.Offered > 0 {
		return p.Offered
	}
	return a.Load(p.Level)
}

// QueueEstimateMs bounds the median queueing delay from the outside, when
// the server does not report it: the median TTFT plus the median send lag.
// It includes prefill, so it overstates the queue.
func QueueEstimateMs(s *stats.Summary) float64 {
	q := s.SendLag.Median
	if m, ok := s.Metric(stats.MetricTTFT); ok {
		q += m.Median
	}
	return q
}

// Criteria is what a load must meet to be within SLO.
type Criteria struct {
	// Attainment is the SLO attainment a level needs (0–1); 0 means
	// DefaultAttainment.
	Attainment float64
	// MaxMedianQueueMs caps the median queueing delay, ms; 0 means none.
	MaxMedianQueueMs float64
}

// DefaultAttainment is the SLO attainment a level needs when Criteria
// leaves it unset.
const DefaultAttainment = 0.99

func (c Criteria) attainment() float64 {
	if c.Attainment <= 0 {
		return DefaultAttainment
	}
	return c.Attainment
}

// Meets reports whether p is within SLO, and if not why. A point without an
// SLO never is.
func (c Criteria) Meets(p Point) (bool, string) {
	s := &p.Summary
	if !s.SLO.Set {
		return false, "no SLO"
	}
	if s.Requests == 0 {
		return false, "no requests"
	}
	if a := c.attainment(); s.SLO.Attainment < a {
		return false, fmt.Sprintf("attainment %.2f %% < %g %%", 100*s.SLO.Attainment, 100*a)
	}
	if c.MaxMedianQueueMs > 0 && p.MedianQueueMs > c.MaxMedianQueueMs {
		return false, fmt.Sprintf("median queue %.0f ms > %g ms", p.MedianQueueMs, c.MaxMedianQueueMs)
	}
	return true, ""
}

// Config says how to run and judge a sweep.
type Config struct {
	// Axis is the dimension the levels vary.
	Axis Axis
	// Knee tunes the knee search.
	Knee KneeConfig
	// Criteria define "within SLO" for MaxWithinSLO.
	Criteria Criteria
	// Saturation says when a level is saturated and whether that stops the
	// sweep.
	Saturation Saturation
	// OnPoint, if set, receives each level as it finishes (for progress).
	OnPoint func(Point)
}

// Peak is a notable level of the curve.
type Peak struct {
	// Index is the position in Result.Points.
	Index int
	// Load is the level's load on the sweep's axis.
	Load float64
	// RequestThroughput is completed requests/s; OutputThroughput output
	// tokens/s; Goodput requests/s meeting the SLO; Attainment 0–1.
	RequestThroughput, OutputThroughput, Goodput, Attainment float64
}

// scalingFloor: throughput "still grows with load" when its relative gain
// between the two highest loads is at least this share of the load's.
const scalingFloor = 0.5

// saturates says whether the levels reached saturation: a level was judged
// saturated, or throughput stopped growing with load between the two
// highest loads (order lists point indexes by load).
func saturates(res *Result, order []int, a Axis) bool {
	for _, why := range res.Saturated {
		if why != "" {
			return true
		}
	}
	if len(order) < 2 {
		return false
	}
	hi, lo := &res.Points[order[len(order)-1]], &res.Points[order[len(order)-2]]
	tl, th := lo.Summary.RequestThroughput, hi.Summary.RequestThroughput
	if !(tl > 0) || !(lo.Load(a) > 0) {
		return false
	}
	return th/tl-1 < scalingFloor*(hi.Load(a)/lo.Load(a)-1)
}

func peakOf(i int, p *Point, a Axis) *Peak {
	return &Peak{Index: i, Load: p.Load(a), RequestThroughput: p.Summary.RequestThroughput,
		OutputThroughput: p.Summary.OutputThroughput, Goodput: p.Summary.SLO.Goodput, Attainment: p.Summary.SLO.Attainment}
}

// Violation is how far the throughput peak sits inside SLO violation.
type Violation struct {
	// LoadRatio is the throughput peak's load over the goodput peak's.
	LoadRatio float64
	// ViolatingShare is the share of requests missing the SLO at the
	// throughput peak (1 − attainment), 0–1.
	ViolatingShare float64
	// GoodputLoss is how much lower the goodput is at the throughput peak
	// than at the goodput peak, 0–1.
	GoodputLoss float64
}

// Result is a sweep's outcome.
type Result struct {
	// Axis is the dimension varied.
	Axis Axis
	// Points are the levels run, in run order.
	Points []Point
	// Saturated holds, per point, why it counts as saturated ("" if not).
	Saturated []string
	// Knee is where P99 TTFT turns up; nil when none was found, with
	// KneeNote saying why. KneeMethod states the method. A knee candidate
	// at the highest load tested while CapacityAbove holds is no knee: the
	// note names it.
	Knee                 *Knee
	KneeNote, KneeMethod string
	// CapacityAbove says no level reached saturation: none was judged
	// saturated, no knee turned below the highest load, and throughput
	// still grew with load between the two highest loads (by at least half
	// the load's relative step), so the capacity lies above the range
	// tested and the peaks at the highest load are only lower bounds.
	CapacityAbove bool
	// ThroughputPeak is the level with the most completed requests/s;
	// GoodputPeak the one with the most requests/s meeting the SLO (nil
	// without an SLO). The goodput peak may miss the SLO's attainment (a
	// load past it can still complete more good requests per second), so
	// it is not what to run at.
	ThroughputPeak, GoodputPeak *Peak
	// MaxWithinSLO is the highest-load level meeting Criteria (nil if none).
	MaxWithinSLO *Peak
	// Recommended is the recommended operating point: MaxWithinSLO, the
	// highest load that keeps the SLO (nil when no level did).
	Recommended *Peak
	// Partial lists the indexes in Points of levels cut short by the user
	// (Point.Partial): shown, but left out of the knee, the peaks and the
	// recommendation.
	Partial []int
	// Violation compares the two peaks; nil when they are the same level or
	// there is no SLO.
	Violation *Violation
	// Stopped says why the sweep stopped before its last level ("" if it
	// ran them all); Skipped counts the levels not run.
	Stopped string
	Skipped int
}

// Run runs levels in order through r and analyses them. After each level
// it judges saturation; unless cfg.Saturation.Off, a saturated level ends
// the sweep (higher loads would only be worse) and Result.Stopped says so.
// On a runner error or cancellation it returns the levels run so far,
// analysed, with the error.
func Run(ctx context.Context, r Runner, levels []runlog.Level, cfg Config) (Result, error) {
	var pts []Point
	var stopped string
	var err error
	for i, l := range levels {
		if err = ctx.Err(); err != nil {
			break
		}
		var p Point
		p, err = r.RunLevel(ctx, i, l)
		if err != nil {
			break
		}
		p.Index, p.Level = i, l
		pts = append(pts, p)
		if cfg.OnPoint != nil {
			cfg.OnPoint(p)
		}
		if why := cfg.Saturation.Judge(p); why != "" && !cfg.Saturation.Off && i < len(levels)-1 {
			stopped = fmt.Sprintf("level %d (%s) is saturated: %s; higher loads would only be worse", i, l.Label, why)
			break
		}
	}
	res := Analyze(pts, cfg)
	res.Stopped = stopped
	res.Skipped = len(levels) - len(pts)
	return res, err
}

// Analyze finds the knee, the peaks and the highest level within SLO among
// points (any order; equal loads keep the first).
func Analyze(points []Point, cfg Config) Result {
	res := Result{Axis: cfg.Axis, Points: points, KneeMethod: cfg.Knee.Method()}
	res.Saturated = make([]string, len(points))
	for i, p := range points {
		res.Saturated[i] = cfg.Saturation.Judge(p)
	}
	// Order by load, dropping repeats.
	order := make([]int, 0, len(points))
	for i := range points {
		if points[i].Partial() {
			res.Partial = append(res.Partial, i)
			continue
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := points[a].Load(cfg.Axis), points[b].Load(cfg.Axis)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	order = slices.CompactFunc(order, func(a, b int) bool { return points[a].Load(cfg.Axis) == points[b].Load(cfg.Axis) })

	var loads, p99s, p99lo, p99hi []float64
	var idx []int
	for _, i := range order {
		m, ok := points[i].Summary.Metric(stats.MetricTTFT)
		if !ok || m.N == 0 {
			continue
		}
		v, ok := m.P(99)
		if !ok {
			v = m.Max
		}
		iv := m.PCI(99)
		if !iv.OK() {
			iv.Lo, iv.Hi = math.NaN(), math.NaN() // no interval: no range
		}
		loads, p99s, idx = append(loads, points[i].Load(cfg.Axis)), append(p99s, v), append(idx, i)
		p99lo, p99hi = append(p99lo, iv.Lo), append(p99hi, iv.Hi)
	}
	top := -1
	if len(order) > 0 {
		top = order[len(order)-1]
	}
	unit := cfg.Axis.Unit()
	k, ok, why := FindKnee(loads, p99s, cfg.Knee)
	// A knee below the highest load is the curve turning: saturation is
	// within the range even if no level was judged saturated.
	res.CapacityAbove = len(order) > 0 && !saturates(&res, order, cfg.Axis) && !(ok && idx[k.Index] != top)
	switch {
	case ok && res.CapacityAbove && idx[k.Index] == top:
		res.KneeNote = fmt.Sprintf("P99 TTFT turns up only at the highest load tested (%s %s, %.0f ms) and no level saturated: the capacity lies above the range tested, so the turn is not placed yet; sweep higher loads",
			g(k.Load), unit, k.P99TTFTMs)
	case ok:
		k.Index = idx[k.Index]
		if r, ok := FindKneeRange(loads, p99lo, p99hi, cfg.Knee); ok {
			k.Range = &r
		}
		res.Knee = &k
	case res.CapacityAbove && len(loads) >= 3:
		res.KneeNote = fmt.Sprintf("%s; no level saturated, so the capacity lies above the range tested (beyond %s %s): sweep higher loads", why, g(points[top].Load(cfg.Axis)), unit)
	default:
		res.KneeNote = why
	}

	for _, i := range order {
		p := &points[i]
		if res.ThroughputPeak == nil || p.Summary.RequestThroughput > res.ThroughputPeak.RequestThroughput {
			res.ThroughputPeak = peakOf(i, p, cfg.Axis)
		}
		if p.Summary.SLO.Set && p.Summary.Requests > 0 && (res.GoodputPeak == nil || p.Summary.SLO.Goodput > res.GoodputPeak.Goodput) {
			res.GoodputPeak = peakOf(i, p, cfg.Axis)
		}
		if ok, _ := cfg.Criteria.Meets(*p); ok {
			res.MaxWithinSLO = peakOf(i, p, cfg.Axis)
		}
	}
	res.Recommended = res.MaxWithinSLO
	if tp, gp := res.ThroughputPeak, res.GoodputPeak; tp != nil && gp != nil && tp.Index != gp.Index && gp.Load > 0 {
		v := &Violation{LoadRatio: tp.Load / gp.Load, ViolatingShare: 1 - tp.Attainment}
		if gp.Goodput > 0 {
			v.GoodputLoss = 1 - tp.Goodput/gp.Goodput
		}
		res.Violation = v
	}
	return res
}
