package findings

import (
	"slices"
	"strconv"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

func med(v float64) stats.MetricSummary { return stats.MetricSummary{N: 4, Median: v} }

func byRule(fs []Finding) map[string]Finding {
	m := map[string]Finding{}
	for _, f := range fs {
		m[f.ID] = f
	}
	return m
}

func TestSessionRules(t *testing.T) {
	// TTFT 100 → 300 ms from turn 1 to turn 5 at 50 ms per 1K tokens, the
	// last prompt 5,000 tokens of which the first turn's 1,000 are the only
	// part not resent: 80 % cacheable, 10 % served from the cache.
	grow := &stats.SessionSummary{Sessions: 4, TTFTPer1KHistory: 50, ModelShare: 0.2, ToolShare: 0.3, ThinkShare: 0.5,
		Turns: []stats.TurnSummary{
			{Turn: 1, TTFT: med(100), Prompt: med(1000)},
			{Turn: 5, TTFT: med(300), Prompt: med(5000), CachedShare: 0.1},
		},
		TurnTTP:  stats.MetricSummary{N: 3, Median: 900},
		TurnTTFT: stats.MetricSummary{N: 3, Median: 110},
	}
	got := byRule(Sessions(grow))
	h, ok := got["history-growth"]
	if !ok || h.Evidence["last_turn_cacheable_pct"] != 80.0 || h.Evidence["last_turn_cached_pct"] != 10.0 || h.Evidence["last_turn"] != 5 {
		t.Errorf("history-growth = %+v", h)
	}
	// Tools 0.3 of 0.5 working time: 60 %.
	if tl, ok := got["tool-time-dominates"]; !ok || tl.Evidence["tool_share_of_work_pct"] != 60.0 {
		t.Errorf("tool-time-dominates = %+v", tl)
	}
	// Turn TTP P50 900 ms against turn TTFT P50 110 ms.
	if p, ok := got["publish-far-after-first-token"]; !ok || p.Evidence["turn_ttft_p50_ms"] != 110.0 {
		t.Errorf("publish-far-after-first-token = %+v", p)
	}

	flat := &stats.SessionSummary{Sessions: 4, TTFTPer1KHistory: 5, ModelShare: 0.9, ToolShare: 0.05,
		Turns:    []stats.TurnSummary{{Turn: 1, TTFT: med(100), Prompt: med(1000)}, {Turn: 5, TTFT: med(120), Prompt: med(5000)}},
		TurnTTP:  stats.MetricSummary{N: 2, Median: 130},
		TurnTTFT: stats.MetricSummary{N: 2, Median: 110},
	}
	if fs := Sessions(flat); len(fs) != 0 {
		t.Errorf("flat sessions: %v; want no finding", fs)
	}
	if Sessions(nil) != nil || Sessions(&stats.SessionSummary{}) != nil {
		t.Error("no sessions: want no findings")
	}
}

// turnRec is turn turn of session sid as one request: prompt, completion
// (reasoning of it hidden) and cached tokens, history_dropped dropped.
func turnRec(sid string, turn, prompt, completion, reasoning, cached, dropped int) runlog.Record {
	return runlog.Record{SessionID: sid, Turn: turn, Status: 200, TokenSource: runlog.TokensUsage,
		PromptTokens: prompt, CompletionTokens: completion, ReasoningTokens: reasoning, CachedTokens: cached, HistoryDropped: dropped}
}

func TestHistoryPrefix(t *testing.T) {
	// Session a by hand:
	//   turn 1: prompt 1000, completion 300 of which 100 reasoning: the
	//           answer resent is 200 tokens;
	//   turn 2: prompt 1500 (1000 + 200 + a 300-token message), 1000
	//           cached; prefix min(1000 + 200, 1500) = 1200; answer 500;
	//   turn 3: prompt 2500 (1500 + 500 + 500), 1500 cached; prefix
	//           min(1500 + 500, 2500) = 2000.
	// Turns 2–3: prompt 4000, prefix 3200 (implied 80 %), cached 2500
	// (measured 62.5 %), missing (1200 − 1000) + (2000 − 1500) = 700.
	a := []runlog.Record{
		turnRec("a", 1, 1000, 300, 100, 0, 0),
		turnRec("a", 2, 1500, 500, 0, 1000, 0),
		turnRec("a", 3, 2500, 40, 0, 1500, 0),
	}
	handA := historyShares{turns: 2, prompt: 4000, cached: 2500, prefix: 3200, missing: 700}
	with := func(more ...runlog.Record) []runlog.Record { return append(slices.Clone(a), more...) }
	tests := []struct {
		name string
		recs []runlog.Record
		want historyShares
	}{
		{"three turns", a, handA},
		// Turn 3 shuffled first: order in the file does not matter.
		{"any order", []runlog.Record{a[2], a[0], a[1]}, handA},
		// b's turn 3 dropped one turn of history that turn 2 kept: skipped.
		// b's turn 2: prompt 1200, prefix min(1000 + 150, 1200) = 1150,
		// nothing cached.
		{"history dropped changed", with(
			turnRec("b", 1, 1000, 150, 0, 0, 0),
			turnRec("b", 2, 1200, 100, 0, 0, 0),
			turnRec("b", 3, 900, 100, 0, 0, 1),
		), historyShares{turns: 3, cut: 1, prompt: 5200, cached: 2500, prefix: 4350, missing: 1850}},
		// c cut the same one turn from both: the prefix holds. Turn 2 of
		// c: prompt 800, prefix min(600 + 100, 800) = 700, 700 cached.
		{"history dropped unchanged", with(
			turnRec("c", 1, 600, 100, 0, 0, 1),
			turnRec("c", 2, 800, 100, 0, 700, 1),
		), historyShares{turns: 3, prompt: 4800, cached: 3200, prefix: 3900, missing: 700}},
		// d recorded a longer answer than the turn resends: the prefix is
		// capped at turn 2's prompt, 1100; a cached count above the
		// prompt is capped too.
		{"prefix capped at prompt", with(
			turnRec("d", 1, 1000, 900, 0, 0, 0),
			turnRec("d", 2, 1100, 10, 0, 1200, 0),
		), historyShares{turns: 3, prompt: 5100, cached: 3600, prefix: 4300, missing: 700}},
		// e's turn 1 ended with a tool round: its last request (prompt
		// 1300, answer 100) is the prefix of turn 2, prefix 1400, cached
		// 1300; f's turn 1 is missing; g's turn 1 failed; h's turn 2
		// counted its tokens (cached unknown); warm-ups and requests
		// outside sessions do not count.
		{"not comparable", with(
			turnRec("e", 1, 1000, 20, 0, 0, 0),
			func() runlog.Record { r := turnRec("e", 1, 1300, 100, 0, 1000, 0); r.ToolRound = 1; return r }(),
			turnRec("e", 2, 1600, 100, 0, 1300, 0),
			turnRec("f", 2, 1600, 100, 0, 0, 0),
			func() runlog.Record {
				r := turnRec("g", 1, 1000, 0, 0, 0, 0)
				r.ErrorClass = runlog.ErrHTTP5xx
				return r
			}(),
			turnRec("g", 2, 1600, 100, 0, 0, 0),
			turnRec("h", 1, 1000, 100, 0, 0, 0),
			func() runlog.Record {
				r := turnRec("h", 2, 1600, 100, 0, 0, 0)
				r.TokenSource = runlog.TokensCounted
				return r
			}(),
			func() runlog.Record { r := turnRec("a", 4, 3000, 0, 0, 0, 0); r.Warmup = true; return r }(),
			runlog.Record{Turn: 2, PromptTokens: 5000, Status: 200},
		), historyShares{turns: 3, prompt: 5600, cached: 3800, prefix: 4600, missing: 800}},
		{"no sessions", nil, historyShares{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := historyPrefix(tt.recs); got != tt.want {
				t.Errorf("historyPrefix = %+v; want %+v", got, tt.want)
			}
		})
	}
	if h := historyPrefix(a); h.implied() != 0.8 || h.measured() != 0.625 {
		t.Errorf("implied, measured = %v, %v; want 0.8, 0.625", h.implied(), h.measured())
	}
	if h := (historyShares{}); h.implied() != 0 || h.measured() != 0 {
		t.Errorf("no turns: implied, measured = %v, %v; want 0, 0", h.implied(), h.measured())
	}
}

// conversations is n sessions of 4 turns, each turn adding a 300-token
// answer and a 300-token message to the history: turn k's prompt is 1000
// + 600(k−1) tokens, its first token after 100 ms + msPer1K per 1,000
// prompt tokens, cached(k, prefix) of it from the cache, where prefix is
// what the history makes cacheable (turn k's prompt − 300).
func conversations(n int, msPer1K float64, cached func(turn, prefix int) int) []runlog.Record {
	var recs []runlog.Record
	for s := range n {
		for k := 1; k <= 4; k++ {
			prompt := 1000 + 600*(k-1)
			r := turnRec(strconv.Itoa(s), k, prompt, 300, 0, cached(k, prompt-300), 0)
			r.Sent = int64(s)*100_000*ms + int64(k)*10_000*ms
			ttft := int64((100 + msPer1K*float64(prompt)/1000) * float64(ms))
			r.Chunks = []runlog.Chunk{{T: r.Sent + ttft, Tokens: 300, Visible: true}}
			r.End = r.Sent + ttft
			recs = append(recs, r)
		}
	}
	return recs
}

func TestHistoryNotCached(t *testing.T) {
	none := func(int, int) int { return 0 }
	system := func(k, _ int) int { // a 200-token system prompt shared by every session
		if k == 1 {
			return 0
		}
		return 200
	}
	full := func(k, prefix int) int {
		if k == 1 {
			return 0
		}
		return prefix
	}
	// Turns 2–4 of each session: prompts 1600 + 2200 + 2800 = 6600,
	// prefixes 1300 + 1900 + 2500 = 5700 (86.36 %).
	tests := []struct {
		name     string
		recs     []runlog.Record
		want     string // the history finding's id, "" for none
		severity Severity
		evidence map[string]any // the figures to check
	}{
		// Only the system prompt cached: 600 of 6600 (9.09 %); missing
		// (1100 + 1700 + 2300) / 3 = 1700 tokens a turn, at 50 ms per 1K
		// 85 ms of TTFT.
		{"system prompt only cached", conversations(6, 50, system), "history-not-cached", Warning, map[string]any{
			"cached_pct": 9.09, "history_cacheable_pct": 86.36, "missing_cached_tokens_per_turn": 1700.0,
			"ttft_ms_per_1k_history": 50.0, "ttft_cost_per_turn_ms": 85.0, "turns_compared": 18, "turns_skipped_history_cut": 0}},
		// The cache serves the history and TTFT still grows: history-growth
		// stands, with the measured and implied shares.
		{"prefix cache works", conversations(6, 50, full), "history-growth", Warning, map[string]any{
			"cached_pct": 86.36, "history_cacheable_pct": 86.36, "turns_compared": 18}},
		// 60 % of the possible share (51.8 %) is not "far below".
		{"cache serves most", conversations(6, 50, func(k, p int) int { return full(k, p) * 6 / 10 }), "history-growth", Warning, map[string]any{
			"cached_pct": 51.82}},
		// Flat TTFT and a cache missing the history: a diagnosis, no more.
		{"flat ttft", conversations(6, 0, system), "history-not-cached", Info, map[string]any{
			"cached_pct": 9.09, "ttft_cost_per_turn_ms": 0.0}},
		// Nothing cached at all with TTFT growing: still a miss.
		{"nothing cached, ttft grows", conversations(6, 50, none), "history-not-cached", Warning, map[string]any{
			"cached_pct": 0.0, "ttft_cost_per_turn_ms": 95.0}},
		// Nothing cached and flat TTFT: as likely a server that does not
		// report cached tokens.
		{"nothing cached, flat ttft", conversations(6, 0, none), "", "", nil},
		// One session has 3 turns to compare, fewer than the 5 needed.
		{"too few turns", conversations(1, 50, system), "history-growth", Warning, map[string]any{"last_turn_cacheable_pct": 64.29}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stats.SummarizeSessions(tt.recs, nil, stats.SessionSLO{}, 0)
			got := byRule(SessionsWithRecords(&s, tt.recs))
			_, miss := got["history-not-cached"]
			_, growth := got["history-growth"]
			if miss && growth {
				t.Fatalf("both history-not-cached and history-growth: %v", got)
			}
			if tt.want == "" {
				if miss || growth {
					t.Fatalf("findings = %v; want no history finding", got)
				}
				return
			}
			f, ok := got[tt.want]
			if !ok {
				t.Fatalf("findings = %v; want %s", got, tt.want)
			}
			if f.Severity != tt.severity {
				t.Errorf("%s severity = %s; want %s", tt.want, f.Severity, tt.severity)
			}
			for k, v := range tt.evidence {
				if f.Evidence[k] != v {
					t.Errorf("%s evidence %s = %v (%T); want %v (%T)", tt.want, k, f.Evidence[k], f.Evidence[k], v, v)
				}
			}
		})
	}
}

func TestHistoryNotCachedSkipsDroppedHistory(t *testing.T) {
	// As "system prompt only cached", but every turn from 2 on cuts one
	// more turn of history than the turn before: no prefix survives, no
	// turn is compared, and without the comparison the summary's
	// history-growth speaks.
	recs := conversations(6, 50, func(k, _ int) int { return 200 * min(k-1, 1) })
	for i := range recs {
		recs[i].HistoryDropped = recs[i].Turn - 1
	}
	if h := historyPrefix(recs); h.turns != 0 || h.cut != 18 {
		t.Fatalf("historyPrefix = %+v; want 0 turns compared, 18 cut", h)
	}
	s := stats.SummarizeSessions(recs, nil, stats.SessionSLO{}, 0)
	got := byRule(SessionsWithRecords(&s, recs))
	if _, ok := got["history-not-cached"]; ok {
		t.Errorf("history-not-cached fired on turns with their history cut: %v", got)
	}
	if _, ok := got["history-growth"]; !ok {
		t.Errorf("findings = %v; want history-growth", got)
	}
}

// curve is a session summary of n sessions reaching every turn, with
// those turns' TTFT P50s, ms, and prompts of 1,000 tokens a turn.
func curve(n int, ttfts ...float64) *stats.SessionSummary {
	s := &stats.SessionSummary{Sessions: n}
	for i, v := range ttfts {
		s.Turns = append(s.Turns, stats.TurnSummary{Turn: i + 1, N: n, TTFT: stats.MetricSummary{N: n, Median: v},
			Prompt: stats.MetricSummary{N: n, Median: float64(1000 * (i + 1))}})
	}
	return s
}

func TestTurnKnee(t *testing.T) {
	tests := []struct {
		name string
		s    *stats.SessionSummary
		want map[string]any // nil: no knee
	}{
		// Flat at 200 ms to turn 4, then +200 ms a turn: turn 5 is 2× the
		// 200 ms the line extrapolates.
		{"flat then steep", curve(8, 200, 200, 200, 200, 400, 600, 800), map[string]any{
			"knee_turn": 4, "next_turn_ttft_p50_ms": 400.0, "next_turn_extrapolated_ms": 200.0, "ms_per_turn_before": 0.0,
			"ms_per_turn_after": 200.0, "next_turn_prompt_p50_tokens": 5000.0, "sessions_at_last_turn": 8,
			"turn_ttft_p50_ms": "1:200 2:200 3:200 4:200 5:400 6:600 7:800"}},
		// +50 ms a turn to turn 4 (250 ms), then +250: the line says 300
		// at turn 5, which is 500.
		{"linear then steep", curve(5, 100, 150, 200, 250, 500, 750, 1000), map[string]any{
			"knee_turn": 4, "next_turn_extrapolated_ms": 300.0, "ms_per_turn_before": 50.0, "ms_per_turn_after": 250.0}},
		{"linear", curve(8, 100, 150, 200, 250, 300, 350, 400), nil},
		{"flat", curve(8, 200, 200, 200, 200, 200, 200, 200), nil},
		// 100 + 10·turn²: it bends, never 1.5× the line through the
		// turns before.
		{"convex", curve(8, 110, 140, 190, 260, 350, 460, 590, 740), nil},
		// The flat-then-steep curve from 4 sessions a turn.
		{"few sessions", curve(4, 200, 200, 200, 200, 400, 600, 800), nil},
		// One slow turn, then back on the line.
		{"spike", curve(8, 200, 200, 200, 200, 500, 200, 200), nil},
		// Only the last turn is above the line: one turn is no knee.
		{"last turn only", curve(8, 200, 200, 200, 200, 200, 200, 600), nil},
		// Turn 5 is 1.5× the 60 ms line but only 30 ms above it.
		{"small step", curve(8, 60, 60, 60, 60, 90, 120, 150), nil},
		// +200 ms a turn from 1 s: 1.2× the line, not 1.5×.
		{"small ratio", curve(8, 1000, 1000, 1000, 1000, 1200, 1400, 1600), nil},
		// The first turns scatter by ±100 ms around 300: a 400 ms jump is
		// within 3× that noise.
		{"noisy start", curve(8, 200, 400, 200, 400, 700, 800, 900), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := turnKnee(tt.s)
			if tt.want == nil {
				if ok {
					t.Fatalf("turnKnee = %+v; want no knee", f)
				}
				return
			}
			if !ok {
				t.Fatal("turnKnee found no knee; want one")
			}
			if f.ID != "turn-ttft-knee" || f.Severity != Warning {
				t.Errorf("turnKnee = %s %s; want turn-ttft-knee warning", f.ID, f.Severity)
			}
			for k, v := range tt.want {
				if f.Evidence[k] != v {
					t.Errorf("evidence %s = %v (%T); want %v (%T)", k, f.Evidence[k], f.Evidence[k], v, v)
				}
			}
		})
	}

	// Later turns reached by fewer sessions are not read: with 4 sessions
	// from turn 5 on, 4 turns are left and no knee can be seen.
	s := curve(8, 200, 200, 200, 200, 400, 600, 800)
	for i := 4; i < len(s.Turns); i++ {
		s.Turns[i].N, s.Turns[i].TTFT.N = 4, 4
	}
	if f, ok := turnKnee(s); ok {
		t.Errorf("turnKnee with 4 sessions past turn 4 = %+v; want no knee", f)
	}
	// Nor past a turn with TTFTs from fewer (its first requests failed).
	s = curve(8, 200, 200, 200, 200, 400, 600, 800, 1000)
	s.Turns[4].TTFT.N = 2
	if f, ok := turnKnee(s); ok {
		t.Errorf("turnKnee with 2 TTFTs at turn 5 = %+v; want no knee", f)
	}
}

func TestSessionsOrder(t *testing.T) {
	// History growth (50 ms per 1K, 200 → 800 ms), a knee at turn 4,
	// tools 60 % of the working time: the findings in the rules' order.
	s := curve(8, 200, 200, 200, 200, 400, 600, 800)
	s.TTFTPer1KHistory, s.ModelShare, s.ToolShare = 50, 0.2, 0.3
	want := []string{"history-growth", "turn-ttft-knee", "tool-time-dominates"}
	if got := ids(Sessions(s)); !slices.Equal(got, want) {
		t.Errorf("Sessions = %v; want %v", got, want)
	}
}

// The sessions' SLA sentence on the shared fixture, every figure by hand:
// A (turns 1 and 2, met) and B (failed at turn 1); turn TTPs 450 and 200
// ms (P95 200 + 0.95·250 = 437.5), turn TTFTs 100 and 200 (P95 195),
// durations 1,750 and 50 ms (P95 50 + 0.95·1,700 = 1,665), 100 ms of TTFT
// per 1K tokens of history, one of two sessions met in 1.75 s.
func TestSessionSLASentence(t *testing.T) {
	slo, err := stats.ParseSessionSLO("ttp:500 turn_ttft_p95:300 duration:2000")
	if err != nil {
		t.Fatal(err)
	}
	s := stats.SummarizeSessions(runlogtest.Sessions(), nil, slo, 0)
	want := "2 sessions, 1.5 turns each on average (1 failed); turn TTP P95 438 ms, turn TTFT P95 195 ms, session duration P95 1.7 s; " +
		"TTFT +100.0 ms per 1K tokens of history; SLO per session TTP <= 500 ms, turn TTFT P95 <= 300 ms, duration <= 2 s: met by 50 % of sessions, 0.57 sessions/s"
	if got := SessionSLASentence(&s); got != want {
		t.Errorf("SessionSLASentence =\n%s\nwant\n%s", got, want)
	}
	if got := SessionSLASentence(nil); got != "" {
		t.Errorf("no sessions: %q; want none", got)
	}
}
