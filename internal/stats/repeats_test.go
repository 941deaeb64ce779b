package stats

import (
	"math"
	"testing"
)

// TestRepeatSpreadByHand: three repeats with mean TTFT 100, 110 and 120 ms,
// each claiming ±4 ms. The sample SD is 10; t(2, 0.975) = 4.3027, so one
// run's figure moves ±43.03 ms between runs, 10.76 times what each run's
// own interval said, and the mean over the three is 110 ± 4.3027·10/√3 =
// ±24.84 ms. Throughput 10, 10, 10 has no spread at all.
func TestRepeatSpreadByHand(t *testing.T) {
	sum := func(mean float64) Summary {
		return Summary{RequestThroughput: 10, Metrics: []MetricSummary{{Name: MetricTTFT, N: 100, Mean: mean,
			MeanCI: Interval{Lo: mean - 4, Hi: mean + 4, Level: 0.95}, Median: mean}}}
	}
	figs := RepeatSpread([]Summary{sum(100), sum(110), sum(120)}, 0.95)
	var mean, thr *RepeatFigure
	for i := range figs {
		switch figs[i].Key {
		case "mean_ttft_ms":
			mean = &figs[i]
		case "request_throughput":
			thr = &figs[i]
		}
	}
	if mean == nil || thr == nil {
		t.Fatalf("figures %v lack mean_ttft_ms or request_throughput", figs)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.01 }
	if !near(mean.Mean, 110) || !near(mean.SD, 10) || !near(mean.Between, 43.03) || !near(mean.Within, 4) ||
		!near(mean.Ratio, 10.76) || !near(mean.MeanCI.Hi-110, 24.84) || !near(mean.Larger(), 43.03) {
		t.Errorf("mean TTFT: %+v; want mean 110, SD 10, between ±43.03, within ±4, ratio 10.76, mean ±24.84", *mean)
	}
	if thr.SD != 0 || thr.Between != 0 || !math.IsNaN(thr.Ratio) {
		t.Errorf("throughput: %+v; want no spread and no ratio (no within-run interval)", *thr)
	}
	if RepeatSpread([]Summary{sum(1)}, 0.95) != nil {
		t.Error("one summary gave a spread")
	}
}
