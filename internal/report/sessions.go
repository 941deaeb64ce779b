package report

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/stats"
)

// SessionsTerminal writes a run's sessions after its summary block: how
// many, their duration and turn TTP, the model/tool/think split, how TTFT
// grows with the history, the session SLO's verdict and goodput, and a
// table of TTFT and TTP by turn. It writes nothing when the run had no
// sessions.
func SessionsTerminal(w io.Writer, s *stats.SessionSummary, o TermOptions) error {
	if s == nil || s.Sessions == 0 {
		return nil
	}
	t := &term{color: o.color()}
	t.header(" Sessions ", '=')
	t.line("Sessions (completed / failed):", fmt.Sprintf("%d (%d / %d)", s.Sessions, s.Completed, s.Failed))
	t.line("Turns per session mean/max:", f2(s.TurnsPerSession.Mean)+" / "+tok(s.TurnsPerSession.Max))
	lvl := s.Confidence
	t.line("Session duration (ms) P50/P99:", p50p99CI(s.Duration, lvl))
	t.line("Turn TTFT (ms) P50/P99:", p50p99CI(s.TurnTTFT, lvl))
	t.line("Turn TTP (ms) P50/P99:", p50p99CI(s.TurnTTP, lvl))
	t.line("Time: model / tool / think:", fmt.Sprintf("%s %% / %s %% / %s %%", f1(100*s.ModelShare), f1(100*s.ToolShare), f1(100*s.ThinkShare)))
	t.line("TTFT per 1K tokens of history (ms):", withCI(f2(s.TTFTPer1KHistory), s.TTFTPer1KHistoryCI, lvl, f2))
	if s.HistoryCut > 0 {
		t.line("Turns sent with history cut (context cap):", strconv.Itoa(s.HistoryCut))
	}
	if !s.SLO.IsZero() {
		met := pct(s.Met, s.Sessions)
		if iv := s.AttainmentCI; lvl > 0 && iv.OK() {
			met += fmt.Sprintf(" [%s%%, %s%%]", f2(100*iv.Lo), f2(100*iv.Hi))
		}
		t.line("Sessions meeting SLO ("+s.SLO.String()+"):", met)
		t.line("Session goodput (sessions/s):", withCI(f2(s.Goodput), s.GoodputCI, lvl, f2))
	}
	t.header("By turn", '-')
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Turn\tN\tTTFT P50\tTTFT P99\tTTP P50\tTTP P99\tE2E P50\tPrompt P50\tCached %\t")
	for _, ts := range s.Turns {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", ts.Turn, ts.N, pOrDash(ts.TTFT, 50), pOrDash(ts.TTFT, 99),
			pOrDash(ts.TTP, 50), pOrDash(ts.TTP, 99), pOrDash(ts.E2E, 50), tok(ts.Prompt.Median), f1(100*ts.CachedShare))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// SessionsJSON is the result JSON's "sessions" object.
func SessionsJSON(s *stats.SessionSummary) map[string]any {
	if s == nil || s.Sessions == 0 {
		return nil
	}
	lvl := s.Confidence
	turns := make([]map[string]any, len(s.Turns))
	for i, ts := range s.Turns {
		turns[i] = map[string]any{"turn": ts.Turn, "sessions": ts.N, "ttft_ms": distCI(ts.TTFT, lvl), "ttp_ms": distCI(ts.TTP, lvl),
			"e2e_ms": distCI(ts.E2E, lvl), "prompt_tokens": dist(ts.Prompt), "cached_share": ts.CachedShare}
	}
	m := map[string]any{
		"sessions": s.Sessions, "completed": s.Completed, "failed": s.Failed,
		"duration_ms": distCI(s.Duration, lvl), "turn_ttft_ms": distCI(s.TurnTTFT, lvl), "turn_ttp_ms": distCI(s.TurnTTP, lvl),
		"turns_per_session": distCI(s.TurnsPerSession, lvl), "model_share": s.ModelShare, "tool_share": s.ToolShare, "think_share": s.ThinkShare,
		"ttft_ms_per_1k_history_tokens": s.TTFTPer1KHistory, "turns": turns, "turns_history_cut": s.HistoryCut,
	}
	if lvl > 0 {
		m["confidence_level"] = lvl
		m["ttft_ms_per_1k_history_tokens_ci"] = ciValue(s.TTFTPer1KHistoryCI)
	}
	if !s.SLO.IsZero() {
		m["session_slo"], m["sessions_meeting_slo"] = s.SLO.String(), s.Met
		m["session_slo_attainment"], m["session_goodput"] = s.Attainment, s.Goodput
		if lvl > 0 {
			m["session_slo_attainment_ci"], m["session_goodput_ci"] = ciValue(s.AttainmentCI), ciValue(s.GoodputCI)
		}
	}
	return m
}

// distCI is dist with each figure's interval beside it at level ("<key>_ci":
// [lo, hi], or null where the sample cannot support one); dist alone for
// level 0.
func distCI(m stats.MetricSummary, level float64) map[string]any {
	d := dist(m)
	if level <= 0 {
		return d
	}
	d["mean_ci"], d["median_ci"] = ciValue(m.MeanCI), ciValue(m.MedianCI)
	for _, p := range m.Percentiles {
		d["p"+stats.PercentileName(p.P)+"_ci"] = ciValue(p.CI)
	}
	return d
}

// ciValue is an interval as JSON: [lo, hi], or nil for none.
func ciValue(iv stats.Interval) any {
	if !iv.OK() {
		return nil
	}
	return []float64{iv.Lo, iv.Hi}
}

// dist is a distribution's JSON: mean, median, its percentiles and max.
func dist(m stats.MetricSummary) map[string]any {
	d := map[string]any{"n": m.N, "mean": m.Mean, "median": m.Median, "max": m.Max}
	for _, p := range m.Percentiles {
		d["p"+stats.PercentileName(p.P)] = p.Value
	}
	return d
}

func p50p99(m stats.MetricSummary) string {
	return pOrDash(m, 50) + " / " + pOrDash(m, 99)
}

// p50p99CI is p50p99 with each figure's interval at level: "v [lo, hi]",
// or "v (too few)" where the sample cannot support one; p50p99 for 0.
func p50p99CI(m stats.MetricSummary, level float64) string {
	if level <= 0 || m.N == 0 {
		return p50p99(m)
	}
	one := func(p float64) string {
		v := pOrDash(m, p)
		if iv := m.PCI(p); iv.OK() {
			return v + " [" + f2(iv.Lo) + ", " + f2(iv.Hi) + "]"
		}
		return v + " (too few)"
	}
	return one(50) + " / " + one(99)
}

func pOrDash(m stats.MetricSummary, p float64) string {
	if m.N == 0 {
		return "-"
	}
	v, ok := m.P(p)
	if !ok {
		if p == 50 {
			v = m.Median
		} else {
			v = m.Max
		}
	}
	return f2(v)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
