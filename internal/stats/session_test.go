package stats

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarizeSessions(t *testing.T) {
	slo, err := ParseSessionSLO("ttp:500 turn_ttft_p95:300 duration:2000")
	if err != nil {
		t.Fatal(err)
	}
	s := SummarizeSessions(runlogtest.Sessions(), nil, slo, 0)
	if s.Sessions != 2 || s.Completed != 1 || s.Failed != 1 || s.Met != 1 || !near(s.Attainment, 0.5) {
		t.Errorf("sessions %d completed %d failed %d met %d attainment %v; want 2, 1, 1, 1, 0.5", s.Sessions, s.Completed, s.Failed, s.Met, s.Attainment)
	}
	if !near(s.Span, 1.75) || !near(s.Goodput, 1/1.75) {
		t.Errorf("span %v s, goodput %v; want 1.75 s and %v sessions/s", s.Span, s.Goodput, 1/1.75)
	}
	a := s.PerSession[0]
	if a.ID != "A" || a.Turns != 2 || a.ToolRounds != 1 || a.Model != 550*time.Millisecond || a.Tool != 200*time.Millisecond ||
		a.Think != 1000*time.Millisecond || !near(a.DurationMs, 1750) || !near(a.MaxTurnTTPMs, 450) || !near(a.TurnTTFTP95Ms, 195) {
		t.Errorf("session A = %+v", a)
	}
	if len(s.Turns) != 2 {
		t.Fatalf("turns = %+v; want 2", s.Turns)
	}
	t1, t2 := s.Turns[0], s.Turns[1]
	if t1.N != 2 || t1.TTFT.N != 1 || !near(t1.TTFT.Median, 100) || !near(t1.TTP.Median, 450) || t1.CachedShare != 0 {
		t.Errorf("turn 1 = n %d, TTFT %+v, TTP %+v, cached %v", t1.N, t1.TTFT, t1.TTP, t1.CachedShare)
	}
	// Turn E2E: A's turn 1 from its send at 0 to its tool round's end at
	// 500 ms; B's failed turn 1 has none; A's turn 2 1500 → 1750 ms.
	if t1.E2E.N != 1 || !near(t1.E2E.Median, 500) || t2.E2E.N != 1 || !near(t2.E2E.Median, 250) {
		t.Errorf("turn E2E %+v, %+v; want 500 ms (A only) and 250 ms", t1.E2E, t2.E2E)
	}
	if t2.N != 1 || !near(t2.TTFT.Median, 200) || !near(t2.TTP.Median, 200) || !near(t2.CachedShare, 0.55) {
		t.Errorf("turn 2 = n %d, TTFT %+v, TTP %+v, cached %v", t2.N, t2.TTFT, t2.TTP, t2.CachedShare)
	}
	if !near(s.TTFTPer1KHistory, 100) {
		t.Errorf("TTFT per 1K history = %v; want 100 ms", s.TTFTPer1KHistory)
	}
	if !near(s.ModelShare, 600.0/1800) || !near(s.ToolShare, 200.0/1800) || !near(s.ThinkShare, 1000.0/1800) {
		t.Errorf("shares model %v tool %v think %v", s.ModelShare, s.ToolShare, s.ThinkShare)
	}
	if !near(s.TurnTTFT.Median, 150) || s.TurnTTFT.N != 2 {
		t.Errorf("turn TTFT %+v; want A's 100 and 200 ms (B's failed turn has none)", s.TurnTTFT)
	}
	if !near(s.Duration.Median, 900) || !near(s.TurnsPerSession.Mean, 1.5) {
		t.Errorf("duration median %v, turns mean %v; want 900 ms and 1.5", s.Duration.Median, s.TurnsPerSession.Mean)
	}
	// Each constraint alone decides: a tighter TTP bound fails A too.
	if s := SummarizeSessions(runlogtest.Sessions(), nil, SessionSLO{TTP: 400 * time.Millisecond}, 0); s.Met != 0 {
		t.Errorf("ttp:400 met %d sessions; want 0 (A's turn 1 took 450 ms to publish)", s.Met)
	}
	if s := SummarizeSessions(runlogtest.Sessions(), nil, SessionSLO{}, 0); s.Met != 0 || s.Goodput != 0 {
		t.Errorf("no SLO: met %d, goodput %v; want none judged", s.Met, s.Goodput)
	}
}

func TestParseSessionSLO(t *testing.T) {
	s, err := ParseSessionSLO("ttp:2000, turn_ttft_p95:800 duration:60000")
	if err != nil || s != (SessionSLO{TTP: 2 * time.Second, TurnTTFTP95: 800 * time.Millisecond, Duration: time.Minute}) {
		t.Fatalf("ParseSessionSLO = %+v, %v", s, err)
	}
	if got := s.String(); got != "ttp:2000 turn_ttft_p95:800 duration:60000" {
		t.Errorf("String = %q", got)
	}
	for _, bad := range []string{"ttp", "ttft:5", "ttp:-1", "ttp:x", "duration:inf"} {
		if _, err := ParseSessionSLO(bad); err == nil || !strings.Contains(err.Error(), "session slo") {
			t.Errorf("ParseSessionSLO(%q) = %v; want an error naming the pair", bad, err)
		}
	}
}

func FuzzParseSessionSLO(f *testing.F) {
	f.Add("ttp:2000 turn_ttft_p95:800 duration:60000")
	f.Add("ttp:1e400")
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSessionSLO(s)
		if err != nil {
			return
		}
		again, err := ParseSessionSLO(slo.String())
		if err != nil || again != slo {
			t.Errorf("round trip of %q: %+v → %q → %+v, %v", s, slo, slo.String(), again, err)
		}
	})
}

func TestLinearFit(t *testing.T) {
	for _, tc := range []struct {
		xs, ys []float64
		a, b   float64
	}{
		{[]float64{0, 1, 2}, []float64{1, 3, 5}, 1, 2},           // y = 1 + 2x exactly
		{[]float64{0, 2}, []float64{0, 1}, 0, 0.5},               // two points
		{[]float64{1, 1, 1}, []float64{2, 4, 6}, 4, 0},           // xs do not vary: the mean
		{[]float64{0, 1, 2, 3}, []float64{0, 2, 2, 4}, 0.2, 1.2}, // mean x 1.5, y 2; sxy 6, sxx 5
		{nil, nil, 0, 0},
	} {
		a, b := LinearFit(tc.xs, tc.ys)
		if !near(a, tc.a) || !near(b, tc.b) {
			t.Errorf("LinearFit(%v, %v) = %v, %v; want %v, %v", tc.xs, tc.ys, a, b, tc.a, tc.b)
		}
	}
}

// TestSlopeIntervalByHand: through (0,0), (1,1), (2,3) the slope is 1.5
// (Σ(x−x̄)(y−ȳ) = 3 over Σ(x−x̄)² = 2), the residuals 1/6, −1/3, 1/6 sum
// to 1/6 squared, so SE = √(1/6 / 1 / 2) = 0.288675, and t(1) at 97.5 %
// is 12.7062: 1.5 ± 3.66799.
func TestSlopeIntervalByHand(t *testing.T) {
	iv, ok := SlopeInterval([]float64{0, 1, 2}, []float64{0, 1, 3}, 0.95)
	if !ok || math.Abs(iv.Lo-(1.5-3.66799)) > 1e-4 || math.Abs(iv.Hi-(1.5+3.66799)) > 1e-4 || iv.Level != 0.95 {
		t.Errorf("SlopeInterval = %+v, %v; want [-2.16799, 5.16799] at 0.95", iv, ok)
	}
	for _, tt := range []struct {
		name   string
		xs, ys []float64
		level  float64
	}{
		{"two points", []float64{0, 1}, []float64{0, 1}, 0.95},
		{"flat x", []float64{1, 1, 1}, []float64{0, 1, 2}, 0.95},
		{"no level", []float64{0, 1, 2}, []float64{0, 1, 3}, 0},
	} {
		if iv, ok := SlopeInterval(tt.xs, tt.ys, tt.level); ok || iv.OK() {
			t.Errorf("%s: SlopeInterval = %+v; want none", tt.name, iv)
		}
	}
}

// TestSessionIntervals: at 95 % every session figure that can carry an
// interval brackets itself, attainment's is Wilson's over the sessions,
// and at level 0 there is none.
func TestSessionIntervals(t *testing.T) {
	var recs []runlog.Record
	const ms = int64(time.Millisecond)
	for i := range 200 {
		at := int64(i) * 500 * ms
		ttft := int64(80 + (i*37)%50)
		id := strconv.Itoa(i)
		recs = append(recs, runlog.Record{ID: id, SessionID: id, Turn: 1, Sent: at, End: at + 400*ms, PromptTokens: 1000 + i, Status: 200,
			Chunks: []runlog.Chunk{{T: at + ttft*ms, Tokens: 1, Visible: true}}})
	}
	slo := SessionSLO{TTP: 110 * time.Millisecond}
	s := SummarizeSessions(recs, []float64{50, 99}, slo, 0.95)
	for _, m := range []MetricSummary{s.Duration, s.TurnTTFT, s.TurnTTP, s.Turns[0].TTFT, s.Turns[0].E2E} {
		if !m.MeanCI.Contains(m.Mean) || !m.MedianCI.Contains(m.Median) || !m.PCI(50).Contains(m.Median) {
			t.Errorf("%s: mean %g %+v, median %g %+v: want intervals that bracket them", m.Name, m.Mean, m.MeanCI, m.Median, m.MedianCI)
		}
	}
	if w, _ := WilsonInterval(s.Attainment, 200, 0.95); s.AttainmentCI != w || !w.Contains(s.Attainment) {
		t.Errorf("attainment %g interval %+v; want Wilson's %+v", s.Attainment, s.AttainmentCI, w)
	}
	if per := 200 / s.Span; math.Abs(s.GoodputCI.Lo-s.AttainmentCI.Lo*per) > 1e-12 || !s.GoodputCI.Contains(s.Goodput) {
		t.Errorf("goodput %g interval %+v; want attainment's times %g sessions/s", s.Goodput, s.GoodputCI, per)
	}
	off := SummarizeSessions(recs, []float64{50, 99}, slo, 0)
	if off.Duration.MeanCI.OK() || off.AttainmentCI.OK() || off.GoodputCI.OK() || off.TTFTPer1KHistoryCI.OK() || off.Turns[0].TTFT.PCI(50).OK() {
		t.Errorf("intervals at level 0: %+v", off)
	}
}
