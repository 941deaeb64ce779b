package sweep

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

func TestParseLevels(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		multiples bool
		want      []float64
		err       string
	}{
		{name: "commas", in: "1,8,16,32,64", want: []float64{1, 8, 16, 32, 64}},
		{name: "spaces and fractions", in: "0.5 1.5, 2", want: []float64{0.5, 1.5, 2}},
		{name: "multiples", in: "1x,1.5x,2X", multiples: true, want: []float64{1, 1.5, 2}},
		{name: "bare multiples", in: "0.5,1", multiples: true, want: []float64{0.5, 1}},
		{name: "empty", in: " , ", err: "no levels"},
		{name: "zero", in: "1,0", err: `level "0"`},
		{name: "negative", in: "-1", err: `level "-1"`},
		{name: "inf", in: "inf", err: `level "inf"`},
		{name: "x in a list", in: "2x", err: `level "2x"`},
		{name: "bad multiple", in: "1x,xx", multiples: true, err: `level "xx": want a positive multiple`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parse := ParseList
			if tt.multiples {
				parse = ParseMultiples
			}
			got, err := parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parse(%q) error = %v; want containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parse(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzParseLevels(f *testing.F) {
	for _, s := range []string{"1,2,4", "1x,1.5x", "0.1 0.2", "", "x", "1e9,1e10", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) ([]float64, error){ParseList, ParseMultiples} {
			vs, err := parse(s)
			if err != nil {
				continue
			}
			if len(vs) == 0 {
				t.Fatalf("parse(%q) = no levels and no error", s)
			}
			for _, v := range vs {
				if !(v > 0) || math.IsInf(v, 0) {
					t.Fatalf("parse(%q) accepted %v", s, v)
				}
			}
		}
	})
}

func TestAxis(t *testing.T) {
	tmpl := runlog.Level{RequestRate: 4, MaxConcurrency: 8}
	if got, want := AxisConcurrency.At(tmpl, 16.4), (runlog.Level{RequestRate: 4, MaxConcurrency: 16, Label: "c=16"}); got != want {
		t.Errorf("AxisConcurrency.At(16.4) = %+v; want %+v", got, want)
	}
	if got, want := AxisRate.At(tmpl, 2.5), (runlog.Level{RequestRate: 2.5, MaxConcurrency: 8, Label: "rate=2.5"}); got != want {
		t.Errorf("AxisRate.At(2.5) = %+v; want %+v", got, want)
	}
	if got := Levels(AxisRate, []float64{1, 2}, runlog.Level{}); len(got) != 2 || AxisRate.Load(got[1]) != 2 {
		t.Errorf("Levels = %+v", got)
	}
}

// TestRateLabel: a bisection midpoint is named at three significant
// figures; the level keeps its exact rate.
func TestRateLabel(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want string
	}{
		{22.1640625, "rate=22.2"}, {2.5, "rate=2.5"}, {1000, "rate=1000"}, {1234.5, "rate=1230"}, {0.123456, "rate=0.123"},
	} {
		l := AxisRate.At(runlog.Level{}, tt.rate)
		if l.Label != tt.want || l.RequestRate != tt.rate {
			t.Errorf("AxisRate.At(%g) = %q at %g; want %q at %g", tt.rate, l.Label, l.RequestRate, tt.want, tt.rate)
		}
	}
}

// TestAnalyzeOfferedRate: verdicts follow the rate a level's schedule
// delivered, not its name. Level "3" offered 5.05 req/s and level "4"
// 4.43, as independent random schedules of 40 requests did: ordered by
// offered load the curve is 2, 4.43, 5.05, and the knee and peaks carry the
// offered figures.
func TestAnalyzeOfferedRate(t *testing.T) {
	offered := func(p Point, r float64) Point { p.Offered = r; return p }
	pts := []Point{
		offered(point(2, 2, 2, 1, 100), 2.1),
		offered(point(3, 4.9, 2, 0.4, 3000), 5.05),
		offered(point(4, 4.4, 4.3, 0.99, 110), 4.43),
		offered(point(6, 4.5, 1, 0.2, 9000), 6.2),
	}
	if got := pts[1].Load(AxisRate); got != 5.05 {
		t.Errorf("Load(AxisRate) = %g; want the offered 5.05", got)
	}
	if got := pts[1].Load(AxisConcurrency); got != 0 {
		t.Errorf("Load(AxisConcurrency) = %g; want 0 (no cap)", got)
	}
	res := Analyze(pts, Config{Axis: AxisRate})
	if res.Knee == nil || res.Knee.Index != 1 || res.Knee.Load != 5.05 {
		t.Errorf("Knee = %+v (%s); want level 1 at its offered 5.05", res.Knee, res.KneeNote)
	}
	if res.MaxWithinSLO == nil || res.MaxWithinSLO.Load != 4.43 {
		t.Errorf("MaxWithinSLO = %+v; want the level offered 4.43", res.MaxWithinSLO)
	}
	if got := res.ByLoad(); !slices.Equal(got, []int{0, 2, 1, 3}) {
		t.Errorf("ByLoad = %v; want [0 2 1 3] (by offered rate)", got)
	}
}

func TestFindKnee(t *testing.T) {
	loads := []float64{1, 2, 4, 8, 16}
	tests := []struct {
		name   string
		loads  []float64
		p99    []float64
		cfg    KneeConfig
		want   Knee
		ok     bool
		reason string
	}{
		{
			// base = (110−100)/(2−1) = 10 ms per unit (floor 0.05·100/1 = 5);
			// segment slopes 10, 10, then (900−170)/8 = 91.25 > 3·10, and
			// 900 > 1.5·100: the knee is load 16.
			name: "hockey stick", loads: loads, p99: []float64{100, 110, 130, 170, 900}, ok: true,
			want: Knee{Index: 4, Load: 16, P99TTFTMs: 900, Slope: 91.25, BaseSlope: 10, K: 3},
		},
		{
			// slopes 20/2, 40/4, 80/8 = 10 each: steepest 10/10 = 1.0×.
			name: "linear is no knee", loads: loads, p99: []float64{100, 110, 130, 170, 250},
			reason: "rose at most 1.0× the low-load slope",
		},
		{
			// base = max(0, 0.05·100/1) = 5; at load 4 slope 40 > 15 but 140 <
			// 150 (MinRise); at 5 slope 460 and 600 > 150: the knee is 5.
			name: "flat start, small bump", loads: []float64{1, 2, 3, 4, 5}, p99: []float64{100, 100, 100, 140, 600}, ok: true,
			want: Knee{Index: 4, Load: 5, P99TTFTMs: 600, Slope: 460, BaseSlope: 5, K: 3},
		},
		{
			// 91.25 < 10·10: a larger k finds no knee.
			name: "k too large", loads: loads, p99: []float64{100, 110, 130, 170, 900}, cfg: KneeConfig{K: 10},
			reason: "threshold 10×",
		},
		{
			// the first steep segment is the knee, not the steepest: (400−130)/4 =
			// 67.5 > 30 at load 8.
			name: "first steep segment", loads: loads, p99: []float64{100, 110, 130, 400, 5000}, ok: true,
			want: Knee{Index: 3, Load: 8, P99TTFTMs: 400, Slope: 67.5, BaseSlope: 10, K: 3},
		},
		{
			// base = max(0, 0.05·100/1) = 5; at load 4 slope 40 > 15 is steep
			// but 140 ≤ 150: the rise condition decided, not the slope.
			name: "steep but not high", loads: []float64{1, 2, 3, 4}, p99: []float64{100, 100, 100, 140},
			reason: "rose steeply (up to 8.0× the low-load slope) but never above 1.5× the lowest level's (100 ms; at most 1.40×, 140 ms)",
		},
		{
			// at load 4 slope 45 > 15 but 145 ≤ 150; at 5, 160 > 150 but slope
			// 15 is not > 15: each condition held somewhere, never together.
			name: "steep and high apart", loads: []float64{1, 2, 3, 4, 5}, p99: []float64{100, 100, 100, 145, 160},
			reason: "the steep segments (up to 9.0× the low-load slope) stayed within 1.5× the lowest level's P99 TTFT (at most 1.45×), and the levels above it rose no faster than 3× the low-load slope",
		},
		{name: "two points", loads: []float64{1, 2}, p99: []float64{1, 100}, reason: "at least 3 levels"},
		{name: "unsorted", loads: []float64{1, 4, 2}, p99: []float64{1, 2, 3}, reason: "ascending"},
		{name: "no latency", loads: []float64{1, 2, 3}, p99: []float64{0, 0, 5}, reason: "no latency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, why := FindKnee(tt.loads, tt.p99, tt.cfg)
			if ok != tt.ok {
				t.Fatalf("FindKnee ok = %v (%s); want %v", ok, why, tt.ok)
			}
			if ok {
				if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
					t.Errorf("FindKnee (-want +got):\n%s", diff)
				}
				return
			}
			if !strings.Contains(why, tt.reason) {
				t.Errorf("FindKnee why = %q; want containing %q", why, tt.reason)
			}
		})
	}
}

// point builds a level's Point with the figures Analyze reads.
func point(rate, thr, goodput, att, p99 float64) Point {
	return Point{
		Level: AxisRate.At(runlog.Level{}, rate),
		Summary: stats.Summary{
			Requests: 100, Completed: 100, RequestThroughput: thr, OutputThroughput: 100 * thr, DurationS: 100 / thr,
			Metrics: []stats.MetricSummary{{Name: stats.MetricTTFT, N: 100, Max: p99, Percentiles: []stats.PercentileValue{{P: 99, Value: p99}}}},
			SLO:     stats.SLOSummary{Set: true, Goodput: goodput, Attainment: att},
		},
	}
}

func TestAnalyze(t *testing.T) {
	// A hand-made curve: throughput saturates at 10.5 req/s, goodput peaks
	// at 7.9 req/s (rate 8), P99 TTFT turns up at rate 12.
	pts := []Point{
		point(16, 10.5, 2.1, 0.2, 9000), // run order need not be load order
		point(2, 2, 2, 1, 100),
		point(4, 4, 4, 1, 110),
		point(8, 8, 7.9, 0.99, 130),
		point(12, 10.2, 6, 0.59, 1500),
	}
	res := Analyze(pts, Config{Axis: AxisRate})
	// Knee: base (110−100)/2 = 5; slopes 20/4 = 5, then (1500−130)/4 = 342.5 > 15.
	if res.Knee == nil || res.Knee.Index != 4 || res.Knee.Load != 12 || res.Knee.Slope != 342.5 {
		t.Errorf("Knee = %+v (%s); want index 4 at load 12, slope 342.5", res.Knee, res.KneeNote)
	}
	if res.ThroughputPeak == nil || res.ThroughputPeak.Index != 0 || res.ThroughputPeak.Load != 16 {
		t.Errorf("ThroughputPeak = %+v; want level 0 at 16", res.ThroughputPeak)
	}
	if res.GoodputPeak == nil || res.GoodputPeak.Index != 3 || res.GoodputPeak.Load != 8 {
		t.Errorf("GoodputPeak = %+v; want level 3 at 8", res.GoodputPeak)
	}
	// The throughput peak: 16/8 = 2× the load, 1 − 0.2 = 80 % violating,
	// goodput 1 − 2.1/7.9 = 73.4 % lower.
	want := &Violation{LoadRatio: 2, ViolatingShare: 0.8, GoodputLoss: 1 - 2.1/7.9}
	if diff := cmp.Diff(want, res.Violation, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Violation (-want +got):\n%s", diff)
	}
	// Attainment 0.99 meets the default 99 %: rate 8 is the highest within SLO.
	if res.MaxWithinSLO == nil || res.MaxWithinSLO.Load != 8 {
		t.Errorf("MaxWithinSLO = %+v; want load 8", res.MaxWithinSLO)
	}
	if !strings.Contains(res.KneeMethod, "3×") {
		t.Errorf("KneeMethod = %q; want it to state k", res.KneeMethod)
	}

	// Without an SLO there is no goodput peak and no violation.
	for i := range pts {
		pts[i].Summary.SLO = stats.SLOSummary{}
	}
	res = Analyze(pts, Config{Axis: AxisRate})
	if res.GoodputPeak != nil || res.Violation != nil || res.MaxWithinSLO != nil {
		t.Errorf("no SLO: GoodputPeak %+v Violation %+v MaxWithinSLO %+v; want nil", res.GoodputPeak, res.Violation, res.MaxWithinSLO)
	}
}

// TestAnalyzeBelowCapacity: levels that never saturate put the capacity
// above the range tested, and the highest level is no knee.
func TestAnalyzeBelowCapacity(t *testing.T) {
	// Throughput keeps up with every rate (no level falls behind), P99 TTFT
	// jumps only at the top: base (110−100)/2 = 5; slope 20/4 = 5, then
	// (900−130)/8 = 96.25 > 15 with 900 > 150 — a knee candidate at 16.
	pts := []Point{point(2, 2, 2, 1, 100), point(4, 4, 4, 1, 110), point(8, 8, 8, 1, 130), point(16, 16, 16, 1, 900)}
	res := Analyze(pts, Config{Axis: AxisRate})
	if !res.CapacityAbove || res.Knee != nil {
		t.Fatalf("CapacityAbove %v, Knee %+v; want true and no knee", res.CapacityAbove, res.Knee)
	}
	if want := "P99 TTFT turns up only at the highest load tested (16 req/s, 900 ms) and no level saturated: the capacity lies above the range tested"; !strings.Contains(res.KneeNote, want) {
		t.Errorf("KneeNote = %q; want containing %q", res.KneeNote, want)
	}
	// report's TestSweepTerminalBelowCapacity renders this result.
	fs := Findings(&res, nil, Criteria{})
	var gotIDs []string
	for _, f := range fs {
		gotIDs = append(gotIDs, f.ID)
		if f.ID == "recommended-load" && (strings.HasPrefix(f.Message, "Recommended") || f.Evidence["capacity_above_range"] != true) {
			t.Errorf("recommended-load = %+v; want it flagged as a lower bound", f)
		}
	}
	// The goodput peak is the recommended level: said once.
	if diff := cmp.Diff([]string{"capacity-above-range", "recommended-load"}, gotIDs); diff != "" {
		t.Errorf("Findings ids (-want +got):\n%s", diff)
	}

	// Linear latency and no saturation: no knee, and the note says where
	// the capacity is rather than just the slope.
	pts[3] = point(16, 16, 16, 1, 170)
	res = Analyze(pts, Config{Axis: AxisRate})
	if want := "; no level saturated, so the capacity lies above the range tested (beyond 16 req/s): sweep higher loads"; !strings.HasSuffix(res.KneeNote, want) {
		t.Errorf("KneeNote = %q; want ending %q", res.KneeNote, want)
	}

	// The same jump where throughput stopped growing (8 → 8.4 req/s for
	// twice the load: 5 % against half of 100 %) is saturation: the top
	// level is the knee and the peaks are real.
	pts[3] = point(16, 8.4, 8.4, 1, 900)
	pts[3].Summary.Requests = 50 // too few for the fell-behind test: only the throughput says so
	res = Analyze(pts, Config{Axis: AxisRate})
	if res.CapacityAbove || res.Knee == nil || res.Knee.Load != 16 {
		t.Errorf("flat throughput: CapacityAbove %v, Knee %+v (%s); want false and the knee at 16", res.CapacityAbove, res.Knee, res.KneeNote)
	}
}

// TestRecommendWithinSLO: the goodput peak can sit past the SLO (more good
// requests per second while more users miss it); the recommendation is the
// highest load that keeps the SLO, and the goodput peak is said to miss it.
func TestRecommendWithinSLO(t *testing.T) {
	pts := []Point{
		point(10, 10, 10, 1, 100),
		point(18.5, 18.4, 18.3, 0.995, 400),
		point(21.2, 21, 18.8, 0.894, 2000),
		point(25, 21.5, 10, 0.46, 9000),
	}
	res := Analyze(pts, Config{Axis: AxisRate})
	if res.GoodputPeak == nil || res.GoodputPeak.Load != 21.2 {
		t.Fatalf("GoodputPeak = %+v; want load 21.2", res.GoodputPeak)
	}
	if res.Recommended == nil || res.Recommended.Load != 18.5 {
		t.Fatalf("Recommended = %+v; want load 18.5, the highest within SLO", res.Recommended)
	}
	byID := map[string]string{}
	for _, f := range Findings(&res, nil, Criteria{}) {
		byID[f.ID] = f.Message
	}
	if m := byID["recommended-load"]; !strings.HasPrefix(m, "Recommended operating point: 18.5 req/s, the highest load within SLO") {
		t.Errorf("recommended-load = %q; want it at 18.5", m)
	}
	if m := byID["goodput-peak"]; !strings.Contains(m, "misses the SLO") || strings.Contains(m, "Recommended") {
		t.Errorf("goodput-peak = %q; want it said to miss the SLO, not recommended", m)
	}

	// Nothing within SLO: no recommendation, and a warning says so.
	for i := range pts {
		pts[i].Summary.SLO.Attainment = 0.5
	}
	res = Analyze(pts, Config{Axis: AxisRate})
	if res.Recommended != nil {
		t.Errorf("nothing within SLO: Recommended = %+v; want nil", res.Recommended)
	}
	for _, f := range Findings(&res, nil, Criteria{}) {
		if f.ID == "recommended-load" && (f.Severity != findings.Warning || !strings.Contains(f.Message, "no load can be recommended")) {
			t.Errorf("recommended-load = %+v; want a warning that nothing can be recommended", f)
		}
	}
}

// TestInterruptedLevelNotJudged: a level the user cut short is shown but
// counts for neither knee, peaks nor recommendation, and is not saturated.
func TestInterruptedLevelNotJudged(t *testing.T) {
	cut := point(30, 40, 40, 1, 100) // a few fast requests before Ctrl-C
	cut.Stopped = Interrupted
	pts := []Point{point(10, 10, 10, 1, 100), point(20, 19.9, 19.8, 0.995, 300), cut}
	res := Analyze(pts, Config{Axis: AxisRate})
	if diff := cmp.Diff([]int{2}, res.Partial); diff != "" {
		t.Errorf("Partial (-want +got):\n%s", diff)
	}
	for name, p := range map[string]*Peak{"ThroughputPeak": res.ThroughputPeak, "GoodputPeak": res.GoodputPeak, "Recommended": res.Recommended} {
		if p == nil || p.Load != 20 {
			t.Errorf("%s = %+v; want load 20, not the interrupted level", name, p)
		}
	}
	if res.Saturated[2] != "" {
		t.Errorf("Saturated[2] = %q; an interruption is not saturation", res.Saturated[2])
	}
	var ids []string
	for _, f := range Findings(&res, nil, Criteria{}) {
		ids = append(ids, f.ID)
	}
	if !slices.Contains(ids, "sweep-level-interrupted") {
		t.Errorf("Findings ids = %v; want sweep-level-interrupted", ids)
	}
}

func TestCriteria(t *testing.T) {
	p := point(8, 8, 7.9, 0.99, 130)
	p.MedianQueueMs = 2500
	tests := []struct {
		name string
		c    Criteria
		p    Point
		ok   bool
		why  string
	}{
		{"default attainment", Criteria{}, p, true, ""},
		{"higher attainment", Criteria{Attainment: 0.995}, p, false, "attainment 99.00 % < 99.5 %"},
		{"queue cap", Criteria{MaxMedianQueueMs: 2000}, p, false, "median queue 2500 ms > 2000 ms"},
		{"no SLO", Criteria{}, Point{}, false, "no SLO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := tt.c.Meets(tt.p)
			if ok != tt.ok || why != tt.why {
				t.Errorf("Meets = %v, %q; want %v, %q", ok, why, tt.ok, tt.why)
			}
		})
	}
}

func TestRunStopsWhenSaturated(t *testing.T) {
	var ran []int
	r := RunnerFunc(func(_ context.Context, idx int, l runlog.Level) (Point, error) {
		ran = append(ran, idx)
		p := point(l.RequestRate, l.RequestRate, l.RequestRate, 1, 100*l.RequestRate)
		if l.RequestRate >= 3 {
			p.Stopped = "stopped early: queue growing"
		}
		return p, nil
	})
	levels := Levels(AxisRate, []float64{1, 2, 3, 4, 5}, runlog.Level{})
	var seen int
	res, err := Run(context.Background(), r, levels, Config{Axis: AxisRate, OnPoint: func(Point) { seen++ }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 2}, ran); diff != "" {
		t.Errorf("levels run (-want +got):\n%s", diff)
	}
	if res.Skipped != 2 || !strings.Contains(res.Stopped, "level 2 (rate=3) is saturated: stopped early: queue growing") || seen != 3 {
		t.Errorf("Skipped %d, Stopped %q, OnPoint %d; want 2, level 2 saturated, 3", res.Skipped, res.Stopped, seen)
	}
	if diff := cmp.Diff([]string{"", "", "stopped early: queue growing"}, res.Saturated); diff != "" {
		t.Errorf("Saturated (-want +got):\n%s", diff)
	}

	// With the stop off every level runs.
	ran = nil
	res, err = Run(context.Background(), r, levels, Config{Axis: AxisRate, Saturation: Saturation{Off: true}})
	if err != nil || len(ran) != 5 || res.Stopped != "" {
		t.Errorf("Off: ran %v, Stopped %q, err %v; want all 5", ran, res.Stopped, err)
	}

	// A runner error returns the levels so far.
	boom := errors.New("boom")
	res, err = Run(context.Background(), RunnerFunc(func(_ context.Context, idx int, l runlog.Level) (Point, error) {
		if idx == 1 {
			return Point{}, boom
		}
		return point(l.RequestRate, 1, 1, 1, 1), nil
	}), levels, Config{Axis: AxisRate})
	if !errors.Is(err, boom) || len(res.Points) != 1 {
		t.Errorf("runner error: %d points, err %v; want 1 point and boom", len(res.Points), err)
	}
}

// rec is a finished record whose first token came waitMs after its
// scheduled send.
func rec(intendedMs, waitMs float64, class runlog.ErrorClass) runlog.Record {
	r := runlog.Record{Intended: int64(intendedMs * 1e6), Sent: int64(intendedMs * 1e6), ErrorClass: class}
	if class == runlog.ErrNone {
		r.Chunks = []runlog.Chunk{{T: r.Intended + int64(waitMs*1e6), Tokens: 1, Visible: true}}
	}
	r.End = r.Intended + int64(waitMs*1e6)
	return r
}

func TestMonitor(t *testing.T) {
	tests := []struct {
		name string
		wait func(i int) (float64, runlog.ErrorClass)
		want string // "" = never stops
		at   int    // record count at which it stops
	}{
		// Arrivals every 100 ms, service every 125 ms: the wait grows by
		// 25 ms a request. Windows of 1000/20 = 50; after 6 windows the
		// thirds average about 625, 3125, 5625 ms.
		{name: "queue grows", wait: func(i int) (float64, runlog.ErrorClass) { return 100 + 25*float64(i), "" },
			want: "queue growing without bound", at: 300},
		{name: "stable", wait: func(i int) (float64, runlog.ErrorClass) { return 100 + float64(i%7)*30, "" }},
		// Stable but high and noisy: no 500 ms rise.
		{name: "slow but flat", wait: func(i int) (float64, runlog.ErrorClass) { return 3000 + float64(i%50)*10, "" }},
		// One in five fails: 20 % > 10 % once 50 records are in.
		{name: "errors", wait: func(i int) (float64, runlog.ErrorClass) {
			if i%5 == 0 {
				return 10, runlog.ErrHTTP5xx
			}
			return 100, ""
		}, want: "error rate 20.0 % (10 of 50) above 10 %", at: 50},
		// Cancellations are the run's doing, not the server's.
		{name: "cancellations ignored", wait: func(i int) (float64, runlog.ErrorClass) {
			if i%2 == 0 {
				return 10, runlog.ErrCancelled
			}
			return 100, ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMonitor(Saturation{}, 1000)
			got, at := "", 0
			for i := range 1000 {
				w, c := tt.wait(i)
				r := rec(100*float64(i), w, c)
				if why := m.Observe(&r); why != "" {
					got, at = why, i+1
					break
				}
			}
			if tt.want == "" {
				if got != "" {
					t.Fatalf("Monitor stopped at %d: %s; want no stop", at, got)
				}
				return
			}
			if !strings.Contains(got, tt.want) || at != tt.at {
				t.Errorf("Monitor = %q at %d; want %q at %d", got, at, tt.want, tt.at)
			}
		})
	}
	m := NewMonitor(Saturation{Off: true}, 100)
	for i := range 200 {
		r := rec(0, 0, runlog.ErrHTTP5xx)
		if why := m.Observe(&r); why != "" {
			t.Fatalf("Off monitor stopped at %d: %s", i, why)
		}
	}
}

func TestJudge(t *testing.T) {
	behind := point(10, 7, 7, 1, 100)
	// 100 requests at 10 req/s need 10 s plus the median E2E (2 s); the
	// level took 100/7 = 14.3 s < 1.5 × 12 = 18 s: not behind.
	behind.Summary.Metrics = append(behind.Summary.Metrics, stats.MetricSummary{Name: stats.MetricE2E, N: 100, Median: 2000})
	late := behind
	late.Summary.DurationS = 20 // > 18 s: behind
	errs := point(10, 10, 10, 1, 100)
	errs.Summary.Failed, errs.Summary.Failures = 11, map[runlog.ErrorClass]int{runlog.ErrHTTP5xx: 11}
	cancelled := point(10, 10, 10, 1, 100)
	cancelled.Summary.Failed, cancelled.Summary.Failures = 50, map[runlog.ErrorClass]int{runlog.ErrCancelled: 50}
	tests := []struct {
		name string
		p    Point
		s    Saturation
		want string
	}{
		{"keeps up", behind, Saturation{}, ""},
		{"falls behind", late, Saturation{}, "the server fell behind: the level took 20.0 s where its schedule needs 12.0 s at 10 req/s"},
		{"errors", errs, Saturation{}, "error rate 11.0 % (11 of 100) above 10 %"},
		{"errors allowed", errs, Saturation{MaxErrorRate: 0.2}, ""},
		{"error check off", errs, Saturation{MaxErrorRate: -1}, ""},
		{"cancellations", cancelled, Saturation{}, ""},
		{"stopped", Point{Stopped: "stopped early: x"}, Saturation{}, "stopped early: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Judge(tt.p); got != tt.want {
				t.Errorf("Judge = %q; want %q", got, tt.want)
			}
		})
	}
}

// monotone is a runner whose attainment drops below 99 % above capacity.
func monotone(capacity float64, runs *[]float64) Runner {
	return RunnerFunc(func(_ context.Context, _ int, l runlog.Level) (Point, error) {
		x := AxisRate.Load(l)
		if l.MaxConcurrency > 0 && l.RequestRate == 0 {
			x = float64(l.MaxConcurrency)
		}
		*runs = append(*runs, x)
		att := 1.0
		if x > capacity {
			att = 0.5
		}
		return point(x, x, x*att, att, 100), nil
	})
}

func TestSearch(t *testing.T) {
	tests := []struct {
		name      string
		cfg       SearchConfig
		capacity  float64
		found     bool
		want      float64
		runs      []float64
		note      string
		converged bool
	}{
		{
			// Bracket [1, 33], precision 1: 17 fails, 9 passes, 13 fails, 11
			// fails, 10 fails → [9, 10].
			name: "rate", cfg: SearchConfig{Axis: AxisRate, Lo: 1, Hi: 33, Precision: 1}, capacity: 9.5,
			found: true, want: 9, runs: []float64{1, 33, 17, 9, 13, 11, 10}, converged: true,
		},
		{
			// Default precision (64−1)/32 = 1.96875: 1, 64, 32.5, 16.75,
			// 8.875 (pass), 12.8125, 10.84375 → bracket [8.875, 10.84375],
			// exactly 1.96875 wide.
			name: "default precision", cfg: SearchConfig{Axis: AxisRate, Lo: 1, Hi: 64}, capacity: 10,
			found: true, want: 8.875, runs: []float64{1, 64, 32.5, 16.75, 8.875, 12.8125, 10.84375}, converged: true,
		},
		{
			// Concurrency bisects on whole requests: 1, 64, 32, 16, 24, 20, 18, 17.
			name: "concurrency", cfg: SearchConfig{Axis: AxisConcurrency, Lo: 1, Hi: 64}, capacity: 17,
			found: true, want: 17, runs: []float64{1, 64, 32, 16, 24, 20, 18, 17}, converged: true,
		},
		{name: "lowest fails", cfg: SearchConfig{Axis: AxisRate, Lo: 4, Hi: 8}, capacity: 2,
			runs: []float64{4}, note: "even the lowest load 4 req/s misses the SLO: lower the lowest level"},
		{name: "highest passes", cfg: SearchConfig{Axis: AxisRate, Lo: 4, Hi: 8}, capacity: 20,
			found: true, want: 8, runs: []float64{4, 8}, note: "raise the upper bound"},
		// 513 and 257 both fail; the cap leaves the bracket at [1, 257].
		{name: "run cap", cfg: SearchConfig{Axis: AxisRate, Lo: 1, Hi: 1025, Precision: 1, MaxRuns: 4}, capacity: 100,
			found: true, want: 1, runs: []float64{1, 1025, 513, 257}, note: "stopped after 4 runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []float64
			res, err := Search(context.Background(), monotone(tt.capacity, &runs), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Found != tt.found || res.Capacity != tt.want || res.Converged != tt.converged {
				t.Errorf("Search = found %v capacity %v converged %v; want %v %v %v", res.Found, res.Capacity, res.Converged, tt.found, tt.want, tt.converged)
			}
			if diff := cmp.Diff(tt.runs, runs); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			if !strings.Contains(res.Note, tt.note) {
				t.Errorf("Note = %q; want containing %q", res.Note, tt.note)
			}
			if tt.found && res.Converged && !(res.Hi-res.Lo <= res.Precision && res.Lo <= tt.capacity && res.Hi > tt.capacity) {
				t.Errorf("bracket [%v, %v] (precision %v) does not hold the capacity %v", res.Lo, res.Hi, res.Precision, tt.capacity)
			}
		})
	}
	if _, err := Search(context.Background(), monotone(1, new([]float64)), SearchConfig{Lo: 5, Hi: 5}); err == nil {
		t.Error("Search(lo == hi) succeeded; want an error")
	}
}

func TestByLoadAndAtTop(t *testing.T) {
	// Run order need not be load order; equal loads keep their run order.
	pts := []Point{point(16, 10.5, 2.1, 0.2, 9000), point(2, 2, 2, 1, 100), point(8, 8, 7.9, 0.99, 130), point(4, 4, 4, 1, 110), point(8, 8, 8, 1, 140)}
	res := Analyze(pts, Config{Axis: AxisRate})
	if diff := cmp.Diff([]int{1, 3, 2, 4, 0}, res.ByLoad()); diff != "" {
		t.Errorf("ByLoad (-want +got):\n%s", diff)
	}
	if res.AtTop(res.ThroughputPeak) {
		t.Errorf("AtTop(throughput peak at 16) = true with level 0 saturated; want false")
	}
	// No level saturated: the peak at the highest load is at the top.
	below := Analyze([]Point{point(2, 2, 2, 1, 100), point(4, 4, 4, 1, 110), point(8, 8, 8, 1, 130), point(16, 16, 16, 1, 900)}, Config{Axis: AxisRate})
	if !below.CapacityAbove || !below.AtTop(below.GoodputPeak) {
		t.Errorf("CapacityAbove %v, AtTop(goodput peak at 16) = %v; want true, true", below.CapacityAbove, below.AtTop(below.GoodputPeak))
	}
	if got := AxisConcurrency.Step(); got != "added concurrent request" {
		t.Errorf("AxisConcurrency.Step() = %q; want %q", got, "added concurrent request")
	}
	if got, want := (Criteria{}).EffectiveAttainment(), DefaultAttainment; got != want {
		t.Errorf("Criteria{}.EffectiveAttainment() = %v; want %v", got, want)
	}
	if got := (Criteria{Attainment: 0.9}).EffectiveAttainment(); got != 0.9 {
		t.Errorf("Criteria{Attainment: 0.9}.EffectiveAttainment() = %v; want 0.9", got)
	}
}
