package stats

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/runlog"
)

// binomCDF is P(B ≤ k) for B ~ Binomial(n, q), summed term by term in log
// space: an independent check of the incomplete-beta CDF that
// PercentileRanks uses.
func binomCDF(n, k int, q float64) float64 {
	var s float64
	for i := 0; i <= k; i++ {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
		s += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(q) + float64(n-i)*math.Log1p(-q))
	}
	return s
}

func TestPercentileRanksByHand(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		p, lv  float64
		lo, hi int
		ok     bool
	}{
		// Bin(5, ½): P(B = 0) = 1/32 > 0.025, so no two order statistics of
		// five bracket the median with 95 %.
		{"p50 n=5 none", 5, 50, 0.95, 0, 0, false},
		// Bin(6, ½): P(B = 0) = P(B = 6) = 1/64 ≤ 0.025: [min, max],
		// coverage 1 − 2/64 = 96.9 %.
		{"p50 n=6 min-max", 6, 50, 0.95, 0, 5, true},
		// Bin(10, ½): F(1) = 11/1024 ≤ 0.025 < F(2) = 56/1024, and
		// F(7) = 968/1024 < 0.975 ≤ F(8) = 1013/1024: the 2nd and 9th
		// values, coverage 1002/1024 = 97.9 %.
		{"p50 n=10", 10, 50, 0.95, 1, 8, true},
		// At 90 %, α/2 = 0.05: F(1) = 0.0107 ≤ 0.05 < F(2) = 0.0547, and
		// F(7) = 0.945 < 0.95 ≤ F(8): the same ranks.
		{"p50 n=10 90%", 10, 50, 0.90, 1, 8, true},
		// 0.9^35 = 0.02503 > 0.025: 35 samples cannot bound p90 from above.
		{"p90 n=35 none", 35, 90, 0.95, 0, 0, false},
		// 0.99^367 = 0.02502 > 0.025 but 0.99^368 = 0.02477.
		{"p99 n=367 none", 367, 99, 0.95, 0, 0, false},
		// Bin(1, ½) at any level below 1: P(B = 0) = ½.
		{"n=1", 1, 50, 0.5, 0, 0, false},
		{"p0", 100, 0, 0.95, 0, 0, false},
		{"p100", 100, 100, 0.95, 0, 0, false},
		{"level 1", 100, 50, 1, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := PercentileRanks(tt.n, tt.p, tt.lv)
			if lo != tt.lo || hi != tt.hi || ok != tt.ok {
				t.Errorf("PercentileRanks(%d, %g, %g) = %d, %d, %v; want %d, %d, %v", tt.n, tt.p, tt.lv, lo, hi, ok, tt.lo, tt.hi, tt.ok)
			}
		})
	}
}

func TestPercentileRanksCoverage(t *testing.T) {
	// At every n and p checked, the ranks' exact coverage P(l ≤ B ≤ u−1)
	// reaches the level and neither rank can move inwards without losing
	// it on its side; the CDF is summed independently here.
	for _, n := range []int{6, 7, 20, 36, 100, 368, 500, 1000} {
		for _, p := range []float64{10, 50, 90, 95, 99} {
			lo, hi, ok := PercentileRanks(n, p, 0.95)
			if !ok {
				if n >= MinSamplesForInterval(p, 0.95) {
					t.Errorf("PercentileRanks(%d, %g) = none; MinSamplesForInterval = %d", n, p, MinSamplesForInterval(p, 0.95))
				}
				continue
			}
			// 0-based ranks lo, hi are 1-based l = lo+1, u = hi+1, so the
			// coverage P(l ≤ B ≤ u−1) is F(hi) − F(lo); lo is the largest k
			// with F(k) ≤ α/2, hi the smallest with F(k) ≥ 1 − α/2.
			q := p / 100
			F := func(k int) float64 { return binomCDF(n, k, q) }
			if F(lo) > 0.025+1e-12 || F(lo+1) <= 0.025-1e-12 {
				t.Errorf("n=%d p%g: lo = %d; F(lo) = %.5f, F(lo+1) = %.5f, want them either side of 0.025", n, p, lo, F(lo), F(lo+1))
			}
			if F(hi) < 0.975-1e-12 || hi > 0 && F(hi-1) >= 0.975+1e-12 {
				t.Errorf("n=%d p%g: hi = %d; F(hi−1) = %.5f, F(hi) = %.5f, want them either side of 0.975", n, p, hi, F(hi-1), F(hi))
			}
			if cov := F(hi) - F(lo); cov < 0.95-1e-12 {
				t.Errorf("n=%d p%g: ranks %d–%d cover %.4f; want ≥ 0.95", n, p, lo, hi, cov)
			}
		}
	}
}

func TestMinSamplesForInterval(t *testing.T) {
	tests := []struct {
		p, lv float64
		want  int
	}{
		{50, 0.95, 6}, // 0.5^6 = 1/64 ≤ 0.025 < 0.5^5
		{90, 0.95, 36},
		{10, 0.95, 36}, // symmetric
		{95, 0.95, 72}, // 0.95^72 = 0.0249
		{99, 0.95, 368},
		{99.9, 0.95, 3688},
		{50, 0.99, 8}, // 0.5^8 = 0.0039 ≤ 0.005 < 0.5^7
		{99, 0.90, 299},
		{0, 0.95, 0},
		{100, 0.95, 0},
		{50, 0, 0},
	}
	for _, tt := range tests {
		got := MinSamplesForInterval(tt.p, tt.lv)
		if got != tt.want {
			t.Errorf("MinSamplesForInterval(%g, %g) = %d; want %d", tt.p, tt.lv, got, tt.want)
		}
		if got == 0 {
			continue
		}
		// It is the boundary PercentileRanks itself finds.
		if _, _, ok := PercentileRanks(got, tt.p, tt.lv); !ok {
			t.Errorf("PercentileRanks(%d, %g, %g) = none; want an interval", got, tt.p, tt.lv)
		}
		if _, _, ok := PercentileRanks(got-1, tt.p, tt.lv); ok {
			t.Errorf("PercentileRanks(%d, %g, %g) gave an interval; want none", got-1, tt.p, tt.lv)
		}
	}
}

func TestNormalRanksMatchExact(t *testing.T) {
	// Past exactBinomialMax the normal approximation takes over; at that
	// size it is within one rank of the exact answer.
	for _, n := range []int{exactBinomialMax, exactBinomialMax + 1, 3 << 20} {
		for _, p := range []float64{1, 50, 90, 99, 99.9, 99.99} {
			q, a2, _ := rankArgs(n, p, 0.95)
			el, eh, eok := exactRanks(n, q, a2)
			nl, nh, nok := normalRanks(n, q, a2)
			if eok != nok || abs(el-nl) > 1 || abs(eh-nh) > 1 {
				t.Errorf("n=%d p%g: exact ranks %d–%d (%v), normal %d–%d (%v); want within one", n, p, el, eh, eok, nl, nh, nok)
			}
		}
	}
}

func abs(x int) int { return max(x, -x) }

func TestPercentileInterval(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	iv, ok := PercentileInterval(xs, 50, 0.95)
	if want := (Interval{Lo: 2, Hi: 9, Level: 0.95}); !ok || iv != want {
		t.Errorf("PercentileInterval(1..10, 50) = %+v, %v; want %+v", iv, ok, want)
	}
	if iv, ok := PercentileInterval(xs, 99, 0.95); ok || iv.OK() {
		t.Errorf("PercentileInterval(1..10, 99) = %+v, %v; want none", iv, ok)
	}
}

func TestEffectiveRanks(t *testing.T) {
	// With neff = n they are the independent ranks; with neff = n/10 the
	// ranks at n/10 scaled up: Bin(10, ½) gives the 2nd and 9th of 10,
	// i.e. positions 2/11 and 9/11, so of 109 samples the 20th and 90th.
	if lo, hi, ok := effectiveRanks(10, 10, 50, 0.95); lo != 1 || hi != 8 || !ok {
		t.Errorf("effectiveRanks(10, 10) = %d, %d, %v; want 1, 8, true", lo, hi, ok)
	}
	if lo, hi, ok := effectiveRanks(109, 10.9, 50, 0.95); lo != 19 || hi != 89 || !ok {
		t.Errorf("effectiveRanks(109, 10.9) = %d, %d, %v; want 19, 89, true", lo, hi, ok)
	}
	// 1,000 samples worth 300 cannot support a p99 interval (368 needed).
	if _, _, ok := effectiveRanks(1000, 300, 99, 0.95); ok {
		t.Errorf("effectiveRanks(1000, 300, p99) gave an interval; want none")
	}
}

func TestMeanInterval(t *testing.T) {
	// t(0.975, 3) = 3.182446: 10 ± 3.182446·2/√4.
	iv, ok := MeanInterval(10, 2, 4, 0.95)
	if !ok || math.Abs(iv.Lo-(10-3.182446)) > 1e-5 || math.Abs(iv.Hi-(10+3.182446)) > 1e-5 {
		t.Errorf("MeanInterval(10, 2, 4) = %+v; want 10 ± 3.18245", iv)
	}
	if _, ok := MeanInterval(10, 2, 1, 0.95); ok {
		t.Errorf("MeanInterval over one batch gave an interval; want none")
	}
}

func TestWilsonInterval(t *testing.T) {
	tests := []struct {
		name         string
		p, n         float64
		lo, hi       float64
		ok           bool
		tolLo, tolHi float64
	}{
		// Wilson 1927 / Newcombe 1998 table: 81/263 → 0.2553–0.3662.
		{"81 of 263", 81.0 / 263, 263, 0.2553, 0.3662, true, 5e-5, 5e-5},
		// 0 of 10: [0, z²/(n+z²)] = [0, 0.2775].
		{"0 of 10", 0, 10, 0, 0.2775, true, 1e-12, 5e-5},
		{"10 of 10", 1, 10, 0.7225, 1, true, 5e-5, 1e-12},
		{"n=0", 0.5, 0, 0, 0, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iv, ok := WilsonInterval(tt.p, tt.n, 0.95)
			if ok != tt.ok || math.Abs(iv.Lo-tt.lo) > tt.tolLo || math.Abs(iv.Hi-tt.hi) > tt.tolHi {
				t.Errorf("WilsonInterval(%g, %g) = %+v, %v; want [%g, %g], %v", tt.p, tt.n, iv, ok, tt.lo, tt.hi, tt.ok)
			}
		})
	}
}

func TestBatcherMergesPairwise(t *testing.T) {
	var bm batchMeans
	for i := range 1000 {
		bm.add(float64(i))
	}
	// 1000 samples: batches of 16 once 64 of 8 filled at 512; 62 full
	// batches of 16 (992 samples) and 8 in the partial one.
	k, size := bm.b.batches()
	if k != 62 || size != 16 {
		t.Fatalf("after 1000 samples: %d full batches of %d; want 62 of 16", k, size)
	}
	for j := range k {
		// Batch j holds 16j … 16j+15, whose sum is 256j + 120.
		if want := float64(256*j + 120); bm.sum[j] != want {
			t.Errorf("batch %d sums to %g; want %g", j, bm.sum[j], want)
		}
	}
	var n uint32
	for _, c := range bm.hist {
		n += c
	}
	if n != 1000 {
		t.Errorf("histograms hold %d samples; want 1000", n)
	}
}

func TestHistBinMonotone(t *testing.T) {
	prev := -1
	for x := 0x1p-20; x < 0x1p26; x *= 1.01 {
		b := histBin(x)
		if b < prev || b < 0 || b >= histBins {
			t.Fatalf("histBin(%g) = %d after %d; want non-decreasing in [0, %d)", x, b, prev, histBins)
		}
		prev = b
	}
	if histBin(0) != 0 || histBin(-1) != 0 || histBin(math.NaN()) != 0 {
		t.Errorf("histBin of 0, −1, NaN is not 0")
	}
}

// intervalRecords makes n successful records, 10 ms apart, with TTFT
// drawn from rng and 20 tokens each.
func intervalRecords(n int, rng *rand.Rand) []runlog.Record {
	recs := make([]runlog.Record, n)
	for i := range recs {
		sent := int64(i) * 10 * ms
		first := sent + int64((50+rng.ExpFloat64()*100)*float64(ms))
		r := runlog.Record{Sent: sent, Intended: sent, Status: 200, PromptTokens: 100 + i%3000, CompletionTokens: 20, TokenSource: runlog.TokensUsage}
		for j := range 20 {
			r.Chunks = append(r.Chunks, runlog.Chunk{T: first + int64(j)*int64(15+rng.IntN(10))*ms, Tokens: 1, Visible: true})
		}
		r.End = r.Chunks[19].T
		recs[i] = r
	}
	return recs
}

func TestSummaryIntervalsOffByDefault(t *testing.T) {
	recs := intervalRecords(2000, rand.New(rand.NewPCG(1, 2)))
	slo := SLO{TTFT: 150 * time.Millisecond, TPOT: 22 * time.Millisecond}
	off := Summarize(recs, Options{SLO: slo})
	on := Summarize(recs, Options{SLO: slo, Confidence: 0.95})

	// Without Confidence no interval is set anywhere.
	zero := cmpopts.IgnoreFields(Summary{}, "Options")
	ignoreCI := cmp.Options{zero,
		cmpopts.IgnoreFields(MetricSummary{}, "MeanCI", "MedianCI"),
		cmpopts.IgnoreFields(PercentileValue{}, "CI", "EffectiveN"),
		cmpopts.IgnoreFields(Summary{}, "RequestThroughputCI", "OutputThroughputCI"),
		cmpopts.IgnoreFields(SLOSummary{}, "GoodputCI", "AttainmentCI"),
		cmpopts.IgnoreFields(ConstraintSummary{}, "AttainmentCI"),
		cmpopts.IgnoreFields(BucketSummary{}, "AttainmentCI"),
	}
	// With it every other figure is the same.
	if d := cmp.Diff(off, on, ignoreCI); d != "" {
		t.Errorf("Confidence changed figures other than intervals (-off +on):\n%s", d)
	}
	if off.RequestThroughputCI.OK() || off.SLO.GoodputCI.OK() || off.SLO.AttainmentCI.OK() {
		t.Errorf("intervals set without Confidence: %+v %+v %+v", off.RequestThroughputCI, off.SLO.GoodputCI, off.SLO.AttainmentCI)
	}
	for _, m := range off.Metrics {
		if m.MeanCI.OK() || m.MedianCI.OK() || m.Percentiles[0].CI.OK() || m.Percentiles[0].EffectiveN != 0 {
			t.Errorf("%s has intervals without Confidence", m.Name)
		}
	}

	// With it: every latency metric, per bucket too, has intervals that
	// bracket their figure; the rates and attainment too.
	check := func(what string, v float64, iv Interval) {
		t.Helper()
		if !iv.OK() || iv.Level != 0.95 || !(iv.Lo <= v && v <= iv.Hi) {
			t.Errorf("%s = %g; interval %+v does not bracket it", what, v, iv)
		}
	}
	ms := on.Metrics
	for _, b := range on.Buckets {
		ms = append(ms, b.Metrics...)
	}
	for _, m := range ms {
		if m.N == 0 {
			continue
		}
		check(m.Name+" mean", m.Mean, m.MeanCI)
		check(m.Name+" median", m.Median, m.MedianCI)
		for _, pv := range m.Percentiles {
			if n := MinSamplesForInterval(pv.P, 0.95); pv.EffectiveN < float64(n) {
				if pv.CI.OK() {
					t.Errorf("%s p%g: interval %+v from %.0f effective samples; want none below %d", m.Name, pv.P, pv.CI, pv.EffectiveN, n)
				}
				continue
			}
			if pv.EffectiveN > float64(m.N) {
				t.Errorf("%s p%g: EffectiveN %g > N %d", m.Name, pv.P, pv.EffectiveN, m.N)
			}
			check(m.Name+" p"+PercentileName(pv.P), pv.Value, pv.CI)
		}
	}
	check("request throughput", on.RequestThroughput, on.RequestThroughputCI)
	check("output throughput", on.OutputThroughput, on.OutputThroughputCI)
	check("goodput", on.SLO.Goodput, on.SLO.GoodputCI)
	check("attainment", on.SLO.Attainment, on.SLO.AttainmentCI)
	for _, c := range on.SLO.Constraints {
		check(c.Name+" attainment", c.Attainment, c.AttainmentCI)
	}
	for _, b := range on.Buckets {
		if b.Requests == 0 {
			if b.AttainmentCI.OK() {
				t.Errorf("bucket %s: an attainment interval %+v of no requests", b.Label, b.AttainmentCI)
			}
			continue
		}
		check("bucket "+b.Label+" attainment", b.Attainment, b.AttainmentCI)
		// Independent samples: the bucket's own Wilson interval, n
		// divided by a variance inflation of at least 1, so never narrower.
		w, _ := WilsonInterval(b.Attainment, float64(b.Requests), 0.95)
		if b.AttainmentCI.Hi-b.AttainmentCI.Lo < w.Hi-w.Lo-1e-12 {
			t.Errorf("bucket %s attainment interval %+v narrower than Wilson's over its %d requests %+v", b.Label, b.AttainmentCI, b.Requests, w)
		}
	}
	for _, b := range off.Buckets {
		if b.AttainmentCI.OK() {
			t.Errorf("bucket %s: attainment interval %+v without Confidence", b.Label, b.AttainmentCI)
		}
	}

	// The bounded Accumulator gives the same intervals below its bounds.
	a := NewAccumulator(Options{SLO: slo, Confidence: 0.95})
	for i := range recs {
		a.Add(&recs[i])
	}
	if d := cmp.Diff(on, a.Summary()); d != "" {
		t.Errorf("Accumulator and Summarize differ (-Summarize +Accumulator):\n%s", d)
	}
}

// TestPoissonRateInterval checks the exact Poisson interval against values
// worked out by hand: no events in 20 s bound the rate by −ln(0.025)/20 =
// 3.6889/20 = 0.18444/s; 10 events in 10 s give Garwood's [0.4795, 1.8390]
// (the textbook bounds for k = 10, over 10 s).
func TestPoissonRateInterval(t *testing.T) {
	iv := PoissonRateInterval(0, 20, 0.95)
	if iv.Lo != 0 || math.Abs(iv.Hi-math.Log(40)/20) > 1e-9 {
		t.Errorf("0 events in 20 s: got [%g, %g], want [0, %g]", iv.Lo, iv.Hi, math.Log(40)/20)
	}
	iv = PoissonRateInterval(10, 10, 0.95)
	if math.Abs(iv.Lo-0.4795) > 5e-4 || math.Abs(iv.Hi-1.8390) > 5e-4 {
		t.Errorf("10 events in 10 s: got [%.4f, %.4f], want [0.4795, 1.8390]", iv.Lo, iv.Hi)
	}
	if PoissonRateInterval(3, 0, 0.95).OK() || PoissonRateInterval(3, 1, 1).OK() {
		t.Error("a zero duration or a level of 1 gave an interval")
	}
}

// TestNoGoodRequestsRateInterval: a run in which no request met the SLO
// has goodput 0, and its interval must still have width (every window's
// count is the same zero, so batch means alone would claim [0, 0]).
func TestNoGoodRequestsRateInterval(t *testing.T) {
	recs := intervalRecords(40, rand.New(rand.NewPCG(3, 4)))
	for i := range recs {
		// 40 requests 0.5 s apart, over ~20 s, each answered in 300 ms.
		recs[i].Sent = int64(i) * 500 * ms
		recs[i].Intended = recs[i].Sent
		recs[i].Chunks = []runlog.Chunk{{T: recs[i].Sent + 300*ms, Tokens: 1, Visible: true}}
		recs[i].CompletionTokens = 1
		recs[i].End = recs[i].Sent + 300*ms
	}
	s := Summarize(recs, Options{SLO: SLO{TTFT: 100 * time.Millisecond}, Confidence: 0.95})
	if s.SLO.Goodput != 0 {
		t.Fatalf("goodput %g, want 0", s.SLO.Goodput)
	}
	iv := s.SLO.GoodputCI
	if !iv.OK() || iv.Lo != 0 || !(iv.Hi > 0.1 && iv.Hi < 0.3) {
		t.Errorf("goodput 0 over ~20 s: interval %+v, want [0, ~0.19]", iv)
	}
}
