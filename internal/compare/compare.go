// Package compare judges run B against run A: for each latency metric and
// statistic (mean and percentiles), the difference B − A with a bootstrap
// confidence interval from the per-request samples, and a verdict (better,
// worse, no significant difference); goodput of both under one SLO; when
// both runs had sessions, session goodput, duration, turn TTFT, session TTP,
// the TTFT growth with history and the cached share, with intervals from
// resampling whole sessions; and what the change means for users, in
// sentences.
//
// Runs given only as summaries (result files) are compared figure by
// figure, without intervals or verdicts: a summary holds no samples to
// resample. The package is pure (no I/O) and deterministic for a given
// Options.Seed; its functions are safe for concurrent use.
package compare

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Defaults of Options.
const (
	DefaultResamples    = 2000
	DefaultConfidence   = 0.95
	DefaultReadingSpeed = stats.ReadingSpeedMs * time.Millisecond // per token: stats' one figure, with its source
	DefaultSeed         = 1
)

// DefaultPercentiles are the percentiles compared when Options leaves them
// nil.
var DefaultPercentiles = []float64{50, 90, 99}

// DefaultMetrics are the metrics compared when Options leaves them nil, in
// report order. ITL is not among them: its gaps are many per request and
// not independent, so resampling them as if they were would give intervals
// far too narrow (compare TPOT instead, one value per request).
var DefaultMetrics = []string{stats.MetricTTFT, stats.MetricTTP, stats.MetricTPOT, stats.MetricE2E, stats.MetricResponse}

// Options say what to compare and how.
type Options struct {
	// SLO judges goodput for both runs; the zero SLO means no goodput
	// comparison (with records) or the runs' own SLOs (with summaries).
	SLO stats.SLO
	// Percentiles to compare, 0–100; nil means DefaultPercentiles.
	Percentiles []float64
	// Metrics to compare (names of stats.AllMetrics except itl); nil means
	// DefaultMetrics.
	Metrics []string
	// Resamples is the bootstrap's B; 0 means DefaultResamples.
	Resamples int
	// Confidence is the interval's level, in (0, 1); 0 means
	// DefaultConfidence.
	Confidence float64
	// Seed makes the bootstrap reproducible; 0 means DefaultSeed.
	Seed uint64
	// ReadingSpeed is the time a user takes to read one token; a TPOT below
	// it is invisible to a reader. 0 means DefaultReadingSpeed.
	ReadingSpeed time.Duration
	// SessionSLO judges both runs' sessions (session goodput and
	// attainment); the zero SLO means the one both runs stored in their
	// meta when they agree, else no session goodput comparison.
	SessionSLO stats.SessionSLO
}

func (o Options) normalized() Options {
	if o.Percentiles == nil {
		o.Percentiles = DefaultPercentiles
	}
	if o.Metrics == nil {
		o.Metrics = DefaultMetrics
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		o.Confidence = DefaultConfidence
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.ReadingSpeed <= 0 {
		o.ReadingSpeed = DefaultReadingSpeed
	}
	return o
}

// Figures is a run known only by its summary (a result file).
type Figures struct {
	// Requests, Completed and Failed count the run's requests.
	Requests, Completed, Failed int
	// DurationS is the run's duration in seconds.
	DurationS float64
	// RequestThroughput is completed requests/s; OutputThroughput output
	// tokens/s.
	RequestThroughput, OutputThroughput float64
	// MeanOutputTokens is the mean output length in tokens (0: unknown).
	MeanOutputTokens float64
	// Metrics are per-metric figures in milliseconds, by metric name.
	Metrics map[string]MetricFigures
	// SLO is the spec the run's goodput was computed under ("" for none);
	// Goodput (requests/s) and Attainment (0–1) are nil without one.
	SLO                 string
	Goodput, Attainment *float64
}

// MetricFigures are one metric's summary figures, milliseconds.
type MetricFigures struct {
	// Mean is the mean (NaN when unknown).
	Mean float64
	// Percentiles maps a percentile (0–100) to its value.
	Percentiles map[float64]float64
}

// Run is one side of a comparison: records (preferred) or figures.
type Run struct {
	// Name labels the run in reports, e.g. its file name.
	Name string
	// Records are the run's records (warm-ups are skipped); nil when only
	// Figures are known.
	Records []runlog.Record
	// Meta describes the run when known.
	Meta *runlog.Meta
	// Figures are used when Records is nil.
	Figures *Figures
}

// Verdict judges a difference.
type Verdict string

// The verdicts.
const (
	Better        Verdict = "better"
	Worse         Verdict = "worse"
	NoSignificant Verdict = "no significant difference"
	// NotJudged means no interval could be computed (summaries only, or too
	// few samples).
	NotJudged Verdict = "not judged"
)

// Delta is the difference of one statistic between the runs.
type Delta struct {
	// Metric is the metric name (ttft, tpot, …, or request_throughput,
	// output_throughput, goodput, slo_attainment).
	Metric string
	// Stat is "mean", "p50", "p99.9", or "" for a whole-run figure.
	Stat string
	// Unit is "ms", "req/s", "tok/s" or UnitShare (0–1).
	Unit string
	// A and B are the statistic in each run; Diff is B − A.
	A, B, Diff float64
	// Rel is Diff / A (NaN when A is 0). For a share (Unit "share", e.g.
	// slo_attainment) it is NaN too: a relative change of a percentage
	// misleads (75 % → 94 % is not "+25 %"); its change is Diff itself,
	// in percentage points (Points).
	Rel float64
	// HasCI says whether Lo and Hi hold a confidence interval of Diff.
	HasCI  bool
	Lo, Hi float64
	// NA, NB are the sample sizes (0 for summaries).
	NA, NB int
	// LowerIsBetter is true for latencies.
	LowerIsBetter bool
	// P is the bootstrap's two-sided p-value for no difference (NaN when
	// there is no interval): twice the smaller share of resampled
	// differences on either side of zero.
	P float64
	// Verdict judges B against A. For the per-metric deltas it holds for
	// all of them together (Holm's step-down over their P at the
	// interval's level): two runs of one configuration show no
	// difference on any row with that confidence.
	Verdict Verdict
}

// Goodput compares the runs under one SLO.
type Goodput struct {
	// SLO is the spec both were judged by.
	SLO string
	// GoodA, GoodB count requests meeting it; RequestsA, RequestsB all
	// requests.
	GoodA, GoodB, RequestsA, RequestsB int
	// Attainment and Goodput deltas (Goodput in requests/s).
	Attainment, Goodput Delta
}

// Comparison is the result of Compare.
type Comparison struct {
	// A and B name the runs.
	A, B string
	// Options are the effective options.
	Options Options
	// Samples is true when both runs had records, so deltas carry
	// intervals.
	Samples bool
	// Deltas are the per-metric comparisons, metric by metric, mean first.
	Deltas []Delta
	// Family is how many distinct deltas the verdicts were adjusted over
	// together (Holm): those with an interval, a metric equal to an
	// earlier one counted once.
	Family int
	// Throughput compares whole-run request and output throughput (one
	// figure per run: no interval).
	Throughput []Delta
	// Goodput is nil when there is no common SLO.
	Goodput *Goodput
	// Sessions compares the runs' sessions (conversations, agent loops);
	// nil unless both runs have records with sessions (a note says so when
	// only one has them).
	Sessions *SessionComparison
	// Repeats compares the figures between runs when both ran --repeats
	// (nil otherwise); the per-request Deltas' verdicts then call a
	// difference only where this agrees.
	Repeats *Repeats
	// UserView says what the differences mean for users, one sentence each.
	UserView []string
	// Notes are caveats: summaries without intervals, differing conditions.
	Notes []string
}

// Delta returns the comparison of metric at stat ("mean", "p99").
func (c *Comparison) Delta(metric, stat string) (Delta, bool) {
	for _, d := range c.Deltas {
		if d.Metric == metric && d.Stat == stat {
			return d, true
		}
	}
	return Delta{}, false
}

// side is a run prepared for comparison.
type side struct {
	name    string
	samples map[string][]float64 // sorted, ms
	// ordered are the same values in the order the requests were sent,
	// for how strongly neighbours are correlated (vifMean, vifIndicator).
	ordered map[string][]float64
	figs    *Figures
	meta    *runlog.Meta
	good    int
	reqs    int
	dur     float64
}

func prepare(r Run, o Options) (*side, error) {
	s := &side{name: r.Name, meta: r.Meta}
	if r.Records == nil {
		if r.Figures == nil {
			return nil, fmt.Errorf("run %q: no records and no figures", r.Name)
		}
		s.figs = r.Figures
		return s, nil
	}
	s.samples, s.ordered = map[string][]float64{}, map[string][]float64{}
	order := make([]int, len(r.Records))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(r.Records[i].Sent, r.Records[j].Sent) })
	for _, i := range order {
		rec := &r.Records[i]
		if rec.Warmup || !rec.OK() {
			continue
		}
		for _, m := range o.Metrics {
			if d, ok := stats.RequestMetric(rec, m); ok {
				s.ordered[m] = append(s.ordered[m], float64(d)/1e6)
			}
		}
	}
	for m, x := range s.ordered {
		s.samples[m] = slices.Sorted(slices.Values(x))
	}
	// Whole-run figures (throughput, goodput) come from stats, so they are
	// the very figures the run's own report shows.
	sum := stats.Summarize(r.Records, stats.Options{SLO: o.SLO, Metrics: []string{}, Buckets: []int{}, Percentiles: []float64{}})
	f := &Figures{
		Requests: sum.Requests, Completed: sum.Completed, Failed: sum.Failed, DurationS: sum.DurationS,
		RequestThroughput: sum.RequestThroughput, OutputThroughput: sum.OutputThroughput,
	}
	if sum.Completed > 0 {
		f.MeanOutputTokens = float64(sum.OutputTokens) / float64(sum.Completed)
	}
	if sum.SLO.Set {
		f.SLO = o.SLO.String()
		f.Goodput, f.Attainment = &sum.SLO.Goodput, &sum.SLO.Attainment
	}
	s.figs = f
	s.good, s.reqs, s.dur = sum.SLO.Good, sum.Requests, sum.DurationS
	return s, nil
}

// seedFor derives a stream per (metric, stat) from the seed, so a result
// does not depend on which other metrics were compared.
func seedFor(seed uint64, metric, stat string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(metric))
	h.Write([]byte{0})
	h.Write([]byte(stat))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func statName(p float64) string { return "p" + stats.PercentileName(p) }

// Compare judges run b against run a.
func Compare(a, b Run, o Options) (*Comparison, error) {
	o = o.normalized()
	for _, m := range o.Metrics {
		if stats.IsRequestMetric(m) {
			continue
		}
		return nil, fmt.Errorf("metric %q cannot be compared (want one of ttft, ttp, tpot, e2el, response)", m)
	}
	for _, p := range o.Percentiles {
		if !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("percentile %v: want 0 to 100", p)
		}
	}
	sa, err := prepare(a, o)
	if err != nil {
		return nil, err
	}
	sb, err := prepare(b, o)
	if err != nil {
		return nil, err
	}
	c := &Comparison{A: a.Name, B: b.Name, Options: o, Samples: sa.samples != nil && sb.samples != nil}
	if !c.Samples {
		c.Notes = append(c.Notes, "at least one run is a summary (result file) without per-request samples: "+
			"figures are compared as they are, without confidence intervals or verdicts; compare records files for those")
	}
	// A metric whose values equal an earlier one's in both runs (TTP is
	// TTFT when nothing is hidden, response time is E2E without a
	// backlog) is the same hypothesis: it shares that metric's deltas and
	// does not count again in the family the verdicts are adjusted over.
	per := make([][]Delta, len(o.Metrics))
	dupOf := make([]int, len(o.Metrics))
	var family []Delta
	for i, m := range o.Metrics {
		dupOf[i] = -1
		for j := range i {
			if dupOf[j] < 0 && c.Samples && slices.Equal(sa.samples[m], sa.samples[o.Metrics[j]]) &&
				slices.Equal(sb.samples[m], sb.samples[o.Metrics[j]]) && len(sa.samples[m]) > 0 {
				dupOf[i] = j
				break
			}
		}
		if dupOf[i] < 0 {
			per[i] = metricDeltas(sa, sb, m, o)
			family = append(family, per[i]...)
		}
	}
	c.Family = holm(family, 1-o.Confidence)
	for i, m := range o.Metrics {
		if dupOf[i] < 0 {
			per[i], family = family[:len(per[i])], family[len(per[i]):]
			c.Deltas = append(c.Deltas, per[i]...)
			continue
		}
		for _, d := range per[dupOf[i]] {
			d.Metric = m
			c.Deltas = append(c.Deltas, d)
		}
	}
	if rep := compareRepeats(a, b, o); rep != nil {
		c.Repeats = rep
		if n := withRepeats(c.Deltas, rep); n > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%d per-request difference(s) lie within the spread between the runs' repeats (%d and %d): no significant difference", n, rep.NA, rep.NB))
		}
	}
	c.Throughput = []Delta{
		plainDelta("request_throughput", "", "req/s", sa.figs.RequestThroughput, sb.figs.RequestThroughput, false),
		plainDelta("output_throughput", "", "tok/s", sa.figs.OutputThroughput, sb.figs.OutputThroughput, false),
	}
	c.Goodput, c.Notes = goodput(sa, sb, o, c.Notes)
	var sessionNotes []string
	c.Sessions, sessionNotes = compareSessions(a, b, o)
	c.Notes = append(c.Notes, sessionNotes...)
	c.Notes = append(c.Notes, conditionNotes(sa, sb)...)
	c.Notes = append(c.Notes, shortRunNotes(sa, sb, o.Metrics)...)
	c.UserView = append(userView(c, sa, sb), sessionView(c)...)
	return c, nil
}

func plainDelta(metric, stat, unit string, a, b float64, lowerBetter bool) Delta {
	d := Delta{Metric: metric, Stat: stat, Unit: unit, A: a, B: b, Diff: b - a, Rel: math.NaN(), P: math.NaN(), LowerIsBetter: lowerBetter, Verdict: NotJudged}
	if a != 0 && unit != UnitShare {
		d.Rel = d.Diff / a
	}
	return d
}

// UnitShare is the Unit of a Delta between shares (0–1), such as SLO
// attainment: compared in percentage points, never relatively.
const UnitShare = "share"

// Points is a share's difference in percentage points (100·Diff), the
// change to report for it; NaN for a Delta of another unit.
func (d Delta) Points() float64 {
	if d.Unit != UnitShare {
		return math.NaN()
	}
	return 100 * d.Diff
}

// judge sets d's verdict from its interval: an interval excluding zero is
// a significant difference, better or worse by the metric's direction.
func judge(d *Delta) {
	switch {
	case !d.HasCI:
		d.Verdict = NotJudged
	case d.Lo > 0 || d.Hi < 0:
		up := d.Lo > 0
		if up == d.LowerIsBetter {
			d.Verdict = Worse
		} else {
			d.Verdict = Better
		}
	default:
		d.Verdict = NoSignificant
	}
}

func metricDeltas(sa, sb *side, m string, o Options) []Delta {
	stat := []string{"mean"}
	for _, p := range o.Percentiles {
		stat = append(stat, statName(p))
	}
	var out []Delta
	if sa.samples == nil || sb.samples == nil {
		fa, fb := figuresOf(sa, m, o.Percentiles), figuresOf(sb, m, o.Percentiles)
		if fa == nil || fb == nil {
			return nil
		}
		for i, st := range stat {
			var va, vb float64
			var oka, okb bool
			if i == 0 {
				va, vb, oka, okb = fa.Mean, fb.Mean, !math.IsNaN(fa.Mean), !math.IsNaN(fb.Mean)
			} else {
				va, oka = fa.Percentiles[o.Percentiles[i-1]]
				vb, okb = fb.Percentiles[o.Percentiles[i-1]]
			}
			if oka && okb {
				out = append(out, plainDelta(m, st, "ms", va, vb, true))
			}
		}
		return out
	}
	xa, xb := sa.samples[m], sb.samples[m]
	if len(xa) == 0 || len(xb) == 0 {
		return nil
	}
	ma, sda := meanSD(xa)
	mb, sdb := meanSD(xb)
	oa, ob := sa.ordered[m], sb.ordered[m]
	diffs := make([]float64, o.Resamples)
	for i, st := range stat {
		var d Delta
		rng := seedFor(o.Seed, m, st)
		if i == 0 {
			d = plainDelta(m, st, "ms", ma, mb, true)
			// Correlated requests carry less information than their
			// count: the resampled mean's spread is widened by each
			// run's variance inflation.
			va, vb := vifMean(oa), vifMean(ob)
			for k := range diffs {
				diffs[k] = resampleMeanVIF(rng, xb, mb, sdb, vb) - resampleMeanVIF(rng, xa, ma, sda, va)
			}
		} else {
			p := o.Percentiles[i-1]
			d = plainDelta(m, st, "ms", percentile(xa, p), percentile(xb, p), true)
			na := float64(len(xa)) / vifPercentile(oa, xa, p)
			nb := float64(len(xb)) / vifPercentile(ob, xb, p)
			for k := range diffs {
				diffs[k] = resamplePercentileN(rng, xb, p, nb) - resamplePercentileN(rng, xa, p, na)
			}
		}
		d.NA, d.NB = len(xa), len(xb)
		if len(xa) >= 2 && len(xb) >= 2 {
			d.HasCI = true
			d.Lo, d.Hi = interval(diffs, o.Confidence)
			d.P = pValue(diffs)
		}
		judge(&d)
		out = append(out, d)
	}
	return out
}

// holm keeps the verdicts of ds that Holm's step-down procedure rejects at
// family-wise level alpha over their p-values, and turns the others into
// no significant difference: with every row judged at alpha on its own,
// two runs of one configuration would show some "worse" row most of the
// time. It returns the family's size.
func holm(ds []Delta, alpha float64) (family int) {
	var idx []int
	for i, d := range ds {
		if d.HasCI && !math.IsNaN(d.P) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(ds[i].P, ds[j].P) })
	rejecting := true
	for r, i := range idx {
		if rejecting && ds[i].P > alpha/float64(len(idx)-r) {
			rejecting = false
		}
		if !rejecting && (ds[i].Verdict == Better || ds[i].Verdict == Worse) {
			ds[i].Verdict = NoSignificant
		}
	}
	return len(idx)
}

// figuresOf returns a side's summary figures of metric m at percentiles
// ps, computed from samples when the side has them.
func figuresOf(s *side, m string, ps []float64) *MetricFigures {
	if s.samples != nil {
		x := s.samples[m]
		if len(x) == 0 {
			return nil
		}
		mean, _ := meanSD(x)
		f := &MetricFigures{Mean: mean, Percentiles: map[float64]float64{}}
		for _, p := range ps {
			f.Percentiles[p] = percentile(x, p)
		}
		return f
	}
	if s.figs == nil || s.figs.Metrics == nil {
		return nil
	}
	f, ok := s.figs.Metrics[m]
	if !ok {
		return nil
	}
	return &f
}

func goodput(sa, sb *side, o Options, notes []string) (*Goodput, []string) {
	if sa.samples != nil && sb.samples != nil {
		if o.SLO.IsZero() {
			return nil, append(notes, "no --goodput SLO given: goodput not compared")
		}
		g := &Goodput{SLO: o.SLO.String(), GoodA: sa.good, GoodB: sb.good, RequestsA: sa.reqs, RequestsB: sb.reqs}
		g.Attainment, g.Goodput = goodDeltas("slo_attainment", "goodput", "req/s",
			sa.good, sa.reqs, sa.dur, sb.good, sb.reqs, sb.dur, o, seedFor(o.Seed, "goodput", ""))
		return g, notes
	}
	fa, fb := sa.figs, sb.figs
	if fa == nil || fb == nil || fa.Goodput == nil || fb.Goodput == nil {
		return nil, append(notes, "goodput not compared: a run has no goodput figure (records files let any SLO be applied to both)")
	}
	if fa.SLO != fb.SLO {
		return nil, append(notes, fmt.Sprintf("goodput not compared: the runs were judged by different SLOs (%q vs %q); give records files and --goodput to judge both by one", fa.SLO, fb.SLO))
	}
	g := &Goodput{SLO: fa.SLO, RequestsA: fa.Requests, RequestsB: fb.Requests}
	g.Goodput = plainDelta("goodput", "", "req/s", *fa.Goodput, *fb.Goodput, false)
	if fa.Attainment != nil && fb.Attainment != nil {
		g.Attainment = plainDelta("slo_attainment", "", UnitShare, *fa.Attainment, *fb.Attainment, false)
		g.GoodA = int(math.Round(*fa.Attainment * float64(fa.Requests)))
		g.GoodB = int(math.Round(*fb.Attainment * float64(fb.Requests)))
	}
	return g, notes
}

func frac(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func rate(n int, dur float64) float64 {
	if dur <= 0 {
		return 0
	}
	return float64(n) / dur
}

// conditionNotes lists what differs between the runs' conditions: a fair
// A/B changes one thing.
func conditionNotes(sa, sb *side) []string {
	a, b := sa.meta, sb.meta
	if a == nil || b == nil {
		return nil
	}
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("the runs differ in %s: %q vs %q", what, x, y))
		}
	}
	diff("model", a.Model, b.Model)
	diff("dataset", a.Dataset, b.Dataset)
	diff("endpoint", a.Endpoint, b.Endpoint)
	if len(a.Levels) == 1 && len(b.Levels) == 1 {
		la, lb := a.Levels[0], b.Levels[0]
		if la.RequestRate != lb.RequestRate || la.MaxConcurrency != lb.MaxConcurrency || la.Burstiness != lb.Burstiness {
			out = append(out, fmt.Sprintf("the runs were offered different loads (rate %g, concurrency %d vs rate %g, concurrency %d): latency differences may be the load's",
				la.RequestRate, la.MaxConcurrency, lb.RequestRate, lb.MaxConcurrency))
		}
	}
	if len(a.Levels) > 1 || len(b.Levels) > 1 {
		out = append(out, "a run has several load levels: its levels are pooled here; compare one level's records for a like-for-like judgement")
	}
	return out
}

// shortRunNotes warn, per run, of metrics whose correlation outlasts the
// run's longest batches (unsettled): their intervals may be too narrow,
// so a verdict on them deserves a longer run or repeats.
func shortRunNotes(sa, sb *side, metrics []string) []string {
	var out []string
	for _, s := range []*side{sa, sb} {
		if s.ordered == nil {
			continue
		}
		var ms []string
		for _, m := range metrics {
			if unsettled(s.ordered[m]) {
				ms = append(ms, m)
			}
		}
		if len(ms) > 0 {
			out = append(out, fmt.Sprintf("%s: %s still correlated across a tenth of the run (%d requests): the run is short for how slowly its latency drifts, so intervals on it may be too narrow; compare longer runs",
				cmp.Or(s.name, "a run"), strings.Join(ms, ", "), len(s.ordered[ms[0]])/10))
		}
	}
	return out
}
