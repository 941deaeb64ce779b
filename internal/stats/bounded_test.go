package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
)

// dist draws a latency in ms.
type dist struct {
	name string
	ms   func(r *rand.Rand) float64
}

var dists = []dist{
	{"uniform", func(r *rand.Rand) float64 { return 5 + 995*r.Float64() }},
	// Lognormal with σ = 1.5: median ~90 ms, p99 ~3 s, a long heavy tail.
	{"lognormal", func(r *rand.Rand) float64 { return math.Exp(4.5 + 1.5*r.NormFloat64()) }},
	// Two modes a decade apart (cache hits and misses, say), 80/20.
	{"bimodal", func(r *rand.Rand) float64 {
		if r.Float64() < 0.8 {
			return 40 + 4*r.NormFloat64()
		}
		return 900 + 120*r.NormFloat64()
	}},
}

// synthRecords builds n records whose TTFT and inter-chunk gaps (ms/20) are
// drawn from d: some failed, some with multi-token chunks (so per-token ITL
// differs), some sent early or late (negative and positive send lag), prompt
// lengths across every default bucket.
func synthRecords(n int, d dist, seed uint64) []runlog.Record {
	r := rand.New(rand.NewPCG(seed, 1))
	ns := func(ms float64) int64 { return max(int64(ms*1e6), 0) }
	recs := make([]runlog.Record, n)
	for i := range recs {
		sent := int64(i) * 7 * ms
		rec := runlog.Record{Intended: sent + int64(r.IntN(5)-2)*ms, Sent: sent,
			PromptTokens: 1 + r.IntN(12000), RequestedPromptTokens: 1 + r.IntN(12000),
			TokenSource: runlog.TokensUsage, Status: 200}
		if i%50 == 7 {
			rec.Status, rec.ErrorClass, rec.End = 500, runlog.ErrHTTP5xx, sent+ns(d.ms(r))
			recs[i] = rec
			continue
		}
		t := sent + ns(d.ms(r))
		toks := 0
		for j := range 1 + r.IntN(6) {
			if j > 0 {
				t += ns(d.ms(r) / 20)
			}
			k := 1
			if i%3 == 0 && j > 0 {
				k = 1 + r.IntN(3)
			}
			rec.Chunks = append(rec.Chunks, runlog.Chunk{T: t, Tokens: int32(k), Visible: j > 0 || i%4 != 0})
			toks += k
		}
		rec.CompletionTokens, rec.End = toks, t+ms
		recs[i] = rec
	}
	return recs
}

func accumulate(recs []runlog.Record, o Options, bd bounds) *Accumulator {
	a := newAccumulator(o, bd)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a
}

// TestBoundedBelowIsExact checks that an Accumulator that has not passed its
// bounds gives exactly Summarize's Summary, field for field, including at
// bounds exactly reached.
func TestBoundedBelowIsExact(t *testing.T) {
	slo, err := ParseSLO("ttft:300 tpot:40")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Percentiles: []float64{0, 25, 50, 90, 99, 99.9, 100}, SLO: slo}
	recs := synthRecords(3000, dists[1], 1)
	want := Summarize(recs, o)
	if want.Approx {
		t.Fatal("Summarize(...).Approx = true; want false")
	}
	// The largest series: every non-warm-up record has a send lag and
	// almost all an input length; gaps counted as stored.
	exact := accumulate(recs, o, bounds{})
	gaps := len(exact.itlSame.vals) + len(exact.itlMulti.vals) + len(exact.tokMulti.vals)
	for _, tc := range []struct {
		name string
		bd   bounds
	}{
		{"default bounds", bounds{ExactRequests, ExactGaps}},
		{"bounds just reached", bounds{len(recs), gaps}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := accumulate(recs, o, tc.bd).Summary()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Accumulator below its bounds differs from Summarize (-want +got):\n%s", diff)
			}
		})
	}
	// NewAccumulator is the default-bounds one.
	a := NewAccumulator(o)
	for i := range recs {
		a.Add(&recs[i])
	}
	if diff := cmp.Diff(want, a.Summary()); diff != "" {
		t.Errorf("NewAccumulator differs from Summarize (-want +got):\n%s", diff)
	}
}

// within reports whether got is within SketchRelErr of want, allowing
// float rounding (and, for ITL, float32's 2^-24 on the gaps stored before
// the switch).
func within(got, want float64) bool {
	return math.Abs(got-want) <= (SketchRelErr+1e-7)*math.Abs(want)+1e-12
}

// TestBoundedAboveWithinRelErr runs past small bounds and checks every
// percentile of every distribution against Summarize's exact figure.
func TestBoundedAboveWithinRelErr(t *testing.T) {
	ps := []float64{0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100}
	for i, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			recs := synthRecords(20000, d, uint64(10+i))
			o := Options{Percentiles: ps}
			want := Summarize(recs, o)
			got := accumulate(recs, o, bounds{requests: 1000, gaps: 5000}).Summary()
			if !got.Approx || got.PeakConcurrencyBinNs != 1e6 {
				t.Errorf("Approx, PeakConcurrencyBinNs = %v, %d; want true, 1e6", got.Approx, got.PeakConcurrencyBinNs)
			}
			type pair struct {
				where     string
				got, want MetricSummary
			}
			pairs := []pair{
				{"", got.SendLag, want.SendLag}, {"", got.InputLen, want.InputLen},
				{"", got.OutputLen, want.OutputLen}, {"", got.PromptMismatch, want.PromptMismatch},
			}
			for j := range want.Metrics {
				pairs = append(pairs, pair{"", got.Metrics[j], want.Metrics[j]})
			}
			for b := range want.Buckets {
				for j := range want.Buckets[b].Metrics {
					pairs = append(pairs, pair{want.Buckets[b].Label + " ", got.Buckets[b].Metrics[j], want.Buckets[b].Metrics[j]})
				}
			}
			for _, p := range pairs {
				g, w := p.got, p.want
				name := p.where + w.Name
				if w.N <= 1000 && w.Name != MetricITL && w.Name != MetricITLToken {
					// Never passed the bound: must be exact.
					if diff := cmp.Diff(w, g); diff != "" {
						t.Errorf("%s (N = %d, below the bound) differs (-exact +got):\n%s", name, w.N, diff)
					}
					continue
				}
				if !g.Approx || g.RelErr != SketchRelErr {
					t.Errorf("%s: Approx, RelErr = %v, %v; want true, %v", name, g.Approx, g.RelErr, SketchRelErr)
				}
				if g.N != w.N || g.Mean != w.Mean || g.Std != w.Std || g.Min != w.Min || g.Max != w.Max {
					t.Errorf("%s: N, Mean, Std, Min, Max = %d, %v, %v, %v, %v; want exact %d, %v, %v, %v, %v",
						name, g.N, g.Mean, g.Std, g.Min, g.Max, w.N, w.Mean, w.Std, w.Min, w.Max)
				}
				if !within(g.Median, w.Median) {
					t.Errorf("%s median = %v; exact %v (rel err %.2g > %v)", name, g.Median, w.Median, math.Abs(g.Median-w.Median)/math.Abs(w.Median), SketchRelErr)
				}
				for k, pv := range w.Percentiles {
					if gv := g.Percentiles[k].Value; !within(gv, pv.Value) {
						t.Errorf("%s p%s = %v; exact %v (rel err %.2g > %v)", name, PercentileName(pv.P), gv, pv.Value,
							math.Abs(gv-pv.Value)/math.Abs(pv.Value), SketchRelErr)
					}
				}
			}
			// The peak from bins is never below the exact one and, with
			// a request every 7 ms, at most a couple above.
			if got.PeakConcurrency < want.PeakConcurrency || got.PeakConcurrency > want.PeakConcurrency+2 {
				t.Errorf("PeakConcurrency = %d; exact %d, want within +2", got.PeakConcurrency, want.PeakConcurrency)
			}
			// Everything else is unaffected by the bounds.
			g2, w2 := got, want
			g2.Metrics, w2.Metrics, g2.Buckets, w2.Buckets = nil, nil, nil, nil
			g2.SendLag, w2.SendLag, g2.InputLen, w2.InputLen = MetricSummary{}, MetricSummary{}, MetricSummary{}, MetricSummary{}
			g2.OutputLen, w2.OutputLen, g2.PromptMismatch, w2.PromptMismatch = MetricSummary{}, MetricSummary{}, MetricSummary{}, MetricSummary{}
			g2.PeakConcurrency, g2.PeakConcurrencyBinNs, g2.Approx = w2.PeakConcurrency, 0, false
			// The one difference in the warnings says the figures are approximate.
			if len(g2.Warnings) != len(w2.Warnings)+1 || !strings.HasPrefix(g2.Warnings[len(g2.Warnings)-1], "past 262144 requests") {
				t.Errorf("warnings %q; want the exact run's plus one saying percentiles come from a sketch", g2.Warnings)
			} else {
				g2.Warnings = w2.Warnings
			}
			if diff := cmp.Diff(w2, g2); diff != "" {
				t.Errorf("counts and throughputs differ past the bounds (-exact +got):\n%s", diff)
			}
		})
	}
}

// TestBoundedReleasesSamples checks that past the bounds no per-request or
// per-gap slice is kept, and that Summary stays repeatable.
func TestBoundedReleasesSamples(t *testing.T) {
	recs := synthRecords(5000, dists[0], 3)
	a := accumulate(recs[:4000], Options{}, bounds{requests: 100, gaps: 300})
	first := a.Summary()
	for i := range recs[4000:] {
		a.Add(&recs[4000+i])
	}
	s := a.Summary()
	if diff := cmp.Diff(s, a.Summary()); diff != "" {
		t.Errorf("Summary() twice differs:\n%s", diff)
	}
	if first.Completed >= s.Completed {
		t.Errorf("Completed = %d then %d; want growth", first.Completed, s.Completed)
	}
	all := []*series[int64]{a.sendLag, a.inputLen, a.outputLen, a.mismatch}
	all = append(all, a.lat[:]...)
	for _, b := range a.buckets {
		all = append(all, b.lat[:]...)
	}
	for i, sr := range all {
		if sr != nil && (sr.vals != nil || sr.sk == nil) {
			t.Errorf("series %d: %d values kept, sketch %v; want none kept, a sketch", i, len(sr.vals), sr.sk != nil)
		}
	}
	for i, sr := range []*series[float32]{a.itlSame, a.itlMulti, a.tokMulti} {
		if sr.vals != nil || sr.sk == nil {
			t.Errorf("ITL series %d: %d values kept, sketch %v; want none kept, a sketch", i, len(sr.vals), sr.sk != nil)
		}
	}
	if a.flight.spans != nil || !a.flight.binned {
		t.Errorf("flight: %d spans kept, binned %v; want none, true", len(a.flight.spans)/2, a.flight.binned)
	}
}

// TestSketchMerge checks that a union summarised from two sketched series
// (as ITL is: one-token-chunk records plus multi-token ones) is the sketch
// of all the values: merging loses nothing beyond the sketch's own error.
func TestSketchMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	ps := []float64{1, 50, 90, 99, 99.9}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			a, b, all := newSeries[int64](nsPerMs, 100), newSeries[int64](nsPerMs, 100), newSeries[int64](nsPerMs, 100)
			var exact []float64
			for i := range 30000 {
				v := int64(d.ms(r) * 1e6)
				if i%3 == 0 {
					a.addInt(v)
				} else {
					b.addInt(v)
				}
				all.addInt(v)
				exact = append(exact, float64(v)*nsPerMs)
			}
			slices.Sort(exact)
			merged := summarize("m", ps, a, b)
			whole := summarize("m", ps, all, nil)
			for i, p := range ps {
				m, w := merged.Percentiles[i].Value, whole.Percentiles[i].Value
				if m != w {
					t.Errorf("p%s of merged sketches = %v; of one sketch of everything %v", PercentileName(p), m, w)
				}
				if e := Percentile(exact, p); !within(m, e) {
					t.Errorf("p%s of merged sketches = %v; exact %v", PercentileName(p), m, e)
				}
			}
			// Summarising the union leaves the parts usable.
			if again := summarize("m", ps, a, b); !cmp.Equal(merged, again) {
				t.Errorf("second summarize of the union differs: %+v vs %+v", again, merged)
			}
		})
	}
}

// TestSketchNegativeAndZero checks the sketch's ranks across negative
// values, zeros and positive ones (send lag can be all three).
func TestSketchNegativeAndZero(t *testing.T) {
	s := newSeries[int64](1, 1)
	var exact []float64
	for v := int64(-500); v <= 1000; v++ {
		x := v
		if v%4 == 0 {
			x = 0
		}
		s.addInt(x)
		exact = append(exact, float64(x))
	}
	slices.Sort(exact)
	for k := range exact {
		got := min(max(sketchAt(s.sk, k), s.mom.min), s.mom.max)
		if !within(got, exact[k]) {
			t.Errorf("sketchAt(%d) = %v; exact %v", k, got, exact[k])
		}
	}
}

// TestFlightBinned checks the binned peak concurrency against the exact
// sweep: never below, and above by at most the sends and ends sharing a
// bucket with the peak.
func TestFlightBinned(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		name       string
		n          int
		gap, dur   int64 // mean ns between sends, max request duration
		bucketSlop int
	}{
		{"steady", 5000, 10 * ms, 3000 * ms, 3},
		{"bursty", 5000, ms / 10, 50 * ms, 40},
		{"short requests", 2000, ms, ms / 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spans []int64
			f := flight{limit: 100}
			t0 := int64(0)
			for range tc.n {
				t0 += r.Int64N(2*tc.gap + 1)
				e := t0 + r.Int64N(tc.dur+1)
				spans = append(spans, t0, e)
				f.add(t0, e)
			}
			exact := peakConcurrency(spans)
			got, w := f.peak()
			if w != 1e6 {
				t.Errorf("bin width = %d; want 1e6", w)
			}
			if got < exact || got > exact+tc.bucketSlop {
				t.Errorf("binned peak = %d; exact %d, want within +%d", got, exact, tc.bucketSlop)
			}
		})
	}
	// Below the limit the exact sweep answers.
	f := flight{limit: 10}
	for i := range int64(10) {
		f.add(i, i+5)
	}
	if got, w := f.peak(); got != 5 || w != 0 {
		t.Errorf("peak below the limit = %d, %d; want 5, 0", got, w)
	}
}

// TestFlightLongSoak checks the binned concurrency stays within its cap
// over a very long span (two days of one request every 10 s) and still
// finds a burst.
func TestFlightLongSoak(t *testing.T) {
	f := flight{limit: 1}
	sec := int64(1e9)
	for ts := int64(0); ts < 2*86400*sec; ts += 10 * sec {
		f.add(ts, ts+sec)
	}
	for i := range int64(30) {
		f.add(3600*sec+i, 3600*sec+2*sec)
	}
	got, w := f.peak()
	if len(f.starts.counts) > flightBins || len(f.ends.counts) > flightBins {
		t.Errorf("timelines hold %d, %d buckets; want ≤ %d", len(f.starts.counts), len(f.ends.counts), flightBins)
	}
	if w != 1e9 || got != 31 {
		t.Errorf("peak = %d at width %d; want 31 at 1e9", got, w)
	}
}

func Example_boundedAccumulator() {
	a := NewAccumulator(Options{Metrics: []string{MetricTTFT}, Percentiles: []float64{99}})
	rec := runlog.Record{Status: 200, CompletionTokens: 1, Chunks: []runlog.Chunk{{Tokens: 1}}}
	for i := range ExactRequests + 1 {
		rec.Sent = int64(i) * 1e6
		rec.Chunks[0].T = rec.Sent + int64(100+i%900)*1e6 // TTFT 100–999 ms
		a.Add(&rec)
	}
	s := a.Summary()
	m, _ := s.Metric(MetricTTFT)
	fmt.Printf("n=%d approx=%v relerr=%v p99≈%.0f ms\n", m.N, m.Approx, m.RelErr, m.Percentiles[0].Value)
	// Output: n=262145 approx=true relerr=0.001 p99≈990 ms
}
