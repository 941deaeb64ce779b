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
	t.line("Session duration (ms) P50/P99:", p50p99(s.Duration))
	t.line("Turn TTFT (ms) P50/P99:", p50p99(s.TurnTTFT))
	t.line("Turn TTP (ms) P50/P99:", p50p99(s.TurnTTP))
	t.line("Time: model / tool / think:", fmt.Sprintf("%s %% / %s %% / %s %%", f1(100*s.ModelShare), f1(100*s.ToolShare), f1(100*s.ThinkShare)))
	t.line("TTFT per 1K tokens of history (ms):", f2(s.TTFTPer1KHistory))
	if s.HistoryCut > 0 {
		t.line("Turns sent with history cut (context cap):", strconv.Itoa(s.HistoryCut))
	}
	if !s.SLO.IsZero() {
		t.line("Sessions meeting SLO ("+s.SLO.String()+"):", pct(s.Met, s.Sessions))
		t.line("Session goodput (sessions/s):", f2(s.Goodput))
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
	turns := make([]map[string]any, len(s.Turns))
	for i, ts := range s.Turns {
		turns[i] = map[string]any{"turn": ts.Turn, "sessions": ts.N, "ttft_ms": dist(ts.TTFT), "ttp_ms": dist(ts.TTP),
			"e2e_ms": dist(ts.E2E), "prompt_tokens": dist(ts.Prompt), "cached_share": ts.CachedShare}
	}
	m := map[string]any{
		"sessions": s.Sessions, "completed": s.Completed, "failed": s.Failed,
		"duration_ms": dist(s.Duration), "turn_ttft_ms": dist(s.TurnTTFT), "turn_ttp_ms": dist(s.TurnTTP), "turns_per_session": dist(s.TurnsPerSession),
		"model_share": s.ModelShare, "tool_share": s.ToolShare, "think_share": s.ThinkShare,
		"ttft_ms_per_1k_history_tokens": s.TTFTPer1KHistory, "turns": turns, "turns_history_cut": s.HistoryCut,
	}
	if !s.SLO.IsZero() {
		m["session_slo"], m["sessions_meeting_slo"] = s.SLO.String(), s.Met
		m["session_slo_attainment"], m["session_goodput"] = s.Attainment, s.Goodput
	}
	return m
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
