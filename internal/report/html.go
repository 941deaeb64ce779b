package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// SweepMarks are the sweep's conclusions to mark on its curves.
type SweepMarks struct {
	// Knee is the index into HTMLInput.Levels of the load where P99 TTFT
	// turns up; -1 for none found.
	Knee int
	// GoodputPeak is the index of the level with the highest goodput; -1
	// for none.
	GoodputPeak int
	// WithinSLO is the index of the highest-load level that keeps the
	// SLO (sweep.Result.MaxWithinSLO); -1 for none. The sweep's charts
	// mark it, and the SLO limits as lines, so the load to plan for is
	// read off the page at a glance.
	WithinSLO int
}

// HTMLInput is what HTML renders. Only Levels is required.
type HTMLInput struct {
	// Title heads the page; empty means "goodput report".
	Title string
	// Meta describes the run; nil leaves the conditions out.
	Meta *runlog.Meta
	// Levels are the per-level summaries (one for a single run), in load
	// order; all share one stats.Options.
	Levels []breakdown.LevelSummary
	// Records yields the run's records once, for the distribution,
	// timeline and over-time charts; nil leaves those charts out.
	Records iter.Seq[*runlog.Record]
	// Findings are shown near the top when present: each with its
	// severity, rule id, message and evidence (as key = value).
	Findings []findings.Finding
	// SLA is the one-sentence service-level statement (findings'
	// SLASentence), shown first when set, in a box coloured by SLAVerdict.
	SLA string
	// SLAVerdict colours the SLA box: "met" (green), "missed" (red) or ""
	// to judge a single level by its own summary: met when at least 99 % of
	// its requests met every SLO constraint (findings.SLOTarget), neutral
	// without an SLO or with several levels.
	SLAVerdict string
	// Pareto is a Pareto sweep's points, drawn per length pair (nil: not
	// one).
	Pareto []breakdown.ParetoPoint
	// Sweep marks the knee and goodput peak on the sweep curves; nil means
	// the goodput peak is taken from the summaries and no knee is marked.
	Sweep *SweepMarks
	// Generated is when the report was made, shown in the footer (zero:
	// not shown, which keeps golden files stable).
	Generated time.Time
	// Sessions is the run's session summary (run.Result.Sessions), for the
	// sessions section: by-turn table and charts, and with Records the
	// session timeline. nil computes it from the records' sessions, judged
	// by no session SLO; a run without sessions has no such section.
	Sessions *stats.SessionSummary
	// Repeats is a repeated load's run-to-run spread (run.Result.Repeats),
	// shown as a table; nil for none.
	Repeats []stats.RepeatFigure
	// Server is what each scraped /metrics endpoint said during the run,
	// one entry per endpoint, for the "Server side" section's charts on the
	// timeline's time axis; nil or no snapshots leaves the section out.
	Server []breakdown.ServerSeries
	// Replicas is a simulated cluster's spread of the (focus) level over
	// its replicas, and Shards the shards of a run split over processes;
	// nil leaves each section out. They are shown as the terminal lays
	// them out.
	Replicas *breakdown.Replicas
	Shards   []breakdown.ShardRow
	// Classes is a gateway's account of the (focus) level by priority
	// class; nil leaves its section out.
	Classes *breakdown.Classes
	// ServerWindows are what each scraped endpoint saw over the (focus)
	// level, and TTFTSplit that level's TTFT split by the server's own
	// timing: the terminal's server block (preemptions, prefix-cache hit
	// rate, queue and prefill time), shown in the "Server side" section as
	// the terminal lays it out. Nil leaves each out.
	ServerWindows []ServerWindow
	TTFTSplit     *breakdown.TTFTSplit
	// Jobs is the (focus) level's agent jobs (a replayed agent trace):
	// counts, job times, each job and, with Records, a timeline of the
	// first jobs' requests; nil leaves the section out.
	Jobs *breakdown.Jobs
}

// ServerWindow is one scraped endpoint's account of a level, for
// HTMLInput.ServerWindows.
type ServerWindow struct {
	// Target names the endpoint as breakdown.ServerSeries.Target does.
	Target string
	// Window is what it said over the level; nil shows nothing.
	Window *servermetrics.Window
}

// chartBlock is one chart with its caption.
type chartBlock struct {
	Title   string
	SVG     template.HTML
	Caption string
}

type cell struct {
	Text  string
	Class string
	// CI, when set, is the figure's confidence interval, shown under it.
	CI string
}

type table struct {
	Caption string
	Head    []string
	Rows    [][]cell
}

type findingView struct {
	ID, Severity, Message string
	Evidence              string
}

type pageData struct {
	Title      string
	Subtitle   string
	SLA        string
	SLAClass   string
	Findings   []findingView
	Failures   *table
	Retries    *table
	Repeats    *table
	Summary    table
	Metrics    []table
	Buckets    []table
	Dist       []chartBlock
	Timeline   *chartBlock
	OverTime   []chartBlock
	Server     []chartBlock
	Sessions   *sessionView
	Jobs       *jobsView
	ServerText string // the terminal's server block ("": none)
	Replicas   string // the Replicas block as text ("": none)
	Classes    string // the Gateway block as text ("": none)
	Shards     string // the Shards block as text ("": none)
	Sweep      []chartBlock
	SweepLead  string // the sweep's conclusion above its curves ("": none)
	Conditions [][2]string
	Warnings   []string
	Notes      []string
	Footer     string
}

// LevelName names a level for tables, legends and headings: its label,
// else its offered load ("4 req/s", "c=16"); "run" when n, the number of
// levels, is 1.
func LevelName(l breakdown.LevelSummary, n int) string {
	if l.Level.Label != "" {
		return l.Level.Label
	}
	if n == 1 {
		return "run"
	}
	switch {
	case l.Level.RequestRate > 0 && l.Level.MaxConcurrency > 0:
		return fmt.Sprintf("%s req/s, c=%d", trimFloat(l.Level.RequestRate), l.Level.MaxConcurrency)
	case l.Level.RequestRate > 0:
		return trimFloat(l.Level.RequestRate) + " req/s"
	case l.Level.MaxConcurrency > 0:
		return fmt.Sprintf("c=%d", l.Level.MaxConcurrency)
	}
	return fmt.Sprintf("level %d", l.Index)
}

func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func metricLabel(name string) string {
	if info, ok := metricInfos[name]; ok {
		return info.label
	}
	return name
}

// HTML writes a self-contained report page to w: no script, no stylesheet,
// font or image from anywhere else; every chart is SVG drawn here and
// inlined. It shows the SLA sentence and findings, a summary per level, the
// latency tables and input-length buckets, CDFs of TTFT, TTP, TPOT and E2E,
// an ITL histogram, the per-request timeline, throughput and in-flight
// requests over time, the sessions (by turn, and a timeline of the first
// 50 sessions) when the run had any, and for several levels the sweep
// curves. Charts stay
// small at any run size: CDFs are downsampled to 400 points, the timeline to
// 400 requests, the ITL histogram drawn from a sample of 200,000 gaps.
func HTML(w io.Writer, in HTMLInput) error {
	if len(in.Levels) == 0 {
		return fmt.Errorf("html report: no summary to show")
	}
	d := pageData{Title: in.Title, SLA: in.SLA, SLAClass: "sla"}
	if v := slaVerdict(in); v != "" {
		d.SLAClass += " " + v
	}
	if d.Title == "" {
		d.Title = "goodput report"
	}
	if m := in.Meta; m != nil {
		d.Subtitle = strings.Join(nonEmpty(m.Model, m.Target, m.Command), " · ")
		if !m.Started.IsZero() {
			d.Subtitle += " · started " + m.Started.UTC().Format("2006-01-02 15:04:05 MST")
		}
	}
	for _, f := range in.Findings {
		d.Findings = append(d.Findings, findingView{ID: f.ID, Severity: string(f.Severity), Message: f.Message, Evidence: evidenceText(f.Evidence)})
	}
	d.Summary = summaryTable(in.Levels)
	for _, l := range in.Levels {
		d.Metrics = append(d.Metrics, metricsTable(l, len(in.Levels)))
		if len(l.Summary.Buckets) > 0 {
			d.Buckets = append(d.Buckets, bucketsTable(l, len(in.Levels)))
		}
		for _, wn := range l.Summary.Warnings {
			if len(in.Levels) > 1 {
				wn = LevelName(l, len(in.Levels)) + ": " + wn
			}
			d.Warnings = append(d.Warnings, wn)
		}
	}
	d.Conditions = conditionRows(in.Meta, in.Levels)
	for _, sw := range in.ServerWindows {
		// A real server's own count of accepted drafts, beside (or
		// instead of) the simulator's setting.
		if r, ok := SpecAcceptance(sw.Window); ok {
			name := "Speculative decoding, measured"
			if sw.Target != "" && sw.Target != "server" {
				name += " (" + sw.Target + ")"
			}
			d.Conditions = append(d.Conditions, [2]string{name, fmt.Sprintf("acceptance rate %s: %s of %s draft tokens accepted (server /metrics)",
				pctText(r), tok(sw.Window.Increase[servermetrics.SpecAcceptedTokens]), tok(sw.Window.Increase[servermetrics.SpecDraftTokens]))})
		}
	}

	slo := in.Levels[0].Summary.Options.SLO
	var errs []string
	add := func(dst *[]chartBlock, title string, svg template.HTML, caption string, err error) {
		if err != nil {
			errs = append(errs, err.Error())
			return
		}
		if svg != "" {
			*dst = append(*dst, chartBlock{Title: title, SVG: svg, Caption: caption})
		}
	}
	var cdSamples map[int]map[runlog.ErrorClass][]string
	var sessionRecs []runlog.Record
	if in.Records != nil {
		cd := collect(in.Records, slo, len(in.Levels))
		cdSamples, sessionRecs = cd.failSamples, cd.sessionRecs
		byIndex := map[int]breakdown.LevelSummary{}
		for _, l := range in.Levels {
			byIndex[l.Index] = l
		}
		names := make([]string, cd.nLevels)
		for i := range names {
			if l, ok := byIndex[i]; ok {
				names[i] = LevelName(l, len(in.Levels))
			} else {
				names[i] = fmt.Sprintf("level %d", i)
			}
		}
		for _, m := range chartMetrics {
			var ss []series
			n := 0
			for lvl, vals := range cd.values[m] {
				if len(vals) == 0 {
					continue
				}
				n += len(vals)
				name := ""
				if cd.nLevels > 1 {
					name = names[lvl]
				}
				ss = append(ss, series{name: name, xys: cdfPoints(vals, 400), color: seriesColor(lvl)})
			}
			title := "CDF of " + metricLabel(m)
			svg, err := lineChart(title, metricLabel(m)+" (ms)", "share of requests", ss, true, nil)
			add(&d.Dist, title, svg, fmt.Sprintf("%d requests.", n), err)
		}
		if len(cd.itl) > 0 {
			sorted := sortedCopy(cd.itl)
			hi := stats.Percentile(sorted, 99.5)
			if !(hi > 0) {
				hi = sorted[len(sorted)-1]
			}
			over := len(sorted) - sortIdxAbove(sorted, hi)
			svg, err := histogramChart("ITL histogram", "gap between token chunks (ms)", sorted, hi, 60)
			caption := fmt.Sprintf("%d gaps", cd.itlN)
			if cd.itlN > len(cd.itl) {
				caption += fmt.Sprintf(" (a uniform sample of %d drawn)", len(cd.itl))
			}
			caption += fmt.Sprintf("; the %d above P99.5 (%s ms) are off the chart.", over, fmtMs(hi))
			add(&d.Dist, "ITL histogram", svg, caption, err)
		}
		if svg, caption := timelineSVG(cd.spans, !slo.IsZero()); svg != "" {
			d.Timeline = &chartBlock{Title: "Per-request timeline", SVG: svg, Caption: caption}
		}
		tput, inflight := overTime(cd, 300)
		svg, err := lineChart("Output throughput over time", "time from run start (s)", "output tokens/s",
			[]series{{xys: tput, color: seriesColor(0)}}, true, nil)
		add(&d.OverTime, "Output throughput over time", svg, "Output tokens by chunk arrival time.", err)
		svg, err = lineChart("Requests in flight over time", "time from run start (s)", "requests in flight",
			[]series{{xys: inflight, color: seriesColor(1)}}, true, nil)
		add(&d.OverTime, "Requests in flight over time", svg, "Sent and not yet finished.", err)
	} else {
		d.Notes = append(d.Notes, "No per-request records were given: distributions, timeline and over-time charts are left out.")
	}
	serverCharts(&d, in.Server, add)
	d.Failures = failuresTable(in.Levels, cdSamples, in.Records != nil)
	d.Retries = retriesTable(in.Levels)
	d.Repeats = repeatsTable(in.Repeats)
	var blk bytes.Buffer
	for _, sw := range in.ServerWindows {
		if sw.Window == nil || sw.Window.Scrapes == 0 {
			continue
		}
		if sw.Target != "" && sw.Target != "server" {
			fmt.Fprintf(&blk, "(%s)\n", sw.Target)
		}
		_ = ServerTerminal(&blk, sw.Window) // a bytes.Buffer does not fail
	}
	_ = TTFTSplitTerminal(&blk, in.TTFTSplit)
	d.ServerText = blk.String()
	blk.Reset()
	if ReplicasTerminal(&blk, in.Replicas) == nil {
		d.Replicas = blk.String()
	}
	blk.Reset()
	if ClassesTerminal(&blk, in.Classes) == nil {
		d.Classes = blk.String()
	}
	blk.Reset()
	if ShardsTerminal(&blk, in.Shards) == nil {
		d.Shards = blk.String()
	}
	d.Sessions = sessionsView(in.Sessions, sessionRecs, in.Levels[0].Summary.Options.Percentiles)
	d.Jobs = jobsHTML(in.Jobs, in.Records)
	if len(in.Pareto) > 0 {
		svg, err := paretoChart(in.Pareto)
		add(&d.Sweep, "Pareto: goodput per GPU against tokens/s per user", svg,
			"Each length pair's frontier (joined) among its levels within the SLO; its other levels as points (beaten by a frontier level, or missing the SLO).", err)
	} else if len(in.Levels) > 1 && !repeated(in.Levels) {
		sweepCharts(&d, in, add)
	}
	for _, e := range errs {
		d.Notes = append(d.Notes, "A chart could not be drawn: "+e)
	}
	if !in.Generated.IsZero() {
		d.Footer = "Generated " + in.Generated.UTC().Format("2006-01-02 15:04:05 MST") + " by goodput."
	} else {
		d.Footer = "Generated by goodput."
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, d); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// slaVerdict is "met", "missed" or "" for the SLA box's colour.
func slaVerdict(in HTMLInput) string {
	if in.SLAVerdict == "met" || in.SLAVerdict == "missed" {
		return in.SLAVerdict
	}
	if in.SLAVerdict != "" || in.SLA == "" || len(in.Levels) != 1 {
		return ""
	}
	// Judged as the SLA sentence judges it.
	switch met, ok := findings.SLOMet(&in.Levels[0].Summary); {
	case !ok:
		return ""
	case met:
		return "met"
	}
	return "missed"
}

// retriesTable is each level's offered against original load: the
// client's retried attempts, attempts per request, original requests/s,
// attempts/s and goodput beside them; nil when no level retried.
func retriesTable(levels []breakdown.LevelSummary) *table {
	t := &table{Head: []string{"level", "requests", "retried attempts", "attempts per request", "original load (req/s)", "offered load (attempts/s)", "goodput (req/s)"}}
	for _, l := range levels {
		s := &l.Summary
		if s.RetriedAttempts == 0 {
			continue
		}
		amp := cell{Text: fmtMs(s.RetryAmplification)}
		if s.RetryAmplification >= 2 {
			amp.Class = "bad"
		}
		good := fmtMs(s.RequestThroughput)
		if s.SLO.Set {
			good = fmtMs(s.SLO.Goodput)
		}
		t.Rows = append(t.Rows, []cell{{Text: LevelName(l, len(levels))}, {Text: strconv.Itoa(s.Requests)},
			{Text: strconv.Itoa(s.RetriedAttempts)}, amp, {Text: fmtMs(s.OriginalRate)}, {Text: fmtMs(s.AttemptRate)}, {Text: good}})
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// failuresTable counts each level's failures by error class, with up to
// three distinct messages per class when the records were read; nil when
// nothing failed.
func failuresTable(levels []breakdown.LevelSummary, samples map[int]map[runlog.ErrorClass][]string, haveRecords bool) *table {
	t := &table{Head: []string{"error class", "failed", "share of requests", "sample messages"}}
	if len(levels) > 1 {
		t.Head = append([]string{"level"}, t.Head...)
	}
	for _, l := range levels {
		s := &l.Summary
		for _, c := range failureClasses(s.Failures) {
			n := s.Failures[c]
			msgs := "–"
			if ss := samples[l.Index]; len(ss[c]) > 0 {
				msgs = strings.Join(ss[c], " | ")
			} else if !haveRecords {
				msgs = "(no records given)"
			}
			row := []cell{{Text: string(c), Class: "bad"}, {Text: strconv.Itoa(n)},
				{Text: pctText(float64(n) / float64(max(s.Requests, 1)))}, {Text: msgs, Class: "msg"}}
			if len(levels) > 1 {
				row = append([]cell{{Text: LevelName(l, len(levels))}}, row...)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// sortIdxAbove returns the index of the first value above v in sorted.
func sortIdxAbove(sorted []float64, v float64) int {
	i, _ := slices.BinarySearchFunc(sorted, v, func(x, t float64) int {
		if x <= t {
			return -1
		}
		return 1
	})
	return i
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func evidenceText(ev map[string]any) string {
	return joinSorted(ev, " = ", "; ", evidenceValue)
}

// evidenceValue writes one evidence value for people: numbers in at most
// six significant digits, and a nested map as "k: v, k: v" in key order
// rather than Go's map[k:v] syntax.
func evidenceValue(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', 6, 64)
	case map[string]any:
		return mapText(v, func(x any) string { return evidenceValue(x) })
	case map[string]string:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = x
		}
		return mapText(m, func(x any) string { return fmt.Sprint(x) })
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = evidenceValue(x)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// mapText is a map as "k: v, k: v", keys sorted.
func mapText(m map[string]any, val func(any) string) string {
	return joinSorted(m, ": ", ", ", val)
}

// joinSorted writes m's pairs as key, kv, value, in key order, joined by
// sep.
func joinSorted(m map[string]any, kv, sep string, val func(any) string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + kv + val(m[k])
	}
	return strings.Join(parts, sep)
}

// settingsText shows the simulated engine's settings as "key value"
// pairs in key order, joined by " · " so the browser can wrap it: one
// JSON line ran off the page. Empty strings are left out.
func settingsText(e *runlog.Engine) string {
	var parts []string
	for _, f := range e.Fields() {
		v := f.Value
		switch x := v.(type) {
		case string:
			if x == "" {
				continue
			}
		case float64:
			v = strconv.FormatFloat(x, 'g', 6, 64)
		case map[string]any, []any: // read back
			b, err := json.Marshal(x)
			if err == nil {
				v = string(b)
			}
		case []runlog.EnginePool: // in memory, as its pools have always read
			ps := make([]string, len(x))
			for i, p := range x {
				ps[i] = fmt.Sprintf("map[gpu:%s model:%s name:%s replicas:%d tensor_parallel_size:%d]", p.GPU, p.Model, p.Name, p.Replicas, p.TensorParallelSize)
			}
			v = "[" + strings.Join(ps, " ") + "]"
		}
		parts = append(parts, fmt.Sprintf("%s %v", f.Key, v))
	}
	return strings.Join(parts, " · ")
}

func pctText(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + " %" }

func summaryTable(levels []breakdown.LevelSummary) table {
	t := table{Head: []string{"level", "requests", "failed", "duration (s)", "req/s", "output tok/s",
		"goodput (req/s)", "SLO met", "TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99", "E2E P99"}}
	for _, l := range levels {
		s := &l.Summary
		lvl := s.Options.Confidence
		good, att := cell{Text: "–"}, cell{Text: "–"}
		if s.SLO.Set {
			good = cell{Text: fmtMs(s.SLO.Goodput), CI: ciText(s.SLO.GoodputCI, lvl, fmtMs)}
			att = cell{Text: pctText(s.SLO.Attainment), CI: ciText(s.SLO.AttainmentCI, lvl, func(v float64) string {
				return strings.TrimSuffix(pctText(v), " %")
			})}
		}
		failed := cell{Text: strconv.Itoa(s.Failed)}
		if s.Failed > 0 {
			failed.Class = "bad"
		}
		p := func(name string, q float64) cell {
			c := cell{Text: pOf(s, name, q)}
			if c.Text != "–" {
				c.CI = ciText(s.MetricPCI(name, q), lvl, fmtMs)
			}
			return c
		}
		t.Rows = append(t.Rows, []cell{
			{Text: LevelName(l, len(levels))}, {Text: strconv.Itoa(s.Requests)}, failed,
			{Text: fmtMs(s.DurationS)}, {Text: fmtMs(s.RequestThroughput), CI: ciText(s.RequestThroughputCI, lvl, fmtMs)},
			{Text: fmtMs(s.OutputThroughput), CI: ciText(s.OutputThroughputCI, lvl, fmtMs)},
			good, att,
			p(stats.MetricTTFT, 50), p(stats.MetricTTFT, 99),
			p(stats.MetricTPOT, 50), p(stats.MetricTPOT, 99),
			p(stats.MetricE2E, 99),
		})
	}
	return t
}

// pOf is the p-th percentile of a metric in ms, computed when the summary
// did not ask for it (P99 tables need it whatever --metric-percentiles said
// only when it is there: otherwise "–").
func pOf(s *stats.Summary, name string, p float64) string {
	v, ok := s.MetricP(name, p)
	if !ok {
		return "–"
	}
	return fmtMs(v)
}

// ciText is an interval for a table cell, "[lo, hi]" formatted by f; "no
// interval" where the sample cannot support one; "" when none was asked
// for (level 0), so the cell shows the figure alone.
func ciText(iv stats.Interval, level float64, f func(float64) string) string {
	if level <= 0 {
		return ""
	}
	if !iv.OK() {
		return "no interval (too few)"
	}
	return "[" + f(iv.Lo) + ", " + f(iv.Hi) + "]"
}

func metricsTable(l breakdown.LevelSummary, n int) table {
	ps := l.Summary.Options.Percentiles
	head := []string{"metric (ms)", "n", "mean", "median", "std"}
	for _, p := range ps {
		head = append(head, "P"+stats.PercentileName(p))
	}
	head = append(head, "max")
	t := table{Head: head}
	if n > 1 {
		t.Caption = LevelName(l, n)
	}
	for _, m := range l.Summary.Metrics {
		if m.Name == stats.MetricITLToken && l.Summary.MultiTokenRecords == 0 {
			continue
		}
		lvl := l.Summary.Options.Confidence
		row := []cell{{Text: metricLabel(m.Name)}, {Text: strconv.Itoa(m.N)}, {Text: fmtMs(m.Mean), CI: ciText(m.MeanCI, lvl, fmtMs)},
			{Text: fmtMs(m.Median), CI: ciText(m.MedianCI, lvl, fmtMs)}, {Text: fmtMs(m.Std)}}
		for _, p := range ps {
			v, _ := m.P(p)
			row = append(row, cell{Text: fmtMs(v), CI: ciText(m.PCI(p), lvl, fmtMs)})
		}
		row = append(row, cell{Text: fmtMs(m.Max)})
		t.Rows = append(t.Rows, row)
	}
	return t
}

func bucketsTable(l breakdown.LevelSummary, n int) table {
	t := table{Head: []string{"input tokens", "requests", "failed", "SLO met", "TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99", "E2E P99"}}
	if n > 1 {
		t.Caption = LevelName(l, n)
	}
	for i := range l.Summary.Buckets {
		b := &l.Summary.Buckets[i]
		lvl := l.Summary.Options.Confidence
		c := func(name string, p float64) cell {
			m, ok := b.Metric(name)
			if !ok || m.N == 0 {
				return cell{Text: "–"}
			}
			v, ok := m.P(p)
			if !ok {
				return cell{Text: "–"}
			}
			return cell{Text: fmtMs(v), CI: ciText(m.PCI(p), lvl, fmtMs)}
		}
		att := cell{Text: "–"}
		if l.Summary.SLO.Set && b.Requests > 0 {
			att = cell{Text: pctText(b.Attainment), CI: ciText(b.AttainmentCI, lvl, func(v float64) string {
				return strings.TrimSuffix(pctText(v), " %")
			})}
		}
		t.Rows = append(t.Rows, []cell{{Text: b.Label}, {Text: strconv.Itoa(b.Requests)}, {Text: strconv.Itoa(b.Failed)}, att,
			c(stats.MetricTTFT, 50), c(stats.MetricTTFT, 99), c(stats.MetricTPOT, 50), c(stats.MetricTPOT, 99), c(stats.MetricE2E, 99)})
	}
	return t
}

func conditionRows(meta *runlog.Meta, levels []breakdown.LevelSummary) [][2]string {
	var rows [][2]string
	addRow := func(k, v string) {
		if v != "" {
			rows = append(rows, [2]string{k, v})
		}
	}
	if meta != nil {
		addRow("Model", meta.Model)
		addRow("Target", meta.Target)
		addRow("Backend, endpoint", strings.TrimSpace(meta.Backend+" "+meta.Endpoint))
		addRow("Dataset", meta.Dataset)
		addRow("Command", meta.Command)
		addRow("Seed", strconv.FormatInt(meta.Seed, 10))
		if !meta.Simulated.IsZero() {
			addRow("Simulated engine", settingsText(&meta.Simulated))
			addRow("Speculative decoding", specDecText(&meta.Simulated))
		}
		keys := make([]string, 0, len(meta.Metadata))
		for k := range meta.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			addRow("Metadata "+k, meta.Metadata[k])
		}
	}
	for _, l := range levels {
		lv := l.Level
		name := "Load"
		if len(levels) > 1 {
			name = "Load, " + LevelName(l, len(levels))
		}
		addRow(name, loadText(&lv))
	}
	if len(levels) > 0 {
		s := &levels[0].Summary
		addRow("SLO (ms)", s.Options.SLO.String())
		if s.InputLen.N > 0 {
			p50, _ := s.InputLen.P(50)
			p99, _ := s.InputLen.P(99)
			addRow("Input length (tok) P50 / P99", tok(p50)+" / "+tok(p99))
		}
		if s.OutputLen.N > 0 {
			p50, _ := s.OutputLen.P(50)
			p99, _ := s.OutputLen.P(99)
			addRow("Output length (tok) P50 / P99", tok(p50)+" / "+tok(p99))
		}
		if s.CachedTokens > 0 {
			addRow("Cached prompt tokens", fmt.Sprintf("%d (%s)", s.CachedTokens, pctText(s.CachedShare)))
		}
	}
	return rows
}

// loadAxis picks the x axis of the sweep curves: the offered request rate
// when every level has one, else the concurrency cap, else the level index.
func loadAxis(levels []breakdown.LevelSummary) (string, func(breakdown.LevelSummary) float64) {
	allRate, allConc := true, true
	for _, l := range levels {
		allRate = allRate && l.Level.RequestRate > 0
		allConc = allConc && l.Level.MaxConcurrency > 0
	}
	switch {
	case allRate:
		return "offered load (req/s)", func(l breakdown.LevelSummary) float64 { return l.Level.RequestRate }
	case allConc:
		return "max concurrency", func(l breakdown.LevelSummary) float64 { return float64(l.Level.MaxConcurrency) }
	}
	return "level", func(l breakdown.LevelSummary) float64 { return float64(l.Index) }
}

func sweepCharts(d *pageData, in HTMLInput, add func(*[]chartBlock, string, template.HTML, string, error)) {
	xLabel, xOf := loadAxis(in.Levels)
	slo := in.Levels[0].Summary.Options.SLO
	pts := func(f func(*stats.Summary) (float64, bool)) plotter.XYs {
		var xys plotter.XYs
		for _, l := range in.Levels {
			if v, ok := f(&l.Summary); ok {
				xys = append(xys, plotter.XY{X: xOf(l), Y: v})
			}
		}
		return xys
	}
	// errs are the intervals of the points pts(f) gives, index for index.
	errs := func(f func(*stats.Summary) (float64, bool), ci func(*stats.Summary) stats.Interval) []stats.Interval {
		var out []stats.Interval
		for _, l := range in.Levels {
			if _, ok := f(&l.Summary); ok {
				out = append(out, ci(&l.Summary))
			}
		}
		return out
	}
	pct := func(name string, p float64) func(*stats.Summary) (float64, bool) {
		return func(s *stats.Summary) (float64, bool) { return s.MetricP(name, p) }
	}
	pctCI := func(name string, p float64) []stats.Interval {
		return errs(pct(name, p), func(s *stats.Summary) stats.Interval { return s.MetricPCI(name, p) })
	}
	marks := SweepMarks{Knee: -1, GoodputPeak: -1, WithinSLO: -1}
	if in.Sweep != nil {
		marks = *in.Sweep
	} else if in.Levels[0].Summary.SLO.Set {
		best := -1.0
		for i, l := range in.Levels {
			if g := l.Summary.SLO.Goodput; g > best {
				best, marks.GoodputPeak = g, i
			}
			if met, ok := findings.SLOMet(&l.Summary); ok && met {
				marks.WithinSLO = i
			}
		}
	}
	var vm []vmark
	in3 := func(i int) bool { return i >= 0 && i < len(in.Levels) }
	if k := marks.Knee; in3(k) {
		vm = append(vm, vmark{name: "knee (" + LevelName(in.Levels[k], len(in.Levels)) + ")", x: xOf(in.Levels[k]), color: seriesColor(3)})
	}
	if g := marks.GoodputPeak; in3(g) {
		vm = append(vm, vmark{name: "goodput peak (" + LevelName(in.Levels[g], len(in.Levels)) + ")", x: xOf(in.Levels[g]), color: seriesColor(2)})
	}
	if w := marks.WithinSLO; in3(w) {
		vm = append(vm, vmark{name: "highest load within SLO (" + LevelName(in.Levels[w], len(in.Levels)) + ")", x: xOf(in.Levels[w]), color: seriesColor(7), solid: true})
		d.SweepLead = fmt.Sprintf("Recommended operating point, the highest load within SLO: %s (%s req/s meeting the SLO, attainment %s).",
			LevelName(in.Levels[w], len(in.Levels)), fmtMs(in.Levels[w].Summary.SLO.Goodput), pctText(in.Levels[w].Summary.SLO.Attainment))
	} else if in.Levels[0].Summary.SLO.Set {
		d.SweepLead = "No level kept the SLO."
	}
	// The bars say how far each point could move on a rerun; said once
	// per chart so a reader knows they are intervals, not spreads.
	barsCaption := ""
	if lv := in.Levels[0].Summary.Options.Confidence; lv > 0 {
		barsCaption = "Bars are " + levelText(lv) + " % confidence intervals."
	}
	limits := map[string]time.Duration{stats.MetricTTFT: slo.TTFT, stats.MetricTPOT: slo.TPOT}
	for _, m := range []string{stats.MetricTTFT, stats.MetricTPOT} {
		title := metricLabel(m) + " vs load"
		ss := []series{
			{name: "P50", xys: pts(pct(m, 50)), errs: pctCI(m, 50), color: seriesColor(0), points: true},
			{name: "P99", xys: pts(pct(m, 99)), errs: pctCI(m, 99), color: seriesColor(1), points: true, dashed: true},
		}
		caption := ""
		if lim := limits[m]; lim > 0 {
			ms := float64(lim) / float64(time.Millisecond)
			ss = append(ss, series{name: "SLO " + trimFloat(ms) + " ms", hline: ms, color: sloRed})
			caption = "The red line is the SLO's " + metricLabel(m) + " limit."
		}
		caption = joinSentences(caption, barsCaption)
		svg, err := lineChart(title, xLabel, metricLabel(m)+" (ms)", ss, true, vm)
		add(&d.Sweep, title, svg, caption, err)
	}
	thr := func(s *stats.Summary) (float64, bool) { return s.RequestThroughput, true }
	ss := []series{{name: "throughput", xys: pts(thr), errs: errs(thr, func(s *stats.Summary) stats.Interval { return s.RequestThroughputCI }),
		color: seriesColor(0), points: true}}
	if in.Levels[0].Summary.SLO.Set {
		good := func(s *stats.Summary) (float64, bool) { return s.SLO.Goodput, s.SLO.Set }
		ss = append(ss, series{name: "goodput", xys: pts(good), errs: errs(good, func(s *stats.Summary) stats.Interval { return s.SLO.GoodputCI }),
			color: seriesColor(2), points: true})
	}
	svg, err := lineChart("Throughput and goodput vs load", xLabel, "requests/s", ss, true, vm)
	add(&d.Sweep, "Throughput and goodput vs load", svg, barsCaption, err)
}

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// pageHTML is the report page. The stylesheet is inline and there is no
// script at all: the page must open offline, from a file, years later.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{template "css"}}</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Subtitle}}<p class="sub">{{.Subtitle}}</p>{{end}}
{{if .SLA}}<p class="{{.SLAClass}}">{{.SLA}}</p>{{end}}
{{if .Sweep}}<h2>Load sweep</h2>
{{if .SweepLead}}<p class="lead">{{.SweepLead}}</p>{{end}}
<div class="grid">{{range .Sweep}}{{template "chart" .}}{{end}}</div>{{end}}
{{if .Findings}}<h2>Findings</h2>
<ul class="findings">{{range .Findings}}<li class="sev-{{.Severity}}"><span class="badge">{{.Severity}}</span><b>{{.ID}}</b> {{.Message}}{{if .Evidence}}<span class="ev">{{.Evidence}}</span>{{end}}</li>
{{end}}</ul>{{end}}
<h2>Summary</h2>
{{template "table" .Summary}}
{{with .Failures}}<h2>Failures</h2>
{{template "table" .}}{{end}}{{with .Retries}}<h2>Client retries</h2>
{{template "table" .}}{{end}}{{with .Repeats}}<h2>Run-to-run spread</h2>
{{template "table" .}}{{end}}
{{if .Dist}}<h2>Latency distributions</h2>
<div class="grid">{{range .Dist}}{{template "chart" .}}{{end}}</div>{{end}}
{{with .Timeline}}<h2>Per-request timeline</h2>
{{template "chart" .}}{{end}}
{{if .OverTime}}<h2>Over time</h2>
<div class="grid">{{range .OverTime}}{{template "chart" .}}{{end}}</div>{{end}}
{{if or .Server .ServerText}}<h2>Server side</h2>
{{with .ServerText}}<pre class="block">{{.}}</pre>
{{end}}{{if .Server}}<div class="grid">{{range .Server}}{{template "chart" .}}{{end}}</div>{{end}}{{end}}
{{with .Replicas}}<h2>Replicas</h2>
<pre class="block">{{.}}</pre>{{end}}{{with .Classes}}
<h2>Gateway</h2>
<pre class="block">{{.}}</pre>{{end}}
{{with .Shards}}<h2>Shards</h2>
<pre class="block">{{.}}</pre>{{end}}
{{with .Sessions}}<h2>Sessions</h2>
{{template "table" .Summary}}
{{template "table" .Turns}}
{{if .Charts}}<div class="grid">{{range .Charts}}{{template "chart" .}}{{end}}</div>{{end}}
{{with .Timeline}}<h3>{{.Title}}</h3>
{{template "chart" .}}{{end}}
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>{{end}}{{end}}
{{with .Jobs}}<h2>Agent jobs</h2>
{{template "table" .Summary}}
{{with .Spread}}{{template "table" .}}{{end}}
{{template "table" .Jobs}}
{{with .Timeline}}<h3>{{.Title}}</h3>
{{template "chart" .}}{{end}}
{{end}}<h2>Latency (ms)</h2>
{{range .Metrics}}{{template "table" .}}{{end}}
{{if .Buckets}}<h2>By input length (ms)</h2>
{{range .Buckets}}{{template "table" .}}{{end}}{{end}}
<h2>Conditions</h2>
<table class="cond">{{range .Conditions}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>
{{if .Warnings}}<h2>Warnings</h2>
<ul>{{range .Warnings}}<li class="warn">{{.}}</li>
{{end}}</ul>{{end}}
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>{{end}}
<footer>{{.Footer}}</footer>
</main>
</body>
</html>
{{define "table"}}<table>{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}{{if .CI}}<br><span class="ci">{{.CI}}</span>{{end}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{define "css"}}body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif;margin:0;color:#1b1b1b;background:#fff}
main{max-width:1360px;box-sizing:border-box;margin:0 auto;padding:16px 24px 40px}
h1{font-size:1.5rem;margin:.2rem 0}
pre.block{font-size:.82rem;background:#f7f7f7;border:1px solid #e3e3e3;padding:.6rem .8rem;overflow-x:auto}
h2{font-size:1.15rem;margin:1.6rem 0 .5rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.sub{color:#555;margin:0 0 .8rem}
.sla{font-size:1.1rem;background:#f3f5f8;border-left:4px solid #5b6b7f;padding:.6rem .9rem}
.sla.met{background:#eef6ee;border-color:#238b45}
.sla.missed{background:#fcefee;border-color:#cb181d}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.85rem;display:block;max-width:100%;overflow-x:auto}
th,td{padding:.25rem .45rem;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}
th{white-space:normal;vertical-align:bottom;min-width:3.2em}
th:first-child,td:first-child{text-align:left}
th{background:#f6f6f6}
caption{text-align:left;font-weight:600;padding:.2rem 0}
td.bad{color:#b00}
.ci{font-size:.72rem;color:#666;white-space:nowrap}
table.cond td{text-align:left;white-space:normal}
td.msg{white-space:normal;text-align:left;font-family:ui-monospace,monospace;font-size:.8rem;max-width:60rem}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:12px 20px}
figure{margin:0}
figcaption{font-size:.85rem;color:#555}
svg.chart{width:100%;height:auto;display:block}
ul.findings{list-style:none;padding:0}
ul.findings li{margin:.35rem 0;padding:.4rem .6rem;border-left:4px solid #999;background:#fafafa}
ul.findings li.sev-warning{border-color:#e69f00}
ul.findings li.sev-critical{border-color:#cb181d}
ul.findings li.sev-info{border-color:#0072b2}
.badge{font-size:.75rem;text-transform:uppercase;color:#555;margin-right:.4rem}
.ev{display:block;font-size:.8rem;color:#666}
.warn{color:#8a5a00}
.lead{font-weight:600}
footer{margin-top:2rem;color:#888;font-size:.8rem}
{{end}}{{define "chart"}}<figure>{{.SVG}}{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}`

// specDecText is the simulated engine's speculative decoding as people
// read it, e.g. "4 draft tokens per step (ngram draft), acceptance rate
// 0.7 per draft token (simulated)"; "off" when the settings name none (the
// simulator writes them only when it drafts).
func specDecText(e *runlog.Engine) string {
	if e.NumSpeculativeTokens <= 0 {
		return "off"
	}
	s := strconv.Itoa(e.NumSpeculativeTokens) + " draft tokens per step"
	if e.SpecDraft != "" {
		s += " (" + e.SpecDraft + " draft)"
	}
	return s + ", acceptance rate " + strconv.FormatFloat(e.SpecAcceptance, 'g', 4, 64) + " per draft token (simulated)"
}

// joinSentences joins two captions with a space, either may be empty.
func joinSentences(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + " " + b
}

// repeated says the levels are repeats of one load (--repeats): no load
// axis to draw, no peak or operating point among them.
func repeated(levels []breakdown.LevelSummary) bool {
	for _, l := range levels {
		if l.Level.Repeat == 0 {
			return false
		}
	}
	return len(levels) > 0
}
