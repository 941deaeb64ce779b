package stats

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePrecision(t *testing.T) {
	got, err := ParsePrecision("p99_ttft:5%, mean_tpot:2 median_e2e:10%,goodput:7.5%,p99.9_itl:20%")
	if err != nil {
		t.Fatal(err)
	}
	want := []PrecisionTarget{
		{Stat: "p99", P: 99, Metric: MetricTTFT, Rel: 0.05},
		{Stat: "mean", Metric: MetricTPOT, Rel: 0.02},
		{Stat: "median", P: 50, Metric: MetricE2E, Rel: 0.10},
		{Stat: "goodput", Rel: 0.075},
		{Stat: "p99.9", P: 99.9, Metric: MetricITL, Rel: 0.20},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParsePrecision (-want +got):\n%s", d)
	}
	if got[0].String() != "p99_ttft:5%" || got[3].Name() != "goodput" {
		t.Errorf("names: %s, %s", got[0], got[3].Name())
	}
	if ts, err := ParsePrecision(""); err != nil || ts != nil {
		t.Errorf("empty: %v, %v; want no targets", ts, err)
	}
	for in, want := range map[string]string{
		"p99_ttft":              "want NAME:PCT",
		"p99_ttft:0%":           "per cent in (0, 100)",
		"p99_ttft:100":          "per cent in (0, 100)",
		"p99_ttft:x%":           "per cent in (0, 100)",
		"p99_foo:5%":            "want mean_M, median_M or pNN_M",
		"p100_ttft:5%":          "not a percentile",
		"max_ttft:5%":           "want mean, median or pNN",
		"p99_ttft:5,p99_ttft:3": "given twice",
		"ttft:5%":               "want mean_M",
	} {
		if _, err := ParsePrecision(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePrecision(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func FuzzParsePrecision(f *testing.F) {
	for _, s := range []string{"p99_ttft:5%", "mean_tpot:2,goodput:1%", "median_e2e:10", ":", "p_ttft:1", "pNaN_ttft:1%", "p99_ttft:1e-300%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ParsePrecision(s)
		if err != nil {
			return
		}
		for _, x := range ts {
			if !(x.Rel > 0 && x.Rel < 1) {
				t.Fatalf("%q: target %+v has a precision outside (0, 1)", s, x)
			}
			again, err := ParsePrecision(x.String())
			if err != nil || len(again) != 1 || again[0].Name() != x.Name() {
				t.Fatalf("%q: %s does not read back: %v %v", s, x, again, err)
			}
		}
	})
}

// TestPrecisionByHand judges a summary whose intervals are given: mean
// TTFT 200 ms [190, 210] is ±10/200 = 5.0 %; P99 TTFT 400 ms [380, 440]
// is ±30/400 = 7.5 %; goodput 8 req/s [7.6, 8.4] is ±0.4/8 = 5.0 %.
// After 100 requests the P99's 7.5 % against a 5 % target needs about
// 100·(7.5/5)² = 225 requests.
func TestPrecisionByHand(t *testing.T) {
	iv := func(lo, hi float64) Interval { return Interval{Lo: lo, Hi: hi, Level: 0.95} }
	s := &Summary{
		Metrics: []MetricSummary{{Name: MetricTTFT, N: 100, Mean: 200, MeanCI: iv(190, 210), Median: 180, MedianCI: iv(170, 200),
			Percentiles: []PercentileValue{{P: 99, Value: 400, CI: iv(380, 440)}, {P: 90, Value: 300}}}},
		SLO: SLOSummary{Set: true, Goodput: 8, GoodputCI: iv(7.6, 8.4)},
	}
	ts, err := ParsePrecision("mean_ttft:5%,p99_ttft:5%,goodput:6%,p90_ttft:50%,median_ttft:10%")
	if err != nil {
		t.Fatal(err)
	}
	st := Precision(s, ts)
	want := []struct {
		rel float64
		ok  bool
		met bool
	}{{0.05, true, true}, {0.075, true, false}, {0.05, true, true}, {math.Inf(1), false, false}, {15.0 / 180, true, true}}
	for i, w := range want {
		if st[i].OK != w.ok || st[i].Met() != w.met || (w.ok && math.Abs(st[i].Rel-w.rel) > 1e-12) {
			t.Errorf("%s: rel %g ok %v met %v; want %g %v %v", ts[i].Name(), st[i].Rel, st[i].OK, st[i].Met(), w.rel, w.ok, w.met)
		}
	}
	if got := st[1].String(); got != "p99_ttft ±7.5% (target 5%)" {
		t.Errorf("state line %q", got)
	}
	if n := PrecisionNeeded(100, st[:3]); n != 225 {
		t.Errorf("PrecisionNeeded = %d, want 225", n)
	}
	if n := PrecisionNeeded(100, st); n != -1 {
		t.Errorf("PrecisionNeeded with a figure lacking an interval = %d, want -1", n)
	}
	if n := PrecisionNeeded(100, []PrecisionState{st[0], st[2]}); n != 0 {
		t.Errorf("PrecisionNeeded with every target met = %d, want 0", n)
	}
}

func TestPrecisionOptions(t *testing.T) {
	ts, _ := ParsePrecision("p99_ttft:5%,mean_ttft:5%,p50_tpot:5%,goodput:5%")
	o := PrecisionOptions(ts, 0.9, SLO{TTFT: 1})
	if d := cmp.Diff(Options{Metrics: []string{MetricTTFT, MetricTPOT}, Percentiles: []float64{50, 99}, Buckets: []int{}, Confidence: 0.9, SLO: SLO{TTFT: 1}}, o); d != "" {
		t.Errorf("PrecisionOptions (-want +got):\n%s", d)
	}
}
