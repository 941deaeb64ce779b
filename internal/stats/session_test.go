package stats

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// Two sessions worked by hand (times in ms):
//
//	A turn 1: r1 sent 0, a hidden tool-call token at 100, ends 150 (prompt
//	          1000); the tool takes 200 ms; r2 (tool round 1) sent 350,
//	          visible tokens at 450 and 500, ends 500 (prompt 1100, 1000
//	          cached).
//	A turn 2: after 1000 ms of think time, r3 intended and sent 1500,
//	          visible at 1700 and 1750, ends 1750 (prompt 2000, 1100 cached).
//	B turn 1: r4 sent 200, fails with HTTP 500 at 250.
//
// A: turn TTFTs 100, 200 (P95 195); turn TTPs 450, 200; model 150+150+250 =
// 550, tool 200, think 1000; duration 1750. B failed. Over both: span 0 →
// 1750 ms; model time 550 + B's 50 = 600 of 1800 ms in all; turn 1 TTFT
// [100], turn 2 [200] at prompts 1000 and 2000: 100 ms of TTFT per 1K
// tokens of history.
func sessionRecords() []runlog.Record {
	c := func(t int64, visible bool) runlog.Chunk { return runlog.Chunk{T: t * ms, Tokens: 1, Visible: visible} }
	return []runlog.Record{
		{ID: "r1", SessionID: "A", Turn: 1, Sent: 0, End: 150 * ms, Chunks: []runlog.Chunk{c(100, false)}, PromptTokens: 1000, Status: 200},
		{ID: "r4", SessionID: "B", Turn: 1, Intended: 200 * ms, Sent: 200 * ms, End: 250 * ms, Status: 500, ErrorClass: runlog.ErrHTTP5xx},
		{ID: "r2", SessionID: "A", Turn: 1, ToolRound: 1, Intended: 350 * ms, Sent: 350 * ms, End: 500 * ms,
			Chunks: []runlog.Chunk{c(450, true), c(500, true)}, PromptTokens: 1100, CachedTokens: 1000, Status: 200},
		{ID: "r3", SessionID: "A", Turn: 2, Intended: 1500 * ms, Sent: 1500 * ms, End: 1750 * ms,
			Chunks: []runlog.Chunk{c(1700, true), c(1750, true)}, PromptTokens: 2000, CachedTokens: 1100, Status: 200},
		{ID: "plain", Sent: 0, End: 10 * ms, Status: 200}, // not in a session: ignored
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarizeSessions(t *testing.T) {
	slo, err := ParseSessionSLO("ttp:500 turn_ttft_p95:300 duration:2000")
	if err != nil {
		t.Fatal(err)
	}
	s := SummarizeSessions(sessionRecords(), nil, slo)
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
	if t2.N != 1 || !near(t2.TTFT.Median, 200) || !near(t2.TTP.Median, 200) || !near(t2.CachedShare, 0.55) {
		t.Errorf("turn 2 = n %d, TTFT %+v, TTP %+v, cached %v", t2.N, t2.TTFT, t2.TTP, t2.CachedShare)
	}
	if !near(s.TTFTPer1KHistory, 100) {
		t.Errorf("TTFT per 1K history = %v; want 100 ms", s.TTFTPer1KHistory)
	}
	if !near(s.ModelShare, 600.0/1800) || !near(s.ToolShare, 200.0/1800) || !near(s.ThinkShare, 1000.0/1800) {
		t.Errorf("shares model %v tool %v think %v", s.ModelShare, s.ToolShare, s.ThinkShare)
	}
	if !near(s.Duration.Median, 900) || !near(s.TurnsPerSession.Mean, 1.5) {
		t.Errorf("duration median %v, turns mean %v; want 900 ms and 1.5", s.Duration.Median, s.TurnsPerSession.Mean)
	}
	// Each constraint alone decides: a tighter TTP bound fails A too.
	if s := SummarizeSessions(sessionRecords(), nil, SessionSLO{TTP: 400 * time.Millisecond}); s.Met != 0 {
		t.Errorf("ttp:400 met %d sessions; want 0 (A's turn 1 took 450 ms to publish)", s.Met)
	}
	if s := SummarizeSessions(sessionRecords(), nil, SessionSLO{}); s.Met != 0 || s.Goodput != 0 {
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
