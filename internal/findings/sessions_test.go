package findings

import (
	"testing"

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
