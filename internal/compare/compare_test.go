package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

const ms = int64(time.Millisecond)

// rec makes a successful record sent at 0 with TTFT ttft ms and n tokens
// tpot ms apart.
func rec(id string, ttft, tpot float64, n int) runlog.Record {
	r := runlog.Record{ID: id, CompletionTokens: n, Status: 200}
	first := int64(ttft * float64(ms))
	for k := range n {
		r.Chunks = append(r.Chunks, runlog.Chunk{T: first + int64(float64(k)*tpot*float64(ms)), Tokens: 1, Visible: true})
	}
	r.End = r.Chunks[n-1].T
	return r
}

// sampleRun draws n records with TTFT ~ 100 + Exp(40) ms and TPOT ~
// 20 + U(0, 4) ms, shifted by dTTFT and dTPOT; sends are spread 100 ms
// apart so throughput is defined.
func sampleRun(seed uint64, n int, dTTFT, dTPOT float64, tokens int) []runlog.Record {
	rng := rand.New(rand.NewPCG(seed, 3))
	recs := make([]runlog.Record, n)
	for i := range recs {
		r := rec(fmt.Sprint(i), 100+40*rng.ExpFloat64()+dTTFT, 20+4*rng.Float64()+dTPOT, tokens)
		shift := int64(i) * 100 * ms
		r.Sent += shift
		r.Intended += shift
		r.End += shift
		for k := range r.Chunks {
			r.Chunks[k].T += shift
		}
		recs[i] = r
	}
	return recs
}

// shifted returns a copy of recs with every token dTTFT ms later.
func shifted(recs []runlog.Record, dTTFT float64) []runlog.Record {
	out := make([]runlog.Record, len(recs))
	for i, r := range recs {
		r.Chunks = append([]runlog.Chunk(nil), r.Chunks...)
		for k := range r.Chunks {
			r.Chunks[k].T += int64(dTTFT * float64(ms))
		}
		r.End += int64(dTTFT * float64(ms))
		out[i] = r
	}
	return out
}

func TestIdenticalRunsContainZero(t *testing.T) {
	a := sampleRun(1, 500, 0, 0, 10)
	c, err := Compare(Run{Name: "a", Records: a}, Run{Name: "b", Records: a}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Deltas) == 0 {
		t.Fatal("Compare(a, a) has no deltas")
	}
	for _, d := range c.Deltas {
		if d.Diff != 0 || !d.HasCI || d.Lo > 0 || d.Hi < 0 || d.Verdict != NoSignificant {
			t.Errorf("Compare(a, a) %s %s = diff %v, CI [%v, %v], %s; want 0 inside the CI, no significant difference",
				d.Metric, d.Stat, d.Diff, d.Lo, d.Hi, d.Verdict)
		}
	}
}

// TestShiftedCopy: B is A with every token 50 ms later, so TTFT, TTP and
// E2E move by exactly +50 ms at every statistic and TPOT not at all. The
// bootstrap of two independent resamples still scatters, but around +50:
// at P99 of 5000 values of 40·Exp(1), the standard error per run is about
// 40·√(0.01·0.99/5000)/0.01 = 5.6 ms, so the interval (≈ ±16 ms) excludes 0.
func TestShiftedCopy(t *testing.T) {
	a := sampleRun(2, 5000, 0, 0, 10)
	b := shifted(a, 50)
	c, err := Compare(Run{Name: "a", Records: a}, Run{Name: "b", Records: b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Deltas {
		want, verdict := 50.0, Worse
		if d.Metric == stats.MetricTPOT {
			want, verdict = 0, NoSignificant
		}
		if math.Abs(d.Diff-want) > 1e-6 {
			t.Errorf("%s %s diff = %v; want %v", d.Metric, d.Stat, d.Diff, want)
		}
		if d.Lo > want || d.Hi < want {
			t.Errorf("%s %s CI = [%v, %v]; want it to contain %v", d.Metric, d.Stat, d.Lo, d.Hi, want)
		}
		if d.Verdict != verdict {
			t.Errorf("%s %s verdict = %s (CI [%v, %v]); want %s", d.Metric, d.Stat, d.Verdict, d.Lo, d.Hi, verdict)
		}
	}
}

// TestMeanCIWidth checks the mean's interval against the normal theory one:
// for independent samples the difference of means has standard error
// √(σa²/na + σb²/nb), so the 95 % half-width is 1.96 of those. With TTFT
// = 100 + 40·Exp(1): σ = 40; na = nb = 1000 → SE = 40·√(2/1000) = 1.789,
// half-width 3.51 ms. Both the resampled (n ≤ 2000) and the normal (n >
// 2000) paths are exercised. The width is averaged over 20 pairs of runs:
// a run's correlation test (vifSignificant) calls independent values
// correlated 5 % of the time by design, widening that run's interval.
func TestMeanCIWidth(t *testing.T) {
	for _, n := range []int{1000, 8000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const pairs = 20
			var sum float64
			for i := range uint64(pairs) {
				a := sampleRun(3+2*i, n, 0, 0, 2)
				b := sampleRun(4+2*i, n, 0, 0, 2)
				c, err := Compare(Run{Records: a}, Run{Records: b}, Options{Metrics: []string{stats.MetricTTFT}})
				if err != nil {
					t.Fatal(err)
				}
				d, _ := c.Delta(stats.MetricTTFT, "mean")
				sum += (d.Hi - d.Lo) / 2
			}
			want := 1.96 * 40 * math.Sqrt(2/float64(n))
			if got := sum / pairs; math.Abs(got-want) > 0.12*want {
				t.Errorf("mean TTFT CI half-width at n=%d, averaged over %d pairs = %.3f ms; want %.3f ± 12 %%", n, pairs, got, want)
			}
		})
	}
}

// TestResamplePercentileExact checks the order-statistic sampler against the
// distribution worked out by hand. Resampling {1, 2, 3} three times, the
// median is 1 when at least two draws are 1: 3·(1/3)²·(2/3) + (1/3)³ =
// 7/27; likewise 3 with 7/27; so 2 with 13/27. The p25 (virtual index 0.5)
// interpolates between the two smallest draws, which exercises the second
// order statistic: its expectation is checked against all 27 equally
// likely resamples, enumerated.
func TestResamplePercentileExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := []float64{1, 2, 3}
	const draws = 200_000
	count := map[float64]int{}
	for range draws {
		count[resamplePercentile(rng, x, 50)]++
	}
	for v, want := range map[float64]float64{1: 7.0 / 27, 2: 13.0 / 27, 3: 7.0 / 27} {
		got := float64(count[v]) / draws
		// Binomial standard error at p ≈ 0.26–0.48 is ≤ 0.0012; allow 4 σ.
		if math.Abs(got-want) > 0.005 {
			t.Errorf("P(resampled median of {1,2,3} = %v) = %.4f; want %.4f", v, got, want)
		}
	}
	exact := 0.0
	for i := range 27 {
		d := []float64{x[i%3], x[i/3%3], x[i/9]}
		exact += percentile(sorted3(d), 25) / 27
	}
	sum := 0.0
	for range draws {
		sum += resamplePercentile(rng, x, 25)
	}
	if got := sum / draws; math.Abs(got-exact) > 0.005 {
		t.Errorf("E[resampled p25 of {1,2,3}] = %.4f; want %.4f (enumerated)", got, exact)
	}
}

func sorted3(d []float64) []float64 {
	if d[0] > d[1] {
		d[0], d[1] = d[1], d[0]
	}
	if d[1] > d[2] {
		d[1], d[2] = d[2], d[1]
	}
	if d[0] > d[1] {
		d[0], d[1] = d[1], d[0]
	}
	return d
}

// TestBinomial checks the sampler's mean np and variance np(1−p) for n
// above and below the direct-trial threshold.
func TestBinomial(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, tc := range []struct {
		n int
		p float64
	}{{10, 0.3}, {1000, 0.9}, {100_000, 0.05}, {5000, 0}, {5000, 1}} {
		const draws = 20_000
		var s, s2 float64
		for range draws {
			k := float64(binomial(rng, tc.n, tc.p))
			if k < 0 || k > float64(tc.n) {
				t.Fatalf("binomial(%d, %v) = %v; out of range", tc.n, tc.p, k)
			}
			s += k
			s2 += k * k
		}
		mean := s / draws
		vr := s2/draws - mean*mean
		wantMean, wantVar := float64(tc.n)*tc.p, float64(tc.n)*tc.p*(1-tc.p)
		if math.Abs(mean-wantMean) > 4*math.Sqrt(wantVar/draws)+1e-9 {
			t.Errorf("binomial(%d, %v) mean = %.3f; want %.3f", tc.n, tc.p, mean, wantMean)
		}
		if math.Abs(vr-wantVar) > 0.05*wantVar+1e-9 {
			t.Errorf("binomial(%d, %v) variance = %.3f; want %.3f", tc.n, tc.p, vr, wantVar)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, b := sampleRun(1, 300, 0, 0, 5), sampleRun(2, 300, 5, 1, 5)
	c1, err := Compare(Run{Records: a}, Run{Records: b}, Options{Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := Compare(Run{Records: a}, Run{Records: b}, Options{Seed: 42})
	if diff := cmp.Diff(c1, c2, cmp.Comparer(func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) })); diff != "" {
		t.Errorf("Compare twice with one seed differs (-first +second):\n%s", diff)
	}
	// A metric's interval does not depend on which other metrics are compared.
	c3, _ := Compare(Run{Records: a}, Run{Records: b}, Options{Seed: 42, Metrics: []string{stats.MetricTPOT}})
	d1, _ := c1.Delta(stats.MetricTPOT, "p90")
	d3, _ := c3.Delta(stats.MetricTPOT, "p90")
	if d1 != d3 {
		t.Errorf("TPOT p90 alone = %+v; with other metrics %+v; want equal", d3, d1)
	}
}

func TestVerdictDirection(t *testing.T) {
	tests := []struct {
		name string
		d    Delta
		want Verdict
	}{
		{"latency up", Delta{HasCI: true, Lo: 1, Hi: 3, LowerIsBetter: true}, Worse},
		{"latency down", Delta{HasCI: true, Lo: -3, Hi: -1, LowerIsBetter: true}, Better},
		{"goodput up", Delta{HasCI: true, Lo: 0.1, Hi: 0.3}, Better},
		{"goodput down", Delta{HasCI: true, Lo: -0.3, Hi: -0.1}, Worse},
		{"straddles", Delta{HasCI: true, Lo: -1, Hi: 1, LowerIsBetter: true}, NoSignificant},
		{"touches zero", Delta{HasCI: true, Lo: 0, Hi: 1, LowerIsBetter: true}, NoSignificant},
		{"no CI", Delta{Diff: 100}, NotJudged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			judge(&tt.d)
			if tt.d.Verdict != tt.want {
				t.Errorf("judge(%+v) = %s; want %s", tt.d, tt.d.Verdict, tt.want)
			}
		})
	}
}

func TestGoodputSameSLO(t *testing.T) {
	// A: TTFT 100–140+ ms; B: the same +100 ms. Under ttft:150 B loses many.
	a := sampleRun(1, 1000, 0, 0, 5)
	b := shifted(a, 100)
	slo, _ := stats.ParseSLO("ttft:150")
	c, err := Compare(Run{Records: a}, Run{Records: b}, Options{SLO: slo})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Goodput
	if g == nil {
		t.Fatal("Compare with an SLO: Goodput = nil")
	}
	sa := stats.Summarize(a, stats.Options{SLO: slo})
	sb := stats.Summarize(b, stats.Options{SLO: slo})
	if g.GoodA != sa.SLO.Good || g.GoodB != sb.SLO.Good {
		t.Errorf("good counts = %d, %d; want stats' %d, %d", g.GoodA, g.GoodB, sa.SLO.Good, sb.SLO.Good)
	}
	if g.GoodB != 0 || g.Attainment.Verdict != Worse || g.Goodput.Verdict != Worse {
		t.Errorf("B under ttft:150 = %d good, attainment %s, goodput %s; want 0, worse, worse", g.GoodB, g.Attainment.Verdict, g.Goodput.Verdict)
	}
	if math.Abs(g.Goodput.A-sa.SLO.Goodput) > 1e-12 {
		t.Errorf("goodput A = %v; want %v", g.Goodput.A, sa.SLO.Goodput)
	}
}

func TestSummariesOnly(t *testing.T) {
	g1, g2, a1, a2 := 3.0, 2.5, 0.9, 0.8
	fa := &Figures{Requests: 100, RequestThroughput: 4, OutputThroughput: 400, SLO: "ttft:2000", Goodput: &g1, Attainment: &a1,
		Metrics: map[string]MetricFigures{"ttft": {Mean: 120, Percentiles: map[float64]float64{50: 100, 99: 300}}}}
	fb := &Figures{Requests: 100, RequestThroughput: 4, OutputThroughput: 380, SLO: "ttft:2000", Goodput: &g2, Attainment: &a2,
		Metrics: map[string]MetricFigures{"ttft": {Mean: 150, Percentiles: map[float64]float64{50: 140, 99: 320}}}}
	c, err := Compare(Run{Name: "a.json", Figures: fa}, Run{Name: "b.json", Figures: fb}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Samples {
		t.Error("Samples = true for summaries")
	}
	d, ok := c.Delta("ttft", "p50")
	if !ok || d.Diff != 40 || d.HasCI || d.Verdict != NotJudged {
		t.Errorf("ttft p50 = %+v; want diff 40, no CI, not judged", d)
	}
	if _, ok := c.Delta("ttft", "p90"); ok {
		t.Error("ttft p90 compared though neither file has it")
	}
	if c.Goodput == nil || c.Goodput.Goodput.Diff != -0.5 {
		t.Errorf("goodput = %+v; want diff −0.5", c.Goodput)
	}
	// Attainment 90 % → 80 % is −10 percentage points, not "−11 %": a
	// share's change is never relative.
	if at := c.Goodput.Attainment; !math.IsNaN(at.Rel) || math.Abs(at.Points()-(-10)) > 1e-9 || at.Unit != UnitShare {
		t.Errorf("attainment Rel %v, Points %v, Unit %q; want NaN, −10, share", at.Rel, at.Points(), at.Unit)
	}
	if p := c.Goodput.Goodput.Points(); !math.IsNaN(p) {
		t.Errorf("goodput Points() = %v; want NaN (not a share)", p)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "without confidence intervals") {
		t.Errorf("notes = %q; want the no-interval caveat", c.Notes)
	}
	fb.SLO = "ttft:1000"
	c, _ = Compare(Run{Figures: fa}, Run{Figures: fb}, Options{})
	if c.Goodput != nil || !strings.Contains(strings.Join(c.Notes, "\n"), "different SLOs") {
		t.Errorf("different SLOs: goodput %+v, notes %q; want none and a note", c.Goodput, c.Notes)
	}
}

func TestUserView(t *testing.T) {
	base := sampleRun(1, 1500, 0, 0, 100)
	tests := []struct {
		name string
		b    []runlog.Record
		opt  Options
		want []string
	}{
		{"ttft worse", shifted(base, 200), Options{},
			[]string{"Every user pays the TTFT change", "+200 ms", "TPOT shows no significant change"}},
		{"tpot under reading speed", sampleRun(1, 1500, 0, 5, 100), Options{},
			[]string{"both are faster than reading speed (194 ms/token, about 5.2 tokens/s: adults' 238 words/min, Brysbaert 2019)", "does not see the change", "over a 100-token answer"}},
		{"tpot crosses reading speed", sampleRun(1, 1500, 0, 40, 100), Options{ReadingSpeed: 50 * time.Millisecond},
			[]string{"now falls behind reading speed", "see the text stall"}},
		{"both slower than a fast reader", sampleRun(1, 1500, 0, 5, 100), Options{ReadingSpeed: 10 * time.Millisecond},
			[]string{"both slower than reading speed (10 ms/token", "users who read long answers wait"}},
		{"mixed: e2e misleads", sampleRun(1, 1500, -60, 3, 100), Options{},
			[]string{"E2E alone would mislead", "faster to the first token but slower per token", "shorter than about 21 tokens finish sooner"}},
		{"longer answers", sampleRun(1, 1500, 0, 0, 130), Options{},
			[]string{"E2E alone would mislead: B's answers are 30.0 % longer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opt.Resamples = 400 // the effects are large; keeps the test quick under -race
			c, err := Compare(Run{Name: "a", Records: base}, Run{Name: "b", Records: tt.b}, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(c.UserView, "\n")
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("user view lacks %q; got:\n%s", w, text)
				}
			}
		})
	}
}

func TestCompareErrors(t *testing.T) {
	a := sampleRun(1, 10, 0, 0, 3)
	for _, tc := range []struct {
		name string
		b    Run
		o    Options
	}{
		{"itl", Run{Records: a}, Options{Metrics: []string{"itl"}}},
		{"bad percentile", Run{Records: a}, Options{Percentiles: []float64{101}}},
		{"empty run", Run{Name: "x"}, Options{}},
	} {
		if _, err := Compare(Run{Records: a}, tc.b, tc.o); err == nil {
			t.Errorf("Compare(%s) = nil error; want one", tc.name)
		}
	}
}

// BenchmarkCompare100k compares two runs of 100,000 requests each with the
// default options (5 metrics × mean + 3 percentiles, B = 2000).
func BenchmarkCompare100k(b *testing.B) {
	n := perfgoal.Size(100_000, 1000)
	ra, rb := sampleRun(1, n, 0, 0, 4), sampleRun(2, n, 3, 0.5, 4)
	slo, _ := stats.ParseSLO("ttft:200 tpot:25")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Compare(Run{Records: ra}, Run{Records: rb}, Options{SLO: slo}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResamplePercentile100k(b *testing.B) {
	x := make([]float64, perfgoal.Size(100_000, 1000))
	for i := range x {
		x[i] = float64(i)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		resamplePercentile(rng, x, 99)
	}
}

func TestGoodputThroughputOnlyIsNotSignificant(t *testing.T) {
	// Every request of both runs meets the SLO; B's last request ends 50 ms
	// later, so its goodput (requests/s) is a hair lower. Only throughput
	// differs, which one run per side cannot call significant.
	a := sampleRun(1, 200, 0, 0, 5)
	b := shifted(a, 0)
	b[len(b)-1].Chunks[len(b[len(b)-1].Chunks)-1].T += 50 * ms
	b[len(b)-1].End += 50 * ms
	slo, _ := stats.ParseSLO("ttft:10000")
	c, err := Compare(Run{Records: a}, Run{Records: b}, Options{SLO: slo})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Goodput
	if !(g.Goodput.B < g.Goodput.A) {
		t.Fatalf("goodput %v → %v; the test wants B a little lower", g.Goodput.A, g.Goodput.B)
	}
	if g.Attainment.Verdict != NoSignificant || g.Goodput.Verdict != NoSignificant {
		t.Errorf("attainment %s, goodput %s; want no significant difference for both", g.Attainment.Verdict, g.Goodput.Verdict)
	}
}
