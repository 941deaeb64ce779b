package findings

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Session rules' thresholds.
const (
	// historyGrowthMsPer1K: TTFT rising by at least this much per 1,000
	// tokens of history, and historyGrowthRatio from the first turn to the
	// last, is history dominating TTFT.
	historyGrowthMsPer1K = 20
	historyGrowthRatio   = 1.5
	// historyCacheImplied, historyCacheShortfall and historyCacheMinTurns:
	// the resent history making at least historyCacheImplied of the
	// prompts of turns ≥ 2 cacheable while the prefix cache served less
	// than historyCacheShortfall of that share, over at least
	// historyCacheMinTurns turns compared, is history not cached.
	historyCacheImplied   = 0.3
	historyCacheShortfall = 0.5
	historyCacheMinTurns  = 5
	// kneeMinSessions, kneeMinBefore and kneeMinAfter: the turn-index knee
	// needs every turn it looks at reached by at least kneeMinSessions
	// sessions, at least kneeMinBefore turns to fit the line through and
	// at least kneeMinAfter turns past it that stay above the line.
	// kneeRatio and kneeMinMs: a turn past the knee has a TTFT P50 at
	// least kneeRatio times, and kneeMinMs above, the line's
	// extrapolation; kneeNoise: and at least kneeNoise times the largest
	// distance of a fitted turn from the line (a noisy start fits no line).
	kneeMinSessions = 5
	kneeMinBefore   = 3
	kneeMinAfter    = 2
	kneeRatio       = 1.5
	kneeMinMs       = 100
	kneeNoise       = 3
	// toolDominates: tool time at least this share of the sessions' model
	// plus tool time.
	toolDominates = 0.5
	// ttpOverTTFT: turn TTP at least this many times turn TTFT (and
	// ttpOverTTFTMinMs above it) is an answer published far after its first
	// token.
	ttpOverTTFT      = 2
	ttpOverTTFTMinMs = 500
)

// Sessions runs the session rules that need only a run's session summary:
// SessionsWithRecords(s, nil).
func Sessions(s *stats.SessionSummary) []Finding { return SessionsWithRecords(s, nil) }

// SessionsWithRecords runs the session rules over a run's session summary
// s and the records recs it summarises (warm-ups and records outside a
// session are ignored): history not reaching the prefix cache (the hit
// share of turns ≥ 2 far below the share the resent history makes
// cacheable; needs recs), history growth dominating TTFT, a knee in TTFT
// by turn index, tool time dominating the sessions, and answers published
// far after their first token (tool rounds or hidden reasoning), in that
// order. nil recs skips the comparison with the resent history; nil s, or
// one without sessions, has no findings.
func SessionsWithRecords(s *stats.SessionSummary, recs []runlog.Record) []Finding {
	if s == nil || s.Sessions == 0 || len(s.Turns) == 0 {
		return nil
	}
	var fs []Finding
	var h *historyShares
	if recs != nil {
		if hs := historyPrefix(recs); hs.turns >= historyCacheMinTurns {
			h = &hs
		}
	}
	if f, ok := historyNotCached(s, h); ok {
		fs = append(fs, f)
	} else if f, ok := historyGrowth(s, h); ok {
		fs = append(fs, f)
	}
	if f, ok := turnKnee(s); ok {
		fs = append(fs, f)
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

// historyShares compares, over the turns k ≥ 2 of a run's sessions, the
// prompt tokens the prefix cache served with those the resent history
// makes cacheable. A turn counts when its turn k−1 is known: its first
// request (the user's message) and turn k−1's last one (the answer after
// its tool rounds) both succeeded, and the first request's counts come
// from the server's usage. Turn k resends turn k−1's prompt and its
// visible answer (completion − reasoning tokens), so that much of its
// prompt, at most all of it, is a prefix a cache has seen; a turn whose
// history_dropped differs from turn k−1's had turns cut out of the
// middle of that prefix and is skipped.
type historyShares struct {
	// turns counts the turns compared; cut those skipped for a changed
	// history_dropped.
	turns, cut int
	// prompt, cached and prefix sum the compared turns' prompt tokens,
	// cached tokens (at most the prompt) and resendable prefixes, tokens;
	// missing sums each turn's prefix tokens beyond its cached ones.
	prompt, cached, prefix, missing int
}

// measured is the share of the compared prompts' tokens the prefix cache
// served (0–1; 0 with none compared).
func (h historyShares) measured() float64 { return share(h.cached, h.prompt) }

// implied is the share of the compared prompts' tokens the resent history
// makes cacheable (0–1; 0 with none compared).
func (h historyShares) implied() float64 { return share(h.prefix, h.prompt) }

func share(n, d int) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// historyPrefix measures recs' sessions as historyShares describes.
func historyPrefix(recs []runlog.Record) historyShares {
	type ends struct{ first, last *runlog.Record }
	type key struct {
		session string
		turn    int
	}
	order := func(a, b *runlog.Record) int {
		return cmp.Or(cmp.Compare(a.ToolRound, b.ToolRound), cmp.Compare(a.Sent, b.Sent))
	}
	turns := map[key]*ends{}
	for i := range recs {
		r := &recs[i]
		if r.SessionID == "" || r.Warmup || r.Turn < 1 {
			continue
		}
		k := key{r.SessionID, r.Turn}
		e := turns[k]
		if e == nil {
			turns[k] = &ends{r, r}
			continue
		}
		if order(r, e.first) < 0 {
			e.first = r
		}
		if order(r, e.last) >= 0 {
			e.last = r
		}
	}
	var h historyShares
	for k, e := range turns {
		prev := turns[key{k.session, k.turn - 1}]
		f := e.first
		if prev == nil || !f.OK() || !prev.last.OK() || f.PromptTokens <= 0 || f.TokenSource == runlog.TokensCounted {
			continue
		}
		p := prev.last
		if f.HistoryDropped != p.HistoryDropped {
			h.cut++
			continue
		}
		prefix := min(p.PromptTokens+max(p.CompletionTokens-p.ReasoningTokens, 0), f.PromptTokens)
		cached := min(max(f.CachedTokens, 0), f.PromptTokens)
		h.turns++
		h.prompt += f.PromptTokens
		h.cached += cached
		h.prefix += prefix
		h.missing += max(prefix-cached, 0)
	}
	return h
}

// historyNotCached is the prefix cache serving far less of the turns ≥ 2
// than the resent history makes cacheable. A cache that served nothing
// at all may be a server that does not report cached tokens, so then it
// takes TTFT growing with the history too. Warning when TTFT grows with
// the history (historyGrowthMsPer1K), else Info.
func historyNotCached(s *stats.SessionSummary, h *historyShares) (Finding, bool) {
	if h == nil {
		return Finding{}, false
	}
	measured, implied := h.measured(), h.implied()
	grows := s.TTFTPer1KHistory >= historyGrowthMsPer1K
	if implied < historyCacheImplied || measured >= historyCacheShortfall*implied || (h.cached == 0 && !grows) {
		return Finding{}, false
	}
	missingPerTurn := float64(h.missing) / float64(h.turns)
	costMs := max(s.TTFTPer1KHistory, 0) * missingPerTurn / 1000
	sev := Info
	if grows {
		sev = Warning
	}
	unreported := ""
	if h.cached == 0 {
		unreported = " (a server that does not report cached tokens reads as 0 %: vLLM reports them with --enable-prompt-tokens-details)"
	}
	ev := map[string]any{
		"turns_compared": h.turns, "turns_skipped_history_cut": h.cut,
		"cached_pct": round2(100 * measured), "history_cacheable_pct": round2(100 * implied),
		"missing_cached_tokens_per_turn": round2(missingPerTurn), "ttft_ms_per_1k_history": round2(s.TTFTPer1KHistory),
		"ttft_cost_per_turn_ms": round2(costMs),
	}
	return Finding{ID: "history-not-cached", Severity: sev, Evidence: ev,
		Message: fmt.Sprintf("Sessions resend their history, which makes %s %% of the prompts of turns 2 and later cacheable, but the prefix cache served %s %%%s: about %s tokens a turn are prefilled again, ≈ %s ms of TTFT a turn at the measured %s ms per 1K tokens of history (%d turns compared). Enable prefix caching (vLLM --enable-prefix-caching) with KV memory to keep the sessions' prefixes, route a session's turns to one replica (session affinity), and keep the resent history byte-identical (the same system prompt, the server's own answers: --history server).",
			num(100*implied), num(100*measured), unreported, num(math.Round(missingPerTurn)), num(costMs), num(s.TTFTPer1KHistory), h.turns),
	}, true
}

// historyGrowth is TTFT growing with the history. With h (the prefix
// cache measured against the resent history, and found to serve it: else
// historyNotCached speaks) the remedy is what caching cannot fix; without
// it, the part of the last turn's prompt beyond the first turn's stands
// for what the history makes cacheable.
func historyGrowth(s *stats.SessionSummary, h *historyShares) (Finding, bool) {
	first, last := s.Turns[0], s.Turns[len(s.Turns)-1]
	// With an interval on the slope, its low end must reach the bar too.
	slopeLo := s.TTFTPer1KHistory
	if iv := s.TTFTPer1KHistoryCI; iv.OK() {
		slopeLo = iv.Lo
	}
	if len(s.Turns) < 2 || first.TTFT.N == 0 || last.TTFT.N == 0 || first.TTFT.Median <= 0 ||
		s.TTFTPer1KHistory < historyGrowthMsPer1K || slopeLo < historyGrowthMsPer1K ||
		last.TTFT.Median < historyGrowthRatio*first.TTFT.Median {
		return Finding{}, false
	}
	// Every earlier turn is resent verbatim: at least the part of the
	// last turn's prompt beyond the first turn's could come from a prefix
	// cache.
	possible := 0.0
	if last.Prompt.Median > 0 {
		possible = max(last.Prompt.Median-first.Prompt.Median, 0) / last.Prompt.Median
	}
	ev := map[string]any{"ttft_ms_per_1k_history": round2(s.TTFTPer1KHistory), "first_turn_ttft_p50_ms": round2(first.TTFT.Median),
		"last_turn": last.Turn, "last_turn_ttft_p50_ms": round2(last.TTFT.Median), "last_turn_cached_pct": round2(100 * last.CachedShare),
		"last_turn_cacheable_pct": round2(100 * possible)}
	grow := fmt.Sprintf("TTFT grows with the conversation: %s ms per 1K tokens of history, from %s ms at turn %d to %s ms at turn %d (prompts %s → %s tokens).",
		num(s.TTFTPer1KHistory), num(first.TTFT.Median), first.Turn, num(last.TTFT.Median), last.Turn,
		num(first.Prompt.Median), num(last.Prompt.Median))
	var msg string
	if h == nil {
		msg = fmt.Sprintf("%s The prefix cache served %s %% of turn %d's prompt where the resent history makes at least %s %% cacheable: enable or enlarge prefix caching (vLLM --enable-prefix-caching, more KV memory), or route a session's turns to one replica.",
			grow, num(100*last.CachedShare), last.Turn, num(100*possible))
	} else {
		ev["cached_pct"], ev["history_cacheable_pct"], ev["turns_compared"] = round2(100*h.measured()), round2(100*h.implied()), h.turns
		msg = fmt.Sprintf("%s The prefix cache served %s %% of the prompts of turns 2 and later, against the %s %% the resent history makes cacheable: caching is not what is missing; the growth is the prefill of each turn's new tokens and attention over the longer context. Keep conversations shorter (summarise old turns into a stable prefix), or give prefill more compute (chunked prefill, tensor parallelism).",
			grow, num(100*h.measured()), num(100*h.implied()))
	}
	return Finding{ID: "history-growth", Severity: Warning, Message: msg, Evidence: ev}, true
}

// turnKnee is TTFT by turn index rising along a line (or flat) and then
// far above it. It reads the turns from the first on, while each has a
// TTFT from at least kneeMinSessions sessions and the turn numbers run
// without a gap. For each turn i past the first kneeMinBefore it fits a
// least-squares line to the turns before i; the knee is the turn before
// the first i from which every turn read (at least kneeMinAfter of them)
// has a TTFT P50 at least kneeRatio× and kneeMinMs above the line's
// extrapolation, and kneeNoise× the fitted turns' largest distance from
// the line. A spike of one turn, a convex curve that bends slowly, a
// noisy start and turns few sessions reached find none.
func turnKnee(s *stats.SessionSummary) (Finding, bool) {
	var ts []stats.TurnSummary
	for i, t := range s.Turns {
		if t.N < kneeMinSessions || t.TTFT.N < kneeMinSessions || (i > 0 && t.Turn != s.Turns[i-1].Turn+1) {
			break
		}
		ts = append(ts, t)
	}
	xs, ys := make([]float64, len(ts)), make([]float64, len(ts))
	for i, t := range ts {
		xs[i], ys[i] = float64(t.Turn), t.TTFT.Median
	}
	above := func(i int, a, b, noise float64) (float64, bool) {
		pred := a + b*xs[i]
		return pred, pred > 0 && ys[i] >= kneeRatio*pred && ys[i]-pred >= kneeMinMs && ys[i]-pred >= kneeNoise*noise
	}
	for i := kneeMinBefore; i+kneeMinAfter <= len(ts); i++ {
		a, b, noise := fitLine(xs[:i], ys[:i])
		pred, ok := above(i, a, b, noise)
		for m := i + 1; ok && m < len(ts); m++ {
			_, ok = above(m, a, b, noise)
		}
		if !ok {
			continue
		}
		j, next, lastT := ts[i-1], ts[i], ts[len(ts)-1]
		b = round2(b) + 0 // no "-0" for a flat start
		after := (lastT.TTFT.Median - j.TTFT.Median) / float64(lastT.Turn-j.Turn)
		var by []string
		for _, t := range ts {
			by = append(by, fmt.Sprintf("%d:%s", t.Turn, num(round2(t.TTFT.Median))))
		}
		cut := ""
		if s.HistoryCut > 0 {
			cut = fmt.Sprintf("; %d turns were sent with their history cut (--max-context), which also breaks the cached prefix", s.HistoryCut)
		}
		return Finding{ID: "turn-ttft-knee", Severity: Warning,
			Message: fmt.Sprintf("TTFT by turn rises linearly to turn %d (%s ms a turn, %s ms at turn %d), then steeply: turn %d %s ms, %s× the %s ms the line extrapolates, … turn %d %s ms (%s ms a turn past turn %d). Past about %s prompt tokens a turn's history no longer fits: probably the KV cache evicting the sessions' cached prefixes (prefix cache eviction), or the context window%s. Give the KV cache more memory or hold fewer sessions at once, or keep sessions' context below that length.",
				j.Turn, num(b), num(j.TTFT.Median), j.Turn, next.Turn, num(next.TTFT.Median), num(next.TTFT.Median/pred), num(pred),
				lastT.Turn, num(lastT.TTFT.Median), num(after), j.Turn, num(next.Prompt.Median), cut),
			Evidence: map[string]any{"knee_turn": j.Turn, "knee_ttft_p50_ms": round2(j.TTFT.Median),
				"next_turn_ttft_p50_ms": round2(next.TTFT.Median), "next_turn_extrapolated_ms": round2(pred),
				"ms_per_turn_before": round2(b), "ms_per_turn_after": round2(after), "next_turn_prompt_p50_tokens": round2(next.Prompt.Median),
				"sessions_at_last_turn": lastT.N, "turn_ttft_p50_ms": strings.Join(by, " ")}}, true
	}
	return Finding{}, false
}

// fitLine is the least-squares line y = a + b·x through xs, ys and the
// largest |y − (a + b·x)| of its points.
func fitLine(xs, ys []float64) (a, b, maxResid float64) {
	a, b = stats.LinearFit(xs, ys)
	for i := range xs {
		maxResid = max(maxResid, math.Abs(ys[i]-(a+b*xs[i])))
	}
	return a, b, maxResid
}
