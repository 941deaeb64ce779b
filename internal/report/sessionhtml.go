package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// The HTML report's sessions section: a summary row, a table and charts by
// turn index (turn TTFT and TTP, P50 with a P50–P99 band; prompt and
// cached tokens; the cached share), and a timeline with one row per
// session, its time split into model, tool and think time.

// maxSessionRows caps the session timeline's rows: the first sessions by
// start, the caption saying how many are left out.
const maxSessionRows = 50

// sessionView is the sessions section of the page.
type sessionView struct {
	Summary  table
	Turns    table
	Charts   []chartBlock
	Timeline *chartBlock
	Notes    []string
}

// sessionsView builds the sessions section from s (the run's session
// summary) and recs (the session records, for the timeline); nil when there
// are no sessions. Without s the summary is computed from recs with no
// session SLO, percentiles ps.
func sessionsView(s *stats.SessionSummary, recs []runlog.Record, ps []float64) *sessionView {
	if s == nil || s.Sessions == 0 {
		if len(recs) == 0 {
			return nil
		}
		sum := stats.SummarizeSessions(recs, ps, stats.SessionSLO{}, 0)
		s = &sum
	}
	if s.Sessions == 0 {
		return nil
	}
	v := &sessionView{Summary: sessionSummaryTable(s), Turns: turnsTable(s)}
	for _, c := range turnCharts(s) {
		if c.err != nil {
			v.Notes = append(v.Notes, "A chart could not be drawn: "+c.err.Error())
			continue
		}
		if c.svg != "" {
			v.Charts = append(v.Charts, chartBlock{Title: c.title, SVG: c.svg, Caption: c.caption})
		}
	}
	if rows := sessionRows(recs); len(rows) > 0 {
		svg, caption := sessionTimelineSVG(rows)
		v.Timeline = &chartBlock{Title: "Session timeline", SVG: svg, Caption: caption}
	} else {
		v.Notes = append(v.Notes, "No per-request records were given: the session timeline is left out.")
	}
	return v
}

// pv is a percentile of m for a chart or table: the median stands in for
// P50; ok is false when m is empty or lacks p.
func pv(m stats.MetricSummary, p float64) (float64, bool) {
	if m.N == 0 {
		return 0, false
	}
	if v, ok := m.P(p); ok {
		return v, true
	}
	if p == 50 {
		return m.Median, true
	}
	return 0, false
}

// pCell is pv as a table cell with its interval at level (0: none), "–"
// when absent.
func pCell(m stats.MetricSummary, p, level float64) cell {
	if v, ok := pv(m, p); ok {
		return cell{Text: fmtMs(v), CI: ciText(m.PCI(p), level, fmtMs)}
	}
	return cell{Text: "–"}
}

func sessionSummaryTable(s *stats.SessionSummary) table {
	t := table{Head: []string{"sessions", "completed", "failed", "turns / session", "duration P50 (ms)", "duration P99 (ms)",
		"turn TTFT P50", "turn TTFT P99", "turn TTP P50", "turn TTP P99", "model / tool / think",
		"TTFT per 1K history tokens (ms)", "session SLO", "SLO met", "session goodput (sessions/s)"}}
	failed := cell{Text: strconv.Itoa(s.Failed)}
	if s.Failed > 0 {
		failed.Class = "bad"
	}
	lvl := s.Confidence
	slo, met, good := "–", cell{Text: "–"}, cell{Text: "–"}
	if !s.SLO.IsZero() {
		slo = s.SLO.String()
		met = cell{Text: pctText(s.Attainment), CI: ciText(s.AttainmentCI, lvl, func(v float64) string { return strings.TrimSuffix(pctText(v), " %") })}
		good = cell{Text: fmtMs(s.Goodput), CI: ciText(s.GoodputCI, lvl, fmtMs)}
	}
	t.Rows = [][]cell{{
		{Text: strconv.Itoa(s.Sessions)}, {Text: strconv.Itoa(s.Completed)}, failed, {Text: f2(s.TurnsPerSession.Mean)},
		pCell(s.Duration, 50, lvl), pCell(s.Duration, 99, lvl), pCell(s.TurnTTFT, 50, lvl), pCell(s.TurnTTFT, 99, lvl),
		pCell(s.TurnTTP, 50, lvl), pCell(s.TurnTTP, 99, lvl),
		{Text: pctText(s.ModelShare) + " / " + pctText(s.ToolShare) + " / " + pctText(s.ThinkShare)},
		{Text: fmtMs(s.TTFTPer1KHistory), CI: ciText(s.TTFTPer1KHistoryCI, lvl, fmtMs)}, {Text: slo}, met, good,
	}}
	return t
}

func turnsTable(s *stats.SessionSummary) table {
	t := table{Caption: "By turn (ms)", Head: []string{"turn", "sessions", "TTFT P50", "TTFT P95", "TTFT P99",
		"TTP P50", "TTP P95", "TTP P99", "prompt tokens P50", "cached share"}}
	for _, ts := range s.Turns {
		prompt := "–"
		if v, ok := pv(ts.Prompt, 50); ok {
			prompt = tok(v)
		}
		t.Rows = append(t.Rows, []cell{{Text: strconv.Itoa(ts.Turn)}, {Text: strconv.Itoa(ts.N)},
			pCell(ts.TTFT, 50, s.Confidence), pCell(ts.TTFT, 95, s.Confidence), pCell(ts.TTFT, 99, s.Confidence),
			pCell(ts.TTP, 50, s.Confidence), pCell(ts.TTP, 95, s.Confidence), pCell(ts.TTP, 99, s.Confidence),
			{Text: prompt}, {Text: pctText(ts.CachedShare)}})
	}
	return t
}

type drawnChart struct {
	title, caption string
	svg            template.HTML
	err            error
}

// turnCharts draws the by-turn charts: turn TTFT and TTP (P50 and the
// P50–P99 band, P50–max when P99 was not asked for), prompt tokens (P50)
// with the mean cached tokens, and the cached share.
func turnCharts(s *stats.SessionSummary) []drawnChart {
	hiP, hiName := 99.0, "P99"
	for _, ts := range s.Turns {
		if _, ok := ts.TTFT.P(99); ts.TTFT.N > 0 && !ok {
			hiP, hiName = 100, "max"
		}
	}
	hiOf := func(m stats.MetricSummary) (float64, bool) {
		if hiP == 100 {
			return m.Max, m.N > 0
		}
		return pv(m, hiP)
	}
	latency := func(name string, get func(stats.TurnSummary) stats.MetricSummary, c int) band {
		b := band{name: name + " P50", bandName: name + " P50–" + hiName, color: seriesColor(c)}
		for _, ts := range s.Turns {
			m := get(ts)
			mid, ok1 := pv(m, 50)
			hi, ok2 := hiOf(m)
			if !ok1 || !ok2 {
				continue
			}
			x := float64(ts.Turn)
			b.mid, b.lo, b.hi = append(b.mid, plotter.XY{X: x, Y: mid}), append(b.lo, plotter.XY{X: x, Y: mid}), append(b.hi, plotter.XY{X: x, Y: hi})
		}
		return b
	}
	var out []drawnChart
	title := "Turn TTFT and TTP by turn"
	svg, err := bandChart(title, "turn", "ms", []band{
		latency("TTFT", func(ts stats.TurnSummary) stats.MetricSummary { return ts.TTFT }, 0),
		latency("TTP", func(ts stats.TurnSummary) stats.MetricSummary { return ts.TTP }, 1),
	}, true)
	out = append(out, drawnChart{title: title, svg: svg, err: err,
		caption: "Turn TTFT: the turn's first request's TTFT; turn TTP: its send → the first visible token of the turn's answer, tool rounds included. Shaded: P50–" + hiName + " over the sessions that reached the turn."})

	prompt := band{name: "prompt tokens P50", color: seriesColor(2)}
	cached := band{name: "cached tokens (mean)", color: seriesColor(4)}
	share := band{name: "cached share", color: seriesColor(4)}
	for _, ts := range s.Turns {
		x := float64(ts.Turn)
		if v, ok := pv(ts.Prompt, 50); ok {
			prompt.mid = append(prompt.mid, plotter.XY{X: x, Y: v})
		}
		if ts.Prompt.N > 0 {
			cached.mid = append(cached.mid, plotter.XY{X: x, Y: ts.CachedShare * ts.Prompt.Mean})
		}
		share.mid = append(share.mid, plotter.XY{X: x, Y: 100 * ts.CachedShare})
	}
	title = "Prompt tokens by turn"
	svg, err = bandChart(title, "turn", "tokens", []band{prompt, cached}, true)
	out = append(out, drawnChart{title: title, svg: svg, err: err,
		caption: "The turn's first request: the history grows with the turn, and a prefix cache serves what it has seen."})
	title = "Cached share by turn"
	svg, err = bandChart(title, "turn", "% of prompt tokens cached", []band{share}, true)
	out = append(out, drawnChart{title: title, svg: svg, err: err,
		caption: "Prompt tokens served from the prefix cache over all prompt tokens of the turn's first requests."})
	return out
}

// segKind is what a stretch of a session's time was spent on.
type segKind int

const (
	segModel  segKind = iota // a request in flight: sent → its end
	segTool                  // a tool-call answer's end → the turn's next request
	segThink                 // a turn's end → the next turn's first send
	segFailed                // a failed request in flight
)

// segment is one stretch of a session's time, ns from the run start.
type segment struct {
	kind   segKind
	t0, t1 int64
}

// sessionRow is one session of the timeline.
type sessionRow struct {
	id         string
	start, end int64
	segs       []segment
}

// sessionRows splits each session of recs into model, tool and think
// segments, as stats.SummarizeSessions splits its time (warm-ups and
// records outside a session are ignored), sessions in order of start.
// Tool time is the whole gap from a tool-call answer's end to the next
// round's send (Record.ToolLatencyNs, the tools' own time, lies within
// it).
func sessionRows(recs []runlog.Record) []sessionRow {
	by := map[string][]*runlog.Record{}
	for i := range recs {
		r := &recs[i]
		if r.SessionID != "" && !r.Warmup {
			by[r.SessionID] = append(by[r.SessionID], r)
		}
	}
	rows := make([]sessionRow, 0, len(by))
	for id, rs := range by {
		slices.SortStableFunc(rs, func(a, b *runlog.Record) int {
			return cmp.Or(cmp.Compare(a.Turn, b.Turn), cmp.Compare(a.ToolRound, b.ToolRound), cmp.Compare(a.Sent, b.Sent))
		})
		row := sessionRow{id: id, start: math.MaxInt64, end: math.MinInt64}
		var turnEnd int64
		for k, r := range rs {
			end := max(r.End, r.Sent)
			if k > 0 {
				prev := rs[k-1]
				switch {
				case r.Turn == prev.Turn && r.ToolRound > prev.ToolRound && r.Sent > prev.End:
					row.segs = append(row.segs, segment{segTool, prev.End, r.Sent})
				case r.Turn != prev.Turn && r.Sent > turnEnd:
					row.segs = append(row.segs, segment{segThink, turnEnd, r.Sent})
				}
			}
			if k == 0 || r.Turn != rs[k-1].Turn {
				turnEnd = end
			}
			turnEnd = max(turnEnd, end)
			kind := segModel
			if !r.OK() {
				kind = segFailed
			}
			row.segs = append(row.segs, segment{kind, r.Sent, end})
			row.start, row.end = min(row.start, r.Sent), max(row.end, end)
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b sessionRow) int { return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.id, b.id)) })
	return rows
}

// Session timeline colours: model time blue, tool time orange, think time
// light grey, a failed request red.
var segColors = [...]string{segModel: "#0072b2", segTool: "#e69f00", segThink: "#cfcfcf", segFailed: "#cb181d"}

var segNames = [...]string{segModel: "model (request in flight)", segTool: "tool (after a tool call)", segThink: "think (between turns)", segFailed: "failed request"}

// sessionTimelineSVG draws the first maxSessionRows rows, one bar per
// session split into its segments, with a caption saying what is shown.
func sessionTimelineSVG(all []sessionRow) (template.HTML, string) {
	rows := all[:min(len(all), maxSessionRows)]
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		lo, hi = min(lo, float64(r.start)), max(hi, float64(r.end))
	}
	if !(hi > lo) {
		hi = lo + 1
	}
	c := newRowChart("session timeline", len(rows), 104, lo, hi)
	for k, r := range rows {
		c.label(k, r.id, 14)
		for _, sg := range r.segs {
			c.bar(sg.t0, sg.t1, c.rowY(k)+1, rowChartRowH-2, segColors[sg.kind])
		}
	}
	legend := make([][2]string, len(segNames))
	for k, name := range segNames {
		legend[k] = [2]string{segColors[k], name}
	}
	svg := c.finish(legend)
	caption := fmt.Sprintf("All %d sessions, by start.", len(all))
	if len(all) > len(rows) {
		caption = fmt.Sprintf("The first %d of %d sessions by start; the other %d are left out so the chart stays readable.",
			len(rows), len(all), len(all)-len(rows))
	}
	caption += " Model: a request's send → its end; tool: a tool-call answer's end → the turn's next request; think: a turn's end → the next turn's first send."
	// The SVG is generated here from numbers and escaped labels.
	return svg, caption
}
