package servermetrics

import (
	"errors"
	"math"
	"sort"
)

// ErrTooFewScrapes is returned by Compute for a window with fewer than two
// snapshots, or with no time between its first and last: no rate or
// difference exists.
var ErrTooFewScrapes = errors.New("window needs two scrapes at different times")

// Window is what the server reported over one stretch of a run (a load
// level): from its first scrape to its last.
type Window struct {
	// StartNS and EndNS are the first and last scrape's times, in
	// nanoseconds from the run's start.
	StartNS, EndNS int64
	// Scrapes is the number of snapshots in the window.
	Scrapes int
	// Kind is the server kind of the last snapshot.
	Kind Kind
	// Increase is each counter's increase over the window, with restarts
	// counted from zero.
	Increase map[Name]float64
	// Rate is Increase per second of the window.
	Rate map[Name]float64
	// Resets counts, per counter or histogram, the decreases taken to be
	// server restarts.
	Resets map[Name]int
	// Gauges summarise each gauge over the window's scrapes.
	Gauges map[Name]GaugeStats
	// Histograms summarise the observations each histogram made inside
	// the window.
	Histograms map[Name]HistogramStats
	// GPUs summarise each GPU's gauges, by GPU ID.
	GPUs map[string]map[Name]GaugeStats
	// PrefixHitRate is Increase[PrefixHits] / Increase[PrefixQueries]
	// (0–1); 0 with no queries in the window.
	PrefixHitRate float64
	// PromptTokensPerSec and GenerationTokensPerSec are the server's
	// prefill and decode token throughput (tokens/s): from the token
	// counters, or, for a server without them (TGI), from the sums of the
	// per-request token histograms.
	PromptTokensPerSec, GenerationTokensPerSec float64
}

// Seconds is the window's length in seconds.
func (w Window) Seconds() float64 { return float64(w.EndNS-w.StartNS) / 1e9 }

// GaugeStats summarise a gauge's scraped values. The mean is over
// scrapes, not time-weighted: scrapes come at a steady interval.
type GaugeStats struct {
	// N is the number of scrapes that reported the gauge.
	N int
	// Mean, Min, Max and Last are in the gauge's unit.
	Mean, Min, Max, Last float64
}

// HistogramStats summarise the observations made inside a window.
type HistogramStats struct {
	// Delta is the histogram of those observations alone.
	Delta Histogram
	// Count is the number of observations; with Count 0 the other fields
	// are 0.
	Count float64
	// Mean is Delta.Sum / Count, in the metric's unit.
	Mean float64
	// P50, P90 and P99 are estimated by linear interpolation inside
	// buckets, as Prometheus's histogram_quantile does, then held inside
	// their Range: a point estimate, not a measurement.
	P50, P90, P99 float64
	// P50Range, P90Range and P99Range are what the buckets and the mean
	// prove of each quantile: it lies in the range. Print these, not the
	// interpolated figure, which can sit anywhere inside a wide bucket.
	P50Range, P90Range, P99Range Range
}

// Range brackets a quantile estimated from a histogram: the true
// quantile lies in [Lo, Hi], in the metric's unit. Hi is +Inf when
// nothing bounds it from above.
type Range struct {
	Lo, Hi float64
}

// Exact says the range is one value.
func (r Range) Exact() bool { return r.Lo == r.Hi }

// clamp holds v inside r.
func (r Range) clamp(v float64) float64 { return min(max(v, r.Lo), r.Hi) }

// capAt lowers Hi to at when at is inside the range: a bound observed
// outside the histogram (the longest request the client saw). A bound
// below Lo contradicts the buckets, which are the server's own count,
// and is ignored.
func (r Range) capAt(at float64) Range {
	if at >= r.Lo && at < r.Hi {
		r.Hi = at
	}
	return r
}

// Capped returns s with every quantile bounded by at, the longest any
// observation can have been (for a per-request duration, the longest
// request the client saw in flight over the window). A bound below a
// quantile's bucket is ignored: the window held an observation the bound
// does not cover.
func (s HistogramStats) Capped(at float64) HistogramStats {
	if s.Count <= 0 || math.IsNaN(at) {
		return s
	}
	s.P50Range, s.P90Range, s.P99Range = s.P50Range.capAt(at), s.P90Range.capAt(at), s.P99Range.capAt(at)
	s.P50, s.P90, s.P99 = s.P50Range.clamp(s.P50), s.P90Range.clamp(s.P90), s.P99Range.clamp(s.P99)
	return s
}

// Between returns the snapshots taken in [startNS, endNS], in time order.
// It does not modify snaps.
func Between(snaps []Snapshot, startNS, endNS int64) []Snapshot {
	var out []Snapshot
	for _, s := range snaps {
		if s.TimeNS >= startNS && s.TimeNS <= endNS {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeNS < out[j].TimeNS })
	return out
}

// Compute summarises the snapshots of one window, which must be of one
// endpoint and in time order (Between returns them so). Counters and
// histograms are differenced scrape by scrape, so a restart inside the
// window loses only the observations between the last scrape before it
// and the restart.
func Compute(snaps []Snapshot) (Window, error) {
	if len(snaps) < 2 || snaps[len(snaps)-1].TimeNS <= snaps[0].TimeNS {
		return Window{}, ErrTooFewScrapes
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	w := Window{
		StartNS:    first.TimeNS,
		EndNS:      last.TimeNS,
		Scrapes:    len(snaps),
		Kind:       last.Kind,
		Increase:   map[Name]float64{},
		Rate:       map[Name]float64{},
		Resets:     map[Name]int{},
		Gauges:     map[Name]GaugeStats{},
		Histograms: map[Name]HistogramStats{},
		GPUs:       map[string]map[Name]GaugeStats{},
	}
	secs := w.Seconds()
	for _, d := range vocabulary {
		switch d.Type {
		case TypeCounter:
			inc, resets, ok := counterIncrease(snaps, d.Name)
			if !ok {
				continue
			}
			w.Increase[d.Name], w.Rate[d.Name] = inc, inc/secs
			if resets > 0 {
				w.Resets[d.Name] = resets
			}
		case TypeGauge:
			if g, ok := gaugeStats(snaps, func(s Snapshot) (float64, bool) { v, ok := s.Values[d.Name]; return v, ok }); ok {
				w.Gauges[d.Name] = g
			}
		case TypeHistogram:
			delta, resets, ok := histogramIncrease(snaps, d.Name)
			if !ok {
				continue
			}
			w.Histograms[d.Name] = statsOf(delta)
			if resets > 0 {
				w.Resets[d.Name] = resets
			}
		}
	}
	gpuWindows(&w, snaps)
	if q := w.Increase[PrefixQueries]; q > 0 {
		w.PrefixHitRate = w.Increase[PrefixHits] / q
	}
	w.PromptTokensPerSec = tokenRate(w, PromptTokens, RequestPromptTokens, secs)
	w.GenerationTokensPerSec = tokenRate(w, GenerationTokens, RequestGenerationTokens, secs)
	return w, nil
}

func tokenRate(w Window, counter, hist Name, secs float64) float64 {
	if r, ok := w.Rate[counter]; ok {
		return r
	}
	if h, ok := w.Histograms[hist]; ok {
		return h.Delta.Sum / secs
	}
	return 0
}

// counterIncrease adds up the rises between consecutive scrapes; a fall
// means the server restarted and counts from zero, as Prometheus's
// increase() does.
func counterIncrease(snaps []Snapshot, n Name) (inc float64, resets int, ok bool) {
	prev, have := 0.0, false
	for _, s := range snaps {
		v, present := s.Values[n]
		if !present {
			continue
		}
		if have {
			if v >= prev {
				inc += v - prev
			} else {
				inc += v
				resets++
			}
		}
		prev, have, ok = v, true, have || ok
	}
	return inc, resets, ok
}

func gaugeStats(snaps []Snapshot, get func(Snapshot) (float64, bool)) (GaugeStats, bool) {
	var g GaugeStats
	var sum float64
	for _, s := range snaps {
		v, ok := get(s)
		if !ok {
			continue
		}
		if g.N == 0 || v < g.Min {
			g.Min = v
		}
		if g.N == 0 || v > g.Max {
			g.Max = v
		}
		sum += v
		g.Last = v
		g.N++
	}
	if g.N == 0 {
		return GaugeStats{}, false
	}
	g.Mean = sum / float64(g.N)
	return g, true
}

// histogramIncrease differences cumulative histograms scrape by scrape.
// A scrape whose count or any bucket fell, or whose bounds changed, is a
// restart: its own counts are the increase since it. A change of bounds
// also drops what was added up before, which cannot be expressed in the
// new bounds.
func histogramIncrease(snaps []Snapshot, n Name) (delta Histogram, resets int, ok bool) {
	var prev Histogram
	have := false
	for _, s := range snaps {
		h, present := s.Histograms[n]
		if !present {
			continue
		}
		if !have {
			prev, have = h, true
			continue
		}
		if !ok {
			delta = Histogram{Buckets: make([]Bucket, len(h.Buckets))}
			for i, b := range h.Buckets {
				delta.Buckets[i].UpperBound = b.UpperBound
			}
			ok = true
		}
		step, reset := histogramStep(prev, h)
		if reset {
			resets++
		}
		if !sameBounds(delta.Buckets, step.Buckets) {
			delta = Histogram{Buckets: make([]Bucket, len(step.Buckets))}
			for i, b := range step.Buckets {
				delta.Buckets[i].UpperBound = b.UpperBound
			}
		}
		for i := range delta.Buckets {
			delta.Buckets[i].Count += step.Buckets[i].Count
		}
		delta.Count += step.Count
		delta.Sum += step.Sum
		prev = h
	}
	return delta, resets, ok
}

func histogramStep(prev, cur Histogram) (Histogram, bool) {
	reset := cur.Count < prev.Count || !sameBounds(prev.Buckets, cur.Buckets)
	if !reset {
		for i := range cur.Buckets {
			if cur.Buckets[i].Count < prev.Buckets[i].Count {
				reset = true
				break
			}
		}
	}
	step := Histogram{Buckets: make([]Bucket, len(cur.Buckets))}
	copy(step.Buckets, cur.Buckets)
	step.Count, step.Sum = cur.Count, cur.Sum
	if reset {
		return step, true
	}
	for i := range step.Buckets {
		step.Buckets[i].Count -= prev.Buckets[i].Count
	}
	step.Count -= prev.Count
	step.Sum -= prev.Sum
	return step, false
}

func statsOf(h Histogram) HistogramStats {
	st := HistogramStats{Delta: h, Count: h.Count}
	if h.Count <= 0 {
		return st
	}
	st.Mean = h.Sum / h.Count
	st.P50Range, st.P90Range, st.P99Range = h.QuantileRange(0.5), h.QuantileRange(0.9), h.QuantileRange(0.99)
	st.P50 = st.P50Range.clamp(zeroNaN(h.Quantile(0.5)))
	st.P90 = st.P90Range.clamp(zeroNaN(h.Quantile(0.9)))
	st.P99 = st.P99Range.clamp(zeroNaN(h.Quantile(0.99)))
	return st
}

// QuantileRange is what h proves of its q-quantile (0 < q < 1): the
// bounds of the bucket the rank falls in (0 below the first, when that
// bound is positive; +Inf above the last finite one), the upper one
// lowered by Markov's inequality where the observations cannot be
// negative: no more than a share 1−q of them can exceed mean/(1−q). A
// histogram without observations, or q outside (0, 1), gives {0, 0}.
func (h Histogram) QuantileRange(q float64) Range {
	b := h.Buckets
	if !(q > 0 && q < 1) || len(b) < 2 || !math.IsInf(b[len(b)-1].UpperBound, 1) {
		return Range{}
	}
	// Forced monotonic, as Quantile does.
	prev, i := 0.0, 0
	total := 0.0
	for j := range b {
		total = max(total, b[j].Count)
	}
	if total <= 0 {
		return Range{}
	}
	rank := q * total
	for i = range b {
		prev = max(prev, b[i].Count)
		if prev >= rank {
			break
		}
	}
	r := Range{Lo: math.Inf(-1), Hi: b[i].UpperBound}
	switch {
	case i > 0:
		r.Lo = b[i-1].UpperBound
	case b[0].UpperBound > 0:
		r.Lo = 0
	}
	if r.Lo >= 0 && h.Count > 0 && h.Sum >= 0 {
		if m := h.Sum / h.Count / (1 - q); m >= r.Lo && m < r.Hi {
			r.Hi = m
		}
	}
	if math.IsInf(r.Lo, -1) {
		r.Lo = r.Hi // a first bucket at or below 0: all Quantile can say
	}
	return r
}

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations, as
// Prometheus's histogram_quantile does for classic histograms: find the
// bucket the rank falls in and interpolate linearly between its bounds,
// taking 0 as the lower bound of the first bucket (when its upper bound
// is positive). A rank in the +Inf bucket returns the highest finite
// bound. NaN means no observations, no +Inf bucket or fewer than two
// buckets.
func (h Histogram) Quantile(q float64) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(1)
	}
	b := h.Buckets
	if len(b) < 2 || !math.IsInf(b[len(b)-1].UpperBound, 1) {
		return math.NaN()
	}
	// A scrape is not atomic: a later bucket can read lower than an
	// earlier one. Prometheus forces the counts to be monotonic; so do we,
	// on a copy.
	counts := make([]float64, len(b))
	for i := range b {
		counts[i] = b[i].Count
		if i > 0 && counts[i] < counts[i-1] {
			counts[i] = counts[i-1]
		}
	}
	total := counts[len(counts)-1]
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	i := sort.SearchFloat64s(counts, rank)
	if i >= len(b)-1 {
		return b[len(b)-2].UpperBound
	}
	if i == 0 && b[0].UpperBound <= 0 {
		return b[0].UpperBound
	}
	start, end, count := 0.0, b[i].UpperBound, counts[i]
	if i > 0 {
		start = b[i-1].UpperBound
		count -= counts[i-1]
		rank -= counts[i-1]
	}
	if count <= 0 {
		return end
	}
	return start + (end-start)*(rank/count)
}

func gpuWindows(w *Window, snaps []Snapshot) {
	ids := map[string]bool{}
	for _, s := range snaps {
		for _, g := range s.GPUs {
			ids[g.ID] = true
		}
	}
	for id := range ids {
		stats := map[Name]GaugeStats{}
		for _, n := range []Name{GPUUtil, GPUMemUsedBytes, GPUPowerWatts} {
			g, ok := gaugeStats(snaps, func(s Snapshot) (float64, bool) {
				for _, g := range s.GPUs {
					if g.ID == id {
						v, ok := g.Values[n]
						return v, ok
					}
				}
				return 0, false
			})
			if ok {
				stats[n] = g
			}
		}
		w.GPUs[id] = stats
	}
}
