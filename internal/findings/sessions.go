package findings

import (
	"fmt"

	"github.com/goodput/goodput/internal/stats"
)

// Session rules' thresholds.
const (
	// historyGrowthMsPer1K: TTFT rising by at least this much per 1,000
	// tokens of history, and historyGrowthRatio from the first turn to the
	// last, is history dominating TTFT.
	historyGrowthMsPer1K = 20
	historyGrowthRatio   = 1.5
	// toolDominates: tool time at least this share of the sessions' model
	// plus tool time.
	toolDominates = 0.5
	// ttpOverTTFT: turn TTP at least this many times turn TTFT (and
	// ttpOverTTFTMinMs above it) is an answer published far after its first
	// token.
	ttpOverTTFT      = 2
	ttpOverTTFTMinMs = 500
)

// Sessions runs the session rules over a run's session summary: history
// growth dominating TTFT (with the prefix-cache hit share measured against
// the share the resent history makes possible), tool time dominating the
// sessions, and answers published far after their first token (tool rounds
// or hidden reasoning). nil s, or one without sessions, has none.
func Sessions(s *stats.SessionSummary) []Finding {
	if s == nil || s.Sessions == 0 || len(s.Turns) == 0 {
		return nil
	}
	var fs []Finding
	first, last := s.Turns[0], s.Turns[len(s.Turns)-1]
	if len(s.Turns) >= 2 && first.TTFT.N > 0 && last.TTFT.N > 0 && first.TTFT.Median > 0 &&
		s.TTFTPer1KHistory >= historyGrowthMsPer1K && last.TTFT.Median >= historyGrowthRatio*first.TTFT.Median {
		// Every earlier turn is resent verbatim: at least the part of the
		// last turn's prompt beyond the first turn's could come from a
		// prefix cache.
		possible := 0.0
		if last.Prompt.Median > 0 {
			possible = max(last.Prompt.Median-first.Prompt.Median, 0) / last.Prompt.Median
		}
		fs = append(fs, Finding{ID: "history-growth", Severity: Warning,
			Message: fmt.Sprintf("TTFT grows with the conversation: %s ms per 1K tokens of history, from %s ms at turn %d to %s ms at turn %d (prompts %s → %s tokens). The prefix cache served %s %% of turn %d's prompt where the resent history makes at least %s %% cacheable: enable or enlarge prefix caching (vLLM --enable-prefix-caching, more KV memory), or route a session's turns to one replica.",
				num(s.TTFTPer1KHistory), num(first.TTFT.Median), first.Turn, num(last.TTFT.Median), last.Turn,
				num(first.Prompt.Median), num(last.Prompt.Median), num(100*last.CachedShare), last.Turn, num(100*possible)),
			Evidence: map[string]any{"ttft_ms_per_1k_history": round2(s.TTFTPer1KHistory), "first_turn_ttft_p50_ms": round2(first.TTFT.Median),
				"last_turn": last.Turn, "last_turn_ttft_p50_ms": round2(last.TTFT.Median), "last_turn_cached_pct": round2(100 * last.CachedShare),
				"last_turn_cacheable_pct": round2(100 * possible)}})
	}
	if work := s.ModelShare + s.ToolShare; work > 0 && s.ToolShare/work >= toolDominates {
		fs = append(fs, Finding{ID: "tool-time-dominates", Severity: Info,
			Message: fmt.Sprintf("Tools take %s %% of the sessions' working time (model %s %%, tools %s %% of all time, think time aside): the model is not what users wait for. Speed up the tools, run a turn's tool calls in parallel, or stream partial answers while tools run.",
				num(100*s.ToolShare/work), num(100*s.ModelShare), num(100*s.ToolShare)),
			Evidence: map[string]any{"tool_share_of_work_pct": round2(100 * s.ToolShare / work), "model_pct": round2(100 * s.ModelShare),
				"tool_pct": round2(100 * s.ToolShare)}})
	}
	ttp, m := s.TurnTTP.Median, s.TurnTTFT.Median
	if s.TurnTTFT.N > 0 && s.TurnTTP.N > 0 && m > 0 && ttp >= ttpOverTTFT*m && ttp-m >= ttpOverTTFTMinMs {
		fs = append(fs, Finding{ID: "publish-far-after-first-token", Severity: Warning,
			Message: fmt.Sprintf("Users see a turn's answer %s ms (P50) after their message, %s× its first token (%s ms): tool rounds or hidden reasoning come before the visible text. Judge sessions by TTP (--session-goodput ttp:…), not TTFT; cut tool rounds or reasoning effort, or stream a visible preamble.",
				num(ttp), num(ttp/m), num(m)),
			Evidence: map[string]any{"turn_ttp_p50_ms": round2(ttp), "turn_ttft_p50_ms": round2(m)}})
	}
	return fs
}
