package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// handSessions is two sessions of three turns each (ms), plus later, every
// token and end later by lag (the sends stay):
//
//	s1: turn 1 sent 0, visible at 100, 150, ends 150 (prompt 1000); turn 2
//	    sent 650, a hidden tool-call token at 750, ends 800 (prompt 2000,
//	    1000 cached), round 1 sent 1000, visible at 1150, 1200, ends 1200
//	    (prompt 2100, 2000 cached); turn 3 sent 2000, visible at 2300, ends
//	    2400 (prompt 3000, 2100 cached).
//	s2: turn 1 sent 100, visible at 300, ends 350 (prompt 1000); turn 2 sent
//	    850, visible at 1100, ends 1200 (prompt 2000, 1000 cached); turn 3
//	    sent 1700, visible at 2100, ends 2200 (prompt 3000, 2000 cached).
func handSessions(lag int64) []runlog.Record {
	c := func(t int64, visible bool) runlog.Chunk {
		return runlog.Chunk{T: (t + lag) * ms, Tokens: 1, Visible: visible}
	}
	r := func(id, sess string, turn, round int, sent, end int64, prompt, cached int, chunks ...runlog.Chunk) runlog.Record {
		return runlog.Record{ID: id, SessionID: sess, Turn: turn, ToolRound: round, Intended: sent * ms, Sent: sent * ms, End: (end + lag) * ms,
			Chunks: chunks, PromptTokens: prompt, CachedTokens: cached, CompletionTokens: len(chunks), Status: 200}
	}
	return []runlog.Record{
		r("a1", "s1", 1, 0, 0, 150, 1000, 0, c(100, true), c(150, true)),
		r("b1", "s2", 1, 0, 100, 350, 1000, 0, c(300, true)),
		r("a2", "s1", 2, 0, 650, 800, 2000, 1000, c(750, false)),
		r("b2", "s2", 2, 0, 850, 1200, 2000, 1000, c(1100, true)),
		r("a3", "s1", 2, 1, 1000, 1200, 2100, 2000, c(1150, true), c(1200, true)),
		r("b3", "s2", 3, 0, 1700, 2200, 3000, 2000, c(2100, true)),
		r("a4", "s1", 3, 0, 2000, 2400, 3000, 2100, c(2300, true)),
	}
}

// TestSessionsByHand compares the hand-made sessions with themselves 100 ms
// slower. A: durations 2400, 2100 (P50 2250, P95 2100 + 0.95·300 = 2385);
// turn TTFTs 100, 100, 300, 200, 250, 400 (P95 at rank 4.75: 375); session
// TTPs (slowest turn) 500, 400 (P95 495); TTFT slope 100 ms per 1K tokens
// (worked in report's tests); cached share 6100 / 12000. Under ttp:450
// only s2 meets it: 1 of 2 over 2.4 s. B: every duration, TTFT and TTP is
// 100 ms longer (P50 2350, P95 2485, turn TTFT P95 475, session TTP P95
// 595), the slope and the cached share the same; no session meets ttp:450
// (600 and 500), over 2.5 s.
func TestSessionsByHand(t *testing.T) {
	a, b := handSessions(0), handSessions(100)
	slo := stats.SessionSLO{TTP: 450 * time.Millisecond}
	c, err := Compare(Run{Name: "a", Records: a}, Run{Name: "b", Records: b}, Options{SessionSLO: slo, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sessions
	if s == nil {
		t.Fatalf("Compare of two runs with sessions: Sessions = nil; notes %q", c.Notes)
	}
	if s.SLO != "ttp:450" || s.SessionsA != 2 || s.SessionsB != 2 || s.MetA != 1 || s.MetB != 0 {
		t.Errorf("sessions = SLO %q, %d → %d sessions, %d → %d met; want ttp:450, 2 → 2, 1 → 0", s.SLO, s.SessionsA, s.SessionsB, s.MetA, s.MetB)
	}
	for _, tc := range []struct {
		metric, stat string
		a, b         float64
	}{
		{MetricSessionGoodput, "", 1 / 2.4, 0},
		{MetricSessionAttainment, "", 0.5, 0},
		{MetricSessionDuration, "p50", 2250, 2350},
		{MetricSessionDuration, "p95", 2385, 2485},
		{MetricTurnTTFT, "p95", 375, 475},
		{MetricSessionTTP, "p95", 495, 595},
		{MetricTTFTPer1KHistory, "", 100, 100},
		{MetricCachedShare, "", 6100.0 / 12000, 6100.0 / 12000},
	} {
		d, ok := s.Delta(tc.metric, tc.stat)
		if !ok {
			t.Errorf("no %s %s delta", tc.metric, tc.stat)
			continue
		}
		if math.Abs(d.A-tc.a) > 1e-9 || math.Abs(d.B-tc.b) > 1e-9 || math.Abs(d.Diff-(tc.b-tc.a)) > 1e-9 {
			t.Errorf("%s %s = %v → %v (diff %v); want %v → %v", tc.metric, tc.stat, d.A, d.B, d.Diff, tc.a, tc.b)
		}
		if !d.HasCI || d.NA != 2 || d.NB != 2 {
			t.Errorf("%s %s: HasCI %v, n %d, %d; want an interval over 2 and 2 sessions", tc.metric, tc.stat, d.HasCI, d.NA, d.NB)
		}
	}
	if len(s.Deltas) != 8 {
		t.Errorf("%d session deltas; want 8", len(s.Deltas))
	}
	// The figures are the very ones the run's own report shows.
	sa := stats.SummarizeSessions(a, nil, slo, 0)
	if d, _ := s.Delta(MetricTTFTPer1KHistory, ""); math.Abs(d.A-sa.TTFTPer1KHistory) > 1e-9 {
		t.Errorf("TTFT slope A = %v; stats says %v", d.A, sa.TTFTPer1KHistory)
	}
	if d, _ := s.Delta(MetricSessionGoodput, ""); math.Abs(d.A-sa.Goodput) > 1e-12 {
		t.Errorf("session goodput A = %v; stats says %v", d.A, sa.Goodput)
	}
	// Compared with itself, nothing differs and every interval holds 0.
	c, _ = Compare(Run{Records: a}, Run{Records: a}, Options{SessionSLO: slo, Resamples: 200})
	for _, d := range c.Sessions.Deltas {
		if d.Diff != 0 || d.Lo > 0 || d.Hi < 0 || d.Verdict != NoSignificant {
			t.Errorf("A vs A %s %s = diff %v, CI [%v, %v], %s; want 0 within the CI, no significant difference", d.Metric, d.Stat, d.Diff, d.Lo, d.Hi, d.Verdict)
		}
	}
}

// genSessions draws n sessions of turns turns: turn k has a prompt of
// 1000·k tokens (1000·(k−1) of them cached), TTFT 100 + slope·prompt +
// 40·Exp(1) + dTTFT ms, ends 50 ms after its first token; 200 ms of think
// time between turns; sessions start 1 s apart.
func genSessions(seed uint64, n, turns int, slope, dTTFT float64) []runlog.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	var recs []runlog.Record
	for i := range n {
		sent := int64(i) * 1000 * ms
		for k := 1; k <= turns; k++ {
			prompt := 1000 * k
			ttft := int64((100 + slope*float64(prompt) + 40*rng.ExpFloat64() + dTTFT) * float64(ms))
			r := runlog.Record{ID: fmt.Sprintf("%d-%d", i, k), SessionID: fmt.Sprint("s", i), Turn: k, Intended: sent, Sent: sent,
				Chunks: []runlog.Chunk{{T: sent + ttft, Tokens: 1, Visible: true}}, End: sent + ttft + 50*ms,
				PromptTokens: prompt, CachedTokens: 1000 * (k - 1), CompletionTokens: 1, Status: 200}
			recs = append(recs, r)
			sent = r.End + 200*ms
		}
	}
	return recs
}

func TestSessionsVerdicts(t *testing.T) {
	base := genSessions(1, 200, 4, 0.05, 0)
	tests := []struct {
		name string
		b    []runlog.Record
		want map[string]Verdict // metric/stat → verdict
	}{
		{"same draw", genSessions(1, 200, 4, 0.05, 0), map[string]Verdict{
			MetricTurnTTFT + "/p95": NoSignificant, MetricSessionTTP + "/p95": NoSignificant, MetricSessionDuration + "/p50": NoSignificant,
			MetricTTFTPer1KHistory + "/": NoSignificant, MetricCachedShare + "/": NoSignificant}},
		{"another draw", genSessions(2, 200, 4, 0.05, 0), map[string]Verdict{
			MetricTurnTTFT + "/p95": NoSignificant, MetricTTFTPer1KHistory + "/": NoSignificant}},
		// +300 ms on every turn: every latency and duration worse, the
		// slope the same.
		{"slower turns", genSessions(2, 200, 4, 0.05, 300), map[string]Verdict{
			MetricTurnTTFT + "/p95": Worse, MetricSessionTTP + "/p95": Worse, MetricSessionDuration + "/p50": Worse,
			MetricSessionDuration + "/p95": Worse, MetricTTFTPer1KHistory + "/": NoSignificant}},
		// TTFT grows 25 rather than 50 ms per 1K tokens of history.
		{"flatter history", genSessions(2, 200, 4, 0.025, 0), map[string]Verdict{
			MetricTTFTPer1KHistory + "/": Better, MetricSessionTTP + "/p95": Better}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compare(Run{Name: "a", Records: base}, Run{Name: "b", Records: tt.b}, Options{Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			if c.Sessions == nil {
				t.Fatal("Sessions = nil")
			}
			for key, want := range tt.want {
				m, st, _ := strings.Cut(key, "/")
				d, ok := c.Sessions.Delta(m, st)
				if !ok {
					t.Errorf("no %s delta", key)
					continue
				}
				if d.Verdict != want {
					t.Errorf("%s: %v → %v, CI [%v, %v], %s; want %s", key, d.A, d.B, d.Lo, d.Hi, d.Verdict, want)
				}
			}
			if _, ok := c.Sessions.Delta(MetricSessionGoodput, ""); ok {
				t.Error("session goodput compared without a session SLO")
			}
			if !strings.Contains(strings.Join(c.Notes, "\n"), "no session SLO given or stored") {
				t.Errorf("notes = %q; want the no-session-SLO note", c.Notes)
			}
		})
	}
	// Slower turns miss a session SLO more often: attainment and goodput
	// worse, and the user's view says so.
	slo := stats.SessionSLO{TTP: 400 * time.Millisecond}
	c, err := Compare(Run{Records: base}, Run{Records: genSessions(2, 200, 4, 0.05, 150)}, Options{SessionSLO: slo, Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	att, _ := c.Sessions.Delta(MetricSessionAttainment, "")
	gp, _ := c.Sessions.Delta(MetricSessionGoodput, "")
	if att.Verdict != Worse || gp.Verdict != Worse {
		t.Errorf("under ttp:400 with +150 ms turns: attainment %v → %v %s, goodput %v → %v %s; want both worse", att.A, att.B, att.Verdict, gp.A, gp.B, gp.Verdict)
	}
	view := strings.Join(c.UserView, "\n")
	for _, w := range []string{"In sessions, the slowest turn's wait for a visible answer (P95 over sessions) goes from",
		"Under the session SLO ttp:400", "a significant change in how many sessions get the service promised"} {
		if !strings.Contains(view, w) {
			t.Errorf("user view lacks %q:\n%s", w, view)
		}
	}
}

func TestSessionsOneSided(t *testing.T) {
	sess, plain := handSessions(0), sampleRun(1, 20, 0, 0, 3)
	figs := &Figures{Requests: 10, Metrics: map[string]MetricFigures{}}
	tests := []struct {
		name string
		a, b Run
		note string
	}{
		{"only A", Run{Name: "a.jsonl", Records: sess}, Run{Name: "b.jsonl", Records: plain}, "only a.jsonl has sessions (2): session metrics not compared"},
		{"only B", Run{Name: "a.jsonl", Records: plain}, Run{Name: "b.jsonl", Records: sess}, "only b.jsonl has sessions (2): session metrics not compared"},
		{"B a summary", Run{Name: "a.jsonl", Records: sess}, Run{Name: "b.json", Figures: figs}, "sessions not compared: b.json is a summary without its sessions' records"},
		{"neither", Run{Records: plain}, Run{Records: plain}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compare(tt.a, tt.b, Options{Resamples: 100})
			if err != nil {
				t.Fatal(err)
			}
			if c.Sessions != nil {
				t.Errorf("Sessions = %+v; want nil", c.Sessions)
			}
			notes := strings.Join(c.Notes, "\n")
			if tt.note != "" && !strings.Contains(notes, tt.note) {
				t.Errorf("notes = %q; want %q", c.Notes, tt.note)
			}
			if tt.note == "" && strings.Contains(notes, "session") {
				t.Errorf("notes = %q; want none about sessions", c.Notes)
			}
		})
	}
}

func TestSessionSLOStored(t *testing.T) {
	meta := func(slo string) *runlog.Meta { return &runlog.Meta{Analysis: &runlog.Analysis{SessionSLO: slo}} }
	a, b := handSessions(0), handSessions(100)
	c, err := Compare(Run{Records: a, Meta: meta("ttp:450")}, Run{Records: b, Meta: meta("ttp:450")}, Options{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sessions.SLO != "ttp:450" || c.Sessions.MetA != 1 {
		t.Errorf("stored SLO: sessions SLO %q, %d met in A; want ttp:450, 1", c.Sessions.SLO, c.Sessions.MetA)
	}
	c, _ = Compare(Run{Records: a, Meta: meta("ttp:450")}, Run{Records: b, Meta: meta("ttp:900")}, Options{Resamples: 100})
	if c.Sessions.SLO != "" || !strings.Contains(strings.Join(c.Notes, "\n"), `different session SLOs ("ttp:450" vs "ttp:900")`) {
		t.Errorf("differing stored SLOs: SLO %q, notes %q; want none and a note", c.Sessions.SLO, c.Notes)
	}
	// The option overrides what was stored.
	c, _ = Compare(Run{Records: a, Meta: meta("ttp:450")}, Run{Records: b, Meta: meta("ttp:900")},
		Options{Resamples: 100, SessionSLO: stats.SessionSLO{TTP: time.Second}})
	if c.Sessions.SLO != "ttp:1000" || c.Sessions.MetB != 2 {
		t.Errorf("--session SLO option: SLO %q, %d met in B; want ttp:1000, 2", c.Sessions.SLO, c.Sessions.MetB)
	}
}
