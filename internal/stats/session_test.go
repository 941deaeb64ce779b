package stats

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog/runlogtest"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarizeSessions(t *testing.T) {
	slo, err := ParseSessionSLO("ttp:500 turn_ttft_p95:300 duration:2000")
	if err != nil {
		t.Fatal(err)
	}
	s := SummarizeSessions(runlogtest.Sessions(), nil, slo)
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
	if s := SummarizeSessions(runlogtest.Sessions(), nil, SessionSLO{TTP: 400 * time.Millisecond}); s.Met != 0 {
		t.Errorf("ttp:400 met %d sessions; want 0 (A's turn 1 took 450 ms to publish)", s.Met)
	}
	if s := SummarizeSessions(runlogtest.Sessions(), nil, SessionSLO{}); s.Met != 0 || s.Goodput != 0 {
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
