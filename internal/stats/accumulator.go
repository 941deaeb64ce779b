// Package stats aggregates per-request records (runlog.Record) into a
// Summary: counts, throughput, vLLM-compatible latency distributions
// (percentiles with numpy's linear interpolation, population std), goodput
// and SLO attainment, per-input-length buckets, and the figures a report
// needs to state its conditions.
//
// The metrics themselves (TTFT, TPOT, ITL, E2E, TTP, response time) are
// defined once, on runlog.Record; this package only aggregates them. Only
// successful, non-warm-up records count toward latency metrics; failed ones
// count by error class. The package is pure: no I/O, no clock.
//
// An Accumulator is not safe for concurrent use; give each goroutine its own
// or serialise Add.
package stats

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

const nsPerMs = 1e-6 // scale from stored ns to reported ms

// Accumulator aggregates records one at a time, keeping only the samples a
// Summary needs: an int64 (ns) per request and metric, and a float32 (ms) per
// inter-token gap, so 100,000 requests of ~170 tokens take ~85 MiB. Means,
// standard deviations, minima and maxima are computed from exact values;
// ITL percentiles carry float32's rounding (a relative 6e-8: nanoseconds at
// millisecond gaps), which two decimals never show.
//
// Memory is bounded however long the run: a series that reaches
// ExactRequests samples (ExactGaps for ITL) continues in a quantile sketch
// whose percentiles are within SketchRelErr of the exact ones and are marked
// MetricSummary.Approx; the peak-concurrency sweep likewise continues on a
// binned timeline (Summary.PeakConcurrencyBinNs). At most ~180 MiB in all
// (the exact samples up to the bounds, the timelines, the sketches),
// whatever the run's length; below the bounds the Summary is exactly
// Summarize's.
type Accumulator struct {
	opt    Options
	bound  bounds
	sel    map[string]bool
	edges  []int
	labels []string

	level            int // -2 none seen yet, -1 mixed
	requests, failed int
	completed, empty int
	warmups          int
	failures         map[runlog.ErrorClass]int
	// firstSend and lastEnd bound the run's window, over every attempt
	// (a retried one too: it was load); windowed once one is in.
	firstSend         int64
	lastEnd           int64
	windowed          bool
	firstOKSend       int64
	inTok, outTok     int64
	embeds            int64
	retried           int
	retriedBy         map[runlog.ErrorClass]int
	reasonTok, cached int64
	multiToken        int
	sources           map[runlog.TokenSource]int
	usageRejected     int
	usageRejectedEx   string
	flight            flight // send, end intervals for peak concurrency
	tl                timeline

	// Per-request latency series, indexed like perRequest.
	lat [len(perRequest)]*series[int64]
	// Inter-token gaps: itlSame holds records whose per-token gaps equal
	// their chunk gaps (one token per chunk), stored once for both metrics;
	// itlMulti and tokMulti hold the two kinds for the other records.
	itlSame, itlMulti, tokMulti *series[float32]
	scratch, scratch2           []time.Duration

	sendLag, inputLen, outputLen, mismatch *series[int64]
	retryAfter                             *series[int64]
	retryAfterN                            int

	good    int
	met     [4]int
	buckets []bucketAcc

	// Batches for confidence intervals, nil unless Options.Confidence is
	// set: the ITL and per-token ITL gaps in order (their samples are
	// stored split two ways), SLO indicators per request, and counts over
	// time windows for the rates.
	itlB, tokB *batchMeans
	sloB       *countBatches
	rateB      *rateWindows
}

type bucketAcc struct {
	requests, completed, failed, good int
	lat                               [len(perRequest)]*series[int64]
}

// perRequest lists the metrics with one value per request, in report order.
var perRequest = [...]struct {
	name string
	get  func(*runlog.Record) (time.Duration, bool)
}{
	{MetricTTFT, (*runlog.Record).TTFT},
	{MetricTPOT, (*runlog.Record).TPOT},
	{MetricE2E, (*runlog.Record).E2E},
	{MetricTTP, (*runlog.Record).TTP},
	{MetricResponse, (*runlog.Record).ResponseTime},
}

// bounds caps the samples each series keeps exactly before it switches to a
// sketch: requests for each per-request series and the concurrency sweep,
// gaps for the three ITL series together. Zero means no cap.
type bounds struct{ requests, gaps int }

// NewAccumulator returns an empty Accumulator summarising as o says, in
// bounded memory: exact up to ExactRequests requests (ExactGaps gaps), then
// within SketchRelErr (see Accumulator).
func NewAccumulator(o Options) *Accumulator {
	return newAccumulator(o, bounds{requests: ExactRequests, gaps: ExactGaps})
}

// NewExactAccumulator is NewAccumulator without the bound: it keeps every
// sample, so every figure is exact however many records are added, and
// memory grows with them (~0.2–0.4 KiB a request). It is for callers that
// hold all the records in memory anyway, such as a report on a records file.
func NewExactAccumulator(o Options) *Accumulator {
	return newAccumulator(o, bounds{})
}

func newAccumulator(o Options, bd bounds) *Accumulator {
	o = o.normalized()
	a := &Accumulator{
		opt:        o,
		bound:      bd,
		flight:     flight{limit: bd.requests},
		sel:        map[string]bool{},
		edges:      o.Buckets,
		labels:     BucketLabels(o.Buckets),
		level:      -2,
		failures:   map[runlog.ErrorClass]int{},
		retriedBy:  map[runlog.ErrorClass]int{},
		sources:    map[runlog.TokenSource]int{},
		sendLag:    newSeries[int64](nsPerMs, bd.requests),
		inputLen:   newSeries[int64](1, bd.requests),
		outputLen:  newSeries[int64](1, bd.requests),
		mismatch:   newSeries[int64](1, bd.requests),
		retryAfter: newSeries[int64](nsPerMs, bd.requests),
	}
	for _, m := range o.Metrics {
		a.sel[m] = true
	}
	for i, m := range perRequest {
		if a.sel[m.name] {
			a.lat[i] = newSeries[int64](nsPerMs, bd.requests)
		}
	}
	if a.sel[MetricITL] {
		// No cap of their own: addITLs spills the three together.
		a.itlSame = newSeries[float32](1, 0)
		a.itlMulti = newSeries[float32](1, 0)
		a.tokMulti = newSeries[float32](1, 0)
	}
	if len(o.Buckets) > 0 {
		a.buckets = make([]bucketAcc, len(o.Buckets)+1)
		for b := range a.buckets {
			for i := range a.lat {
				if a.lat[i] != nil {
					a.buckets[b].lat[i] = newSeries[int64](nsPerMs, bd.requests)
				}
			}
		}
	}
	if o.Confidence > 0 {
		a.batchForIntervals()
	}
	return a
}

// batchForIntervals gives every latency series (per bucket too) and the
// ITL, SLO and rate figures the batches their confidence intervals come
// from.
func (a *Accumulator) batchForIntervals() {
	for i := range a.lat {
		if a.lat[i] != nil {
			a.lat[i].bt = new(batchMeans)
		}
		for b := range a.buckets {
			if s := a.buckets[b].lat[i]; s != nil {
				s.bt = new(batchMeans)
			}
		}
	}
	if a.itlSame != nil {
		a.itlB, a.tokB = new(batchMeans), new(batchMeans)
	}
	if !a.opt.SLO.IsZero() {
		a.sloB = new(countBatches)
	}
	a.rateB = new(rateWindows)
}

// Summarize is NewExactAccumulator(o), Add for each record, then Summary:
// every figure exact, whatever the number of records.
func Summarize(recs []runlog.Record, o Options) Summary {
	a := NewExactAccumulator(o)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Summary()
}

// promptLen is the input length a record was sent with: the server's count
// when known, else what the workload asked for.
func promptLen(r *runlog.Record) int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return r.RequestedPromptTokens
}

// bucketOf returns the index of the bucket holding input length n, or -1.
func (a *Accumulator) bucketOf(n int) int {
	if a.buckets == nil {
		return -1
	}
	i, found := slices.BinarySearch(a.edges, n)
	if found {
		i++
	}
	return i
}

// widen stretches the run's window to cover an attempt sent at sent that
// ended at end.
func (a *Accumulator) widen(sent, end int64) {
	if !a.windowed {
		a.firstSend, a.lastEnd, a.windowed = sent, end, true
		return
	}
	a.firstSend = min(a.firstSend, sent)
	a.lastEnd = max(a.lastEnd, end)
}

// Add folds one record into the aggregate. Warm-up records are only counted.
// The Accumulator keeps no reference to r.
func (a *Accumulator) Add(r *runlog.Record) {
	if r.Warmup {
		a.warmups++
		return
	}
	if r.Retried {
		// An attempt the client sent again: load on the server, not the
		// request's outcome (its last attempt is).
		a.retried++
		a.retriedBy[r.ErrorClass]++
		a.widen(r.Sent, max(r.End, r.Sent))
		// It was in flight beside the rest: peak concurrency counts
		// what the server held, not only the requests' last attempts.
		a.flight.add(r.Sent, max(r.End, r.Sent))
		return
	}
	switch a.level {
	case -2:
		a.level = r.Level
	case r.Level:
	default:
		a.level = -1
	}
	// The stream's end, or its last token if End was not set; E2E's ok flag
	// (unlike LastTokenAt's −1) is unambiguous when times are negative.
	end := max(r.End, r.Sent)
	if e2e, ok := r.E2E(); ok {
		end = max(end, r.Sent+int64(e2e))
	}
	a.widen(r.Sent, end)
	a.requests++
	if a.rateB != nil {
		if a.rateB.width == 0 {
			a.rateB.reach(r.Sent) // the windows start at the first send
		}
		a.rateB.reach(end) // and span every request, failed ones too
	}
	a.flight.add(r.Sent, end)
	a.sendLag.addInt(int64(r.SendLag()))
	pl := promptLen(r)
	if pl > 0 {
		a.inputLen.addInt(int64(pl))
	}
	var bk *bucketAcc
	if b := a.bucketOf(pl); b >= 0 {
		bk = &a.buckets[b]
		bk.requests++
	}

	if !r.OK() {
		a.failed++
		a.failures[r.ErrorClass]++
		if r.ErrorClass == runlog.ErrHTTP429 && r.RetryAfterNs > 0 {
			a.retryAfter.addInt(r.RetryAfterNs)
			a.retryAfterN++
		}
		if bk != nil {
			bk.failed++
		}
		if a.sloB != nil {
			a.sloB.add(false, [len(sloNames)]bool{})
		}
		return
	}

	if a.completed == 0 || r.Sent < a.firstOKSend {
		a.firstOKSend = r.Sent
	}
	a.completed++
	out := r.OutputTokens()
	a.inTok += int64(r.PromptTokens)
	a.outTok += int64(out)
	a.reasonTok += int64(r.ReasoningTokens)
	a.cached += int64(r.CachedTokens)
	a.sources[r.TokenSource]++
	if r.UsageRejected != "" {
		a.usageRejected++
		if a.usageRejectedEx == "" {
			a.usageRejectedEx = r.UsageRejected
		}
	}
	a.outputLen.addInt(int64(out))
	if r.RequestedPromptTokens > 0 && r.PromptTokens > 0 {
		d := r.RequestedPromptTokens - r.PromptTokens
		a.mismatch.addInt(int64(max(d, -d)))
	}
	a.embeds += int64(r.Embeddings)
	if r.FirstTokenAt() < 0 && r.Embeddings == 0 {
		a.empty++
	}
	if bk != nil {
		bk.completed++
	}

	for i, m := range perRequest {
		if a.lat[i] == nil {
			continue
		}
		if d, ok := m.get(r); ok {
			a.lat[i].addInt(int64(d))
			if bk != nil {
				bk.lat[i].addInt(int64(d))
			}
		}
	}
	if a.itlSame != nil {
		a.addITLs(r)
	}
	for _, c := range r.Chunks {
		if c.Tokens > 0 {
			a.tl.add(c.T, c.Tokens)
		}
	}

	good := false
	if !a.opt.SLO.IsZero() {
		per, all := a.opt.SLO.check(r)
		for i, ok := range per {
			if ok {
				a.met[i]++
			}
		}
		if all {
			a.good++
			if bk != nil {
				bk.good++
			}
		}
		if a.sloB != nil {
			a.sloB.add(all, per)
		}
		good = all
	}
	if a.rateB != nil {
		w := &a.rateB.c[a.rateB.reach(end)]
		w[rateCompleted]++
		w[rateOutput] += float64(out)
		if good {
			w[rateGood]++
		}
	}
}

// addITLs stores r's chunk gaps and per-token gaps, once when they coincide.
// The three series share one bound: the gap that would take them past it
// moves all three into sketches (ITL and per-token ITL are each the union of
// two of them, which is exact only while both are).
func (a *Accumulator) addITLs(r *runlog.Record) {
	a.scratch = r.ITLs(a.scratch[:0])
	a.scratch2 = r.TokenITLs(a.scratch2[:0])
	same := slices.Equal(a.scratch, a.scratch2)
	if g := a.bound.gaps; g > 0 && a.itlSame.sk == nil {
		n := len(a.itlSame.vals) + len(a.itlMulti.vals) + len(a.tokMulti.vals) + len(a.scratch)
		if !same {
			n += len(a.scratch2)
		}
		if n > g {
			a.itlSame.spill()
			a.itlMulti.spill()
			a.tokMulti.spill()
		}
	}
	store := func(s *series[float32], ds []time.Duration) {
		for _, d := range ds {
			ms := float64(d) * nsPerMs
			s.add(float32(ms), ms)
		}
	}
	if a.itlB != nil {
		for _, d := range a.scratch {
			a.itlB.add(float64(d) * nsPerMs)
		}
		for _, d := range a.scratch2 {
			a.tokB.add(float64(d) * nsPerMs)
		}
	}
	if same {
		store(a.itlSame, a.scratch)
		return
	}
	a.multiToken++
	store(a.itlMulti, a.scratch)
	store(a.tokMulti, a.scratch2)
}

// Summary computes the aggregate of everything added so far. It may be called
// again after further Adds.
func (a *Accumulator) Summary() Summary {
	o := a.opt
	s := Summary{
		Options:              o,
		Level:                max(a.level, -1),
		Requests:             a.requests,
		Completed:            a.completed,
		Failed:               a.failed,
		Failures:             map[runlog.ErrorClass]int{},
		Warmups:              a.warmups,
		Empty:                a.empty,
		FirstSendNs:          a.firstSend,
		LastEndNs:            a.lastEnd,
		InputTokens:          a.inTok,
		Embeddings:           a.embeds,
		RetriedAttempts:      a.retried,
		OutputTokens:         a.outTok,
		ReasoningTokens:      a.reasonTok,
		CachedTokens:         a.cached,
		MultiTokenRecords:    a.multiToken,
		TokenSources:         map[runlog.TokenSource]int{},
		UsageRejected:        a.usageRejected,
		UsageRejectedExample: a.usageRejectedEx,
	}
	for k, v := range a.failures {
		s.Failures[k] = v
	}
	for k, v := range a.sources {
		s.TokenSources[k] = v
	}
	if a.requests > 0 {
		s.DurationS = float64(a.lastEnd-a.firstSend) / 1e9
	}
	if a.retried > 0 {
		s.RetriedBy = a.retriedBy
	}
	if a.requests > 0 {
		s.RetryAmplification = float64(a.requests+a.retried) / float64(a.requests)
	}
	if a.inTok > 0 {
		s.CachedShare = float64(a.cached) / float64(a.inTok)
	}
	if s.DurationS > 0 {
		s.OriginalRate = float64(a.requests) / s.DurationS
		s.AttemptRate = float64(a.requests+a.retried) / s.DurationS
		s.RequestThroughput = float64(a.completed) / s.DurationS
		s.InputThroughput = float64(a.inTok) / s.DurationS
		s.EmbeddingThroughput = float64(a.embeds) / s.DurationS
		s.OutputThroughput = float64(a.outTok) / s.DurationS
		s.TotalTokenThroughput = float64(a.inTok+a.outTok) / s.DurationS
	}
	if a.completed > 0 {
		s.PeakOutputTokensPerS = float64(a.tl.peak(a.firstOKSend))
	}
	s.PeakConcurrency, s.PeakConcurrencyBinNs = a.flight.peak()
	s.PeakDroppedChunks = a.tl.dropped

	for i, m := range perRequest {
		if a.lat[i] != nil {
			s.Metrics = append(s.Metrics, summarizeCI(m.name, o.Percentiles, a.lat[i], nil, a.lat[i].bt, o.Confidence))
		}
		// ITL goes after TPOT (or where TPOT would be), as in vLLM's report.
		if m.name == MetricTPOT && a.itlSame != nil {
			s.Metrics = append(s.Metrics,
				summarizeCI(MetricITL, o.Percentiles, a.itlSame, a.itlMulti, a.itlB, o.Confidence),
				summarizeCI(MetricITLToken, o.Percentiles, a.itlSame, a.tokMulti, a.tokB, o.Confidence))
		}
	}

	if !o.SLO.IsZero() {
		s.SLO = SLOSummary{Set: true, Good: a.good, Attainment: frac(a.good, a.requests)}
		if s.DurationS > 0 {
			s.SLO.Goodput = float64(a.good) / s.DurationS
		}
		for i, l := range o.SLO.limits() {
			if l == 0 {
				continue
			}
			s.SLO.Constraints = append(s.SLO.Constraints, ConstraintSummary{
				Name:       sloNames[i],
				LimitMs:    float64(l) * nsPerMs,
				Met:        a.met[i],
				Attainment: frac(a.met[i], a.requests),
			})
		}
	}
	a.rateIntervals(&s)

	bps := slices.Clone(o.Percentiles)
	for _, p := range []float64{50, 99} {
		if !slices.Contains(bps, p) {
			bps = append(bps, p)
		}
	}
	for b := range a.buckets {
		bk := &a.buckets[b]
		bs := BucketSummary{
			Label:     a.labels[b],
			Requests:  bk.requests,
			Completed: bk.completed,
			Failed:    bk.failed,
		}
		if b > 0 {
			bs.Lo = a.edges[b-1]
		}
		if b < len(a.edges) {
			bs.Hi = a.edges[b]
		}
		if !o.SLO.IsZero() {
			bs.Good, bs.Attainment = bk.good, frac(bk.good, bk.requests)
			if a.sloB != nil && bk.requests > 0 {
				// A bucket's requests interleave with the others': the
				// whole run's correlation of meeting the SLO scales its n.
				bs.AttainmentCI, _ = WilsonInterval(bs.Attainment, float64(bk.requests)/a.sloB.vif(0), o.Confidence)
			}
		}
		for i, m := range perRequest {
			if bk.lat[i] != nil {
				bs.Metrics = append(bs.Metrics, summarizeCI(m.name, bps, bk.lat[i], nil, bk.lat[i].bt, o.Confidence))
			}
		}
		s.Buckets = append(s.Buckets, bs)
	}

	s.SendLag = summarize("send_lag", []float64{50, 99}, a.sendLag, nil)
	s.InputLen = summarize("input_len", []float64{50, 90, 95, 99}, a.inputLen, nil)
	s.OutputLen = summarize("output_len", []float64{50, 90, 99}, a.outputLen, nil)
	s.PromptMismatch = summarize("prompt_mismatch", []float64{50, 99}, a.mismatch, nil)
	if a.retryAfterN > 0 {
		s.RetryAfter = summarize("retry_after", []float64{50, 99}, a.retryAfter, nil)
	}
	s.Approx = s.approx()
	s.Warnings = warnings(&s)
	return s
}

// rateIntervals fills s's throughput, goodput and attainment intervals
// when Options.Confidence asks for them.
func (a *Accumulator) rateIntervals(s *Summary) {
	lv := a.opt.Confidence
	if a.rateB == nil || s.DurationS <= 0 {
		return
	}
	s.RequestThroughputCI = a.rateB.interval(rateCompleted, s.RequestThroughput, a.lastEnd, lv)
	s.OutputThroughputCI = a.rateB.interval(rateOutput, s.OutputThroughput, a.lastEnd, lv)
	if a.sloB == nil || !s.SLO.Set {
		return
	}
	s.SLO.GoodputCI = a.rateB.interval(rateGood, s.SLO.Goodput, a.lastEnd, lv)
	s.SLO.AttainmentCI = a.sloB.attainment(0, a.good, a.requests, lv)
	for i, l := range a.opt.SLO.limits() {
		if l == 0 {
			continue
		}
		for j := range s.SLO.Constraints {
			if c := &s.SLO.Constraints[j]; c.Name == sloNames[i] {
				c.AttainmentCI = a.sloB.attainment(1+i, a.met[i], a.requests, lv)
			}
		}
	}
}

func frac(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// peakConcurrency sweeps the [send, end) intervals stored as pairs in spans:
// at equal times an end is processed before a send (half-open intervals, as
// vLLM's sweep-line does).
func peakConcurrency(spans []int64) int {
	n := len(spans) / 2
	starts, ends := make([]int64, n), make([]int64, n)
	for i := range n {
		starts[i], ends[i] = spans[2*i], spans[2*i+1]
	}
	slices.Sort(starts)
	slices.Sort(ends)
	cur, peak, j := 0, 0, 0
	for _, st := range starts {
		for j < n && ends[j] <= st {
			cur--
			j++
		}
		cur++
		peak = max(peak, cur)
	}
	return peak
}

// warnings lists the caveats a reader of s should see.
// HighCachedShare is the share of prompt tokens served from the server's
// prefix cache above which a summary warns that TTFT is optimistic.
const HighCachedShare = 0.2

func warnings(s *Summary) []string {
	var ws []string
	if s.Requests > 0 && s.Completed == 0 {
		ws = append(ws, fmt.Sprintf("all %d requests failed: no latency figures", s.Requests))
	}
	if s.Empty > 0 {
		ws = append(ws, fmt.Sprintf("%d successful requests returned no token: they have no TTFT or E2E", s.Empty))
	}
	if s.PeakDroppedChunks > 0 {
		ws = append(ws, fmt.Sprintf("peak output throughput leaves out %d chunks timed weeks apart from the rest (corrupt times?)", s.PeakDroppedChunks))
	}
	if s.CachedShare >= HighCachedShare {
		ws = append(ws, fmt.Sprintf("%.0f%% of prompt tokens came from the server's prefix cache: TTFT is optimistic for cold traffic (--cache-bust measures it cold)", 100*s.CachedShare))
	}
	if n := s.TokenSources[runlog.TokensCounted] - s.UsageRejected; n > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d requests had no usage report: their output tokens were counted by the client and may be undercounted", n, s.Completed))
	}
	if s.Approx {
		ws = append(ws, fmt.Sprintf("past %d requests (or %d inter-token gaps) percentiles come from a sketch within %.1f %% of the exact value; goodput report on the records file gives exact ones",
			ExactRequests, ExactGaps, 100*SketchRelErr))
	}
	if s.UsageRejected > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d requests reported usage that did not fit their stream (%s): their tokens were counted by the client instead", s.UsageRejected, s.Completed, s.UsageRejectedExample))
	}
	// One line per percentile, naming each metric whose sample is too small
	// for it: p99 of 37 values is little more than the second-largest value.
	for _, p := range s.Options.Percentiles {
		need := MinSamples(p)
		var short []string
		for _, m := range s.Metrics {
			if m.N > 0 && m.N < need {
				short = append(short, fmt.Sprintf("%s (%d)", m.Name, m.N))
			}
		}
		if len(short) > 0 {
			ws = append(ws, fmt.Sprintf("p%s needs at least %d samples to say more than the sample max: too few for %s",
				PercentileName(p), need, strings.Join(short, ", ")))
		}
	}
	var short []string
	for _, b := range s.Buckets {
		if b.Completed > 0 && b.Completed < MinSamples(99) {
			short = append(short, fmt.Sprintf("%s (%d)", b.Label, b.Completed))
		}
	}
	if len(short) > 0 && len(s.Buckets) > 0 {
		ws = append(ws, fmt.Sprintf("per-bucket p99 needs at least %d requests per bucket: too few in %s",
			MinSamples(99), strings.Join(short, ", ")))
	}
	return ws
}
