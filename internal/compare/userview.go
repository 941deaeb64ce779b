package compare

import (
	"fmt"
	"math"
	"strconv"

	"github.com/goodput/goodput/internal/stats"
)

// defaultAnswerTokens is the answer length the user's view speaks of when
// the runs do not say how long theirs were.
const defaultAnswerTokens = 256

// Num formats a latency in ms for sentences: whole ms from 100 up, one
// decimal from 10, two below.
func Num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// Signed formats a difference with its sign ("+12.5", "−3.00").
func Signed(v float64) string {
	if v < 0 {
		return "−" + Num(-v)
	}
	return "+" + Num(v)
}

// ciText is ", 95 % CI −3.00 to +6.00 ms" or "" without an interval.
func ciText(d Delta, conf float64, unit string) string {
	if !d.HasCI {
		return ""
	}
	return fmt.Sprintf(", %s %% CI %s to %s %s", strconv.FormatFloat(100*conf, 'f', -1, 64), Signed(d.Lo), Signed(d.Hi), unit)
}

func significant(d Delta) bool { return d.Verdict == Better || d.Verdict == Worse }

// changed says whether a difference is worth a sentence: significant, or
// (without an interval) at least 5 % of A.
func changed(d Delta) bool {
	if d.HasCI {
		return significant(d)
	}
	return math.Abs(d.Diff) > 0.05*math.Abs(d.A)
}

func moreLess(diff float64, more, less string) string {
	if diff > 0 {
		return more
	}
	return less
}

// answerTokens is the typical answer length of the runs, tokens.
func answerTokens(sa, sb *side) int {
	n := 0.0
	if sa.figs != nil {
		n = sa.figs.MeanOutputTokens
	}
	if n == 0 && sb.figs != nil {
		n = sb.figs.MeanOutputTokens
	}
	if n < 2 {
		return defaultAnswerTokens
	}
	return int(math.Round(n))
}

// userView turns the deltas into what users feel: TTFT is paid by every
// user; TPOT only by those who read long answers, and not at all while it
// stays faster than reading speed; E2E mixes both with answer length.
func userView(c *Comparison, sa, sb *side) []string {
	var out []string
	conf := c.Options.Confidence
	get := func(m, st string) (Delta, bool) { return c.Delta(m, st) }

	ttft, okTTFT := get(stats.MetricTTFT, "p50")
	if okTTFT {
		if changed(ttft) {
			s := fmt.Sprintf("Every user pays the TTFT change: the median wait for the first token goes from %s to %s ms (%s ms%s).",
				Num(ttft.A), Num(ttft.B), Signed(ttft.Diff), ciText(ttft, conf, "ms"))
			if p99, ok := get(stats.MetricTTFT, "p99"); ok && changed(p99) {
				s += fmt.Sprintf(" At P99, %s → %s ms.", Num(p99.A), Num(p99.B))
			}
			out = append(out, s)
		} else {
			out = append(out, fmt.Sprintf("TTFT shows no significant change at the median (%s → %s ms%s): users will not notice a difference in the wait for the first token.",
				Num(ttft.A), Num(ttft.B), ciText(ttft, conf, "ms")))
		}
	}

	// TTP is worth its own sentence only when hidden tokens (reasoning,
	// tool calls) make it differ from TTFT.
	if ttp, ok := get(stats.MetricTTP, "p50"); ok && okTTFT && math.Abs(ttp.A-ttft.A) > 1 && changed(ttp) {
		out = append(out, fmt.Sprintf("Every user also pays the TTP change, the wait for the first visible token after hidden reasoning: median %s → %s ms (%s ms%s).",
			Num(ttp.A), Num(ttp.B), Signed(ttp.Diff), ciText(ttp, conf, "ms")))
	}

	n := answerTokens(sa, sb)
	r := float64(c.Options.ReadingSpeed) / 1e6
	tpot, okTPOT := get(stats.MetricTPOT, "p50")
	if okTPOT {
		over := tpot.Diff * float64(n-1)
		rs := "reading speed (" + stats.ReadingSpeedCite(r) + ")"
		switch {
		case !changed(tpot):
			out = append(out, fmt.Sprintf("TPOT shows no significant change at the median (%s → %s ms/token%s): streaming feels the same.",
				Num(tpot.A), Num(tpot.B), ciText(tpot, conf, "ms")))
		case tpot.A <= r && tpot.B <= r:
			out = append(out, fmt.Sprintf("TPOT goes from %s to %s ms/token, but both are faster than %s: a user reading the answer as it streams does not see the change. Only those waiting for the whole of a long answer do: %s ms over a %d-token answer.",
				Num(tpot.A), Num(tpot.B), rs, Signed(over), n))
		case tpot.A <= r && tpot.B > r:
			out = append(out, fmt.Sprintf("TPOT goes from %s to %s ms/token and now falls behind %s: users reading long answers will see the text stall, and a %d-token answer takes %s ms longer.",
				Num(tpot.A), Num(tpot.B), rs, n, Num(over)))
		case tpot.A > r && tpot.B <= r:
			out = append(out, fmt.Sprintf("TPOT goes from %s to %s ms/token and now keeps up with %s: users reading long answers no longer wait for text; a %d-token answer ends %s ms sooner.",
				Num(tpot.A), Num(tpot.B), rs, n, Num(-over)))
		default:
			out = append(out, fmt.Sprintf("TPOT goes from %s to %s ms/token, both slower than %s: users who read long answers %s %s ms per token, %s ms over a %d-token answer; short answers barely change.",
				Num(tpot.A), Num(tpot.B), rs, moreLess(tpot.Diff, "wait", "save"), Num(math.Abs(tpot.Diff)), Num(math.Abs(over)), n))
		}
	}

	e2e, okE2E := get(stats.MetricE2E, "p50")
	if okE2E {
		var la, lb float64
		if sa.figs != nil {
			la = sa.figs.MeanOutputTokens
		}
		if sb.figs != nil {
			lb = sb.figs.MeanOutputTokens
		}
		switch {
		case okTTFT && okTPOT && changed(ttft) && changed(tpot) && (ttft.Diff > 0) != (tpot.Diff > 0) && tpot.Diff != 0:
			cross := 1 - ttft.Diff/tpot.Diff
			first, per := moreLess(ttft.Diff, "slower", "faster"), moreLess(tpot.Diff, "slower", "faster")
			shortEnd, longEnd := moreLess(ttft.Diff, "later", "sooner"), moreLess(tpot.Diff, "later", "sooner")
			out = append(out, fmt.Sprintf("E2E alone would mislead: B is %s to the first token but %s per token, so answers shorter than about %d tokens finish %s and longer ones %s; the median E2E (%s → %s ms) only reflects this workload's answer lengths.",
				first, per, int(math.Round(cross)), shortEnd, longEnd, Num(e2e.A), Num(e2e.B)))
		case la > 0 && lb > 0 && math.Abs(lb-la) > 0.1*la:
			out = append(out, fmt.Sprintf("E2E alone would mislead: B's answers are %s %s on average (%s vs %s tokens), so its E2E change (median %s → %s ms) reflects answer length as well as speed; TTFT and TPOT do not.",
				Num(100*math.Abs(lb-la)/la)+" %", moreLess(lb-la, "longer", "shorter"), Num(la), Num(lb), Num(e2e.A), Num(e2e.B)))
		case changed(e2e):
			out = append(out, fmt.Sprintf("E2E's median goes from %s to %s ms (%s ms%s), which follows from the TTFT and TPOT changes above; judge by those, as E2E depends on answer length.",
				Num(e2e.A), Num(e2e.B), Signed(e2e.Diff), ciText(e2e, conf, "ms")))
		}
	}

	if g := c.Goodput; g != nil {
		s := fmt.Sprintf("Under the SLO %s, B serves %s req/s within it against A's %s",
			g.SLO, strconv.FormatFloat(g.Goodput.B, 'f', 2, 64), strconv.FormatFloat(g.Goodput.A, 'f', 2, 64))
		if g.RequestsA > 0 && g.RequestsB > 0 {
			s += fmt.Sprintf(" (%s %% → %s %% of requests met it)", Num(100*g.Attainment.A), Num(100*g.Attainment.B))
		}
		switch g.Attainment.Verdict {
		case Better, Worse:
			s += ": a significant change in how many users get the service promised"
		case NoSignificant:
			s += ": no significant change in how many users get the service promised"
		}
		out = append(out, s+".")
	}
	return out
}

// sessionView says what the session comparison means for the users of
// multi-turn conversations and agent loops: the slowest turn's wait for an
// answer, how fast that wait grows with the history, and how many sessions
// get the service promised.
func sessionView(c *Comparison) []string {
	s := c.Sessions
	if s == nil {
		return nil
	}
	conf := c.Options.Confidence
	var out []string
	if d, ok := s.Delta(MetricSessionTTP, "p95"); ok {
		if changed(d) {
			out = append(out, fmt.Sprintf("In sessions, the slowest turn's wait for a visible answer (P95 over sessions) goes from %s to %s ms (%s ms%s): users of conversations and agent loops wait %s for their slowest answer.",
				Num(d.A), Num(d.B), Signed(d.Diff), ciText(d, conf, "ms"), moreLess(d.Diff, "longer", "less")))
		} else {
			out = append(out, fmt.Sprintf("Session TTP (the slowest turn's wait for a visible answer, P95 over sessions) shows no significant change (%s → %s ms%s).",
				Num(d.A), Num(d.B), ciText(d, conf, "ms")))
		}
	}
	if d, ok := s.Delta(MetricTTFTPer1KHistory, ""); ok && !math.IsNaN(d.Diff) && changed(d) {
		out = append(out, fmt.Sprintf("Each 1,000 tokens of history adds %s ms of TTFT in A and %s ms in B: later turns of long conversations wait %s.",
			Num(d.A), Num(d.B), moreLess(d.Diff, "longer", "less")))
	}
	if d, ok := s.Delta(MetricSessionGoodput, ""); ok {
		att, _ := s.Delta(MetricSessionAttainment, "")
		line := fmt.Sprintf("Under the session SLO %s, B completes %s sessions/s within it against A's %s (%s %% → %s %% of sessions met it)",
			s.SLO, strconv.FormatFloat(d.B, 'f', 2, 64), strconv.FormatFloat(d.A, 'f', 2, 64), Num(100*att.A), Num(100*att.B))
		switch att.Verdict {
		case Better, Worse:
			line += ": a significant change in how many sessions get the service promised"
		case NoSignificant:
			line += ": no significant change in how many sessions get the service promised"
		}
		out = append(out, line+".")
	}
	return out
}
