package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// statLabel renders a Delta's statistic: "mean", "P99".
func statLabel(st string) string {
	if strings.HasPrefix(st, "p") {
		return "P" + st[1:]
	}
	return st
}

// changeText is a Delta's change: percentage points for a share (SLO
// attainment), else relative to A.
func changeText(d compare.Delta) string {
	if d.Unit == compare.UnitShare {
		return compare.Signed(d.Points()) + " pp"
	}
	return relText(d.Rel)
}

func relText(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	return compare.Signed(100*r) + " %"
}

func ciCell(d compare.Delta) string {
	if !d.HasCI {
		return "–"
	}
	return "[" + compare.Signed(d.Lo) + ", " + compare.Signed(d.Hi) + "]"
}

// shareText renders a 0–1 share as a percentage.
func shareText(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + " %" }

// CompareTerminal writes the comparison as text: the runs, a table of
// deltas (B − A) with intervals and verdicts, throughput, goodput under the
// common SLO, the sessions' deltas when both runs had sessions, the user's
// view and the notes. It returns the writer's error.
func CompareTerminal(w io.Writer, c *compare.Comparison) error {
	t := &term{}
	b := &t.b
	t.header(" goodput compare ", '=')
	fmt.Fprintf(b, "A: %s\nB: %s\n", c.A, c.B)
	if c.Samples {
		fmt.Fprintf(b, "Bootstrap: %d resamples of each run's requests, %s %% percentile intervals of B − A, seed %d\n",
			c.Options.Resamples, strconv.FormatFloat(100*c.Options.Confidence, 'f', -1, 64), c.Options.Seed)
		// Why a row whose interval excludes zero may still say "no
		// significant difference".
		fmt.Fprintf(b, "Correlated requests count as fewer (batch means); verdicts hold for the %d distinct rows together (Holm)\n", c.Family)
	}
	deltaTable(b, c.Deltas)
	if r := c.Repeats; r != nil {
		t.header(fmt.Sprintf("Between runs (%d and %d repeats)", r.NA, r.NB), '-')
		fmt.Fprintf(b, "Each figure once a repeat: B's mean against A's, Welch's t interval; verdicts hold for the %d rows together (Holm)\n", r.Family)
		deltaTable(b, r.Deltas)
	}
	t.header("Throughput", '-')
	for _, d := range c.Throughput {
		label := map[string]string{"request_throughput": "Request throughput (req/s):", "output_throughput": "Output token throughput (tok/s):"}[d.Metric]
		fmt.Fprintf(b, "%-*s %s → %s (%s)\n", labelWidth, label, f2(d.A), f2(d.B), relText(d.Rel))
	}
	if g := c.Goodput; g != nil {
		t.header("Goodput", '-')
		fmt.Fprintf(b, "%-*s %s\n", labelWidth, "SLO (ms):", g.SLO)
		fmt.Fprintf(b, "%-*s %s → %s (%s)%s\n", labelWidth, "Goodput (req/s):", f2(g.Goodput.A), f2(g.Goodput.B), relText(g.Goodput.Rel), verdictSuffix(g.Goodput))
		if g.RequestsA > 0 && g.RequestsB > 0 {
			fmt.Fprintf(b, "%-*s %s → %s (%s; %d of %d → %d of %d)%s\n", labelWidth, "SLO attainment:", shareText(g.Attainment.A), shareText(g.Attainment.B),
				changeText(g.Attainment), g.GoodA, g.RequestsA, g.GoodB, g.RequestsB, verdictSuffix(g.Attainment))
		}
	}
	if sc := c.Sessions; sc != nil {
		t.header("Sessions", '-')
		fmt.Fprintf(b, "Sessions: %d → %d", sc.SessionsA, sc.SessionsB)
		if sc.SLO != "" {
			fmt.Fprintf(b, "; session SLO (ms) %s: %d → %d met", sc.SLO, sc.MetA, sc.MetB)
		}
		b.WriteString("\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "Figure\tStat\tA\tB\tB − A\tChange\tCI\tVerdict")
		for _, d := range sc.Deltas {
			fmt.Fprintln(tw, strings.Join(sessionDeltaCells(d), "\t"))
		}
		_ = tw.Flush()
	}
	if len(c.UserView) > 0 {
		t.header("What users feel", '-')
		for _, s := range c.UserView {
			b.WriteString("- " + s + "\n")
		}
	}
	if len(c.Notes) > 0 {
		t.header("Notes", '-')
		for _, s := range c.Notes {
			b.WriteString("! " + s + "\n")
		}
	}
	b.WriteString(strings.Repeat("=", width) + "\n")
	_, err := w.Write(b.Bytes())
	return err
}

// sessionLabels name the session metrics of a comparison.
var sessionLabels = map[string]string{
	compare.MetricSessionGoodput:    "Session goodput (sessions/s)",
	compare.MetricSessionAttainment: "Session SLO attainment",
	compare.MetricSessionDuration:   "Session duration (ms)",
	compare.MetricTurnTTFT:          "Turn TTFT (ms)",
	compare.MetricSessionTTP:        "Session TTP (ms)",
	compare.MetricTTFTPer1KHistory:  "TTFT per 1K history tokens (ms)",
	compare.MetricCachedShare:       "Cached share",
}

// sessionDeltaCells renders a session Delta: label, stat, A, B, B − A,
// change, CI, verdict; a share in percent and its changes in points.
func sessionDeltaCells(d compare.Delta) []string {
	label := sessionLabels[d.Metric]
	if label == "" {
		label = d.Metric
	}
	val := func(v float64) string {
		switch {
		case math.IsNaN(v):
			return "–"
		case d.Unit == compare.UnitShare:
			return shareText(v)
		case d.Metric == compare.MetricSessionGoodput:
			return f2(v)
		}
		return compare.Num(v)
	}
	diff, ci := "–", ciCell(d)
	if !math.IsNaN(d.Diff) {
		diff = compare.Signed(d.Diff)
	}
	if d.Unit == compare.UnitShare {
		if !math.IsNaN(d.Diff) {
			diff = compare.Signed(d.Points()) + " pp"
		}
		ci = shareCI(d)
	}
	st := statLabel(d.Stat)
	if st == "" {
		st = "–"
	}
	return []string{label, st, val(d.A), val(d.B), diff, changeText(d), ci, string(d.Verdict)}
}

func verdictSuffix(d compare.Delta) string {
	if !d.HasCI {
		return ""
	}
	if d.Unit == compare.UnitShare {
		return fmt.Sprintf(", CI [%s, %s] pp: %s", compare.Signed(100*d.Lo), compare.Signed(100*d.Hi), d.Verdict)
	}
	return fmt.Sprintf(", CI [%s, %s]: %s", compare.Signed(d.Lo), compare.Signed(d.Hi), d.Verdict)
}

// CompareSide is one run of a side-by-side report.
type CompareSide struct {
	// Meta describes the run when known.
	Meta *runlog.Meta
	// Levels are its summaries (nil when only a result file was given,
	// then Result is shown instead).
	Levels []breakdown.LevelSummary
	// Records are its records (nil for a result file): they draw the CDFs.
	Records []runlog.Record
}

// CompareHTMLInput is what CompareHTML renders.
type CompareHTMLInput struct {
	// Comparison is the judgement to show.
	Comparison *compare.Comparison
	// A and B are the runs, for the side-by-side tables and charts.
	A, B CompareSide
	// Generated is shown in the footer when set.
	Generated time.Time
}

type comparePage struct {
	Title    string
	A, B     string
	Method   string
	UserView []string
	Deltas   table
	Overall  table
	Repeats  *table
	Sessions *table
	Charts   []chartBlock
	SideA    []table
	SideB    []table
	Notes    []string
	Footer   string
}

// pooled returns every level's values of metric m, sorted.
func pooled(cd *chartData, m string) []float64 {
	var out []float64
	for _, v := range cd.values[m] {
		out = append(out, v...)
	}
	return sortedCopy(out)
}

// deltaTable writes the per-metric deltas as the terminal lays them out.
func deltaTable(b *bytes.Buffer, ds []compare.Delta) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Metric (ms)\tStat\tA\tB\tB − A\tChange\tCI\tVerdict")
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", metricLabel(d.Metric), statLabel(d.Stat),
			compare.Num(d.A), compare.Num(d.B), compare.Signed(d.Diff), relText(d.Rel), ciCell(d), d.Verdict)
	}
	_ = tw.Flush() // a bytes.Buffer does not fail
}

// deltaRows are the per-metric deltas as HTML table rows.
func deltaRows(ds []compare.Delta) [][]cell {
	var rows [][]cell
	for _, x := range ds {
		rows = append(rows, []cell{{Text: metricLabel(x.Metric)}, {Text: statLabel(x.Stat)},
			{Text: compare.Num(x.A)}, {Text: compare.Num(x.B)}, {Text: compare.Signed(x.Diff)}, {Text: relText(x.Rel)},
			{Text: ciCell(x)}, {Text: string(x.Verdict), Class: verdictClass(x.Verdict)}})
	}
	return rows
}

// CompareHTML writes a self-contained side-by-side report of a comparison
// (no script, nothing fetched): the user's view, the deltas with intervals
// and verdicts, throughput and goodput, the sessions' deltas (when both
// had sessions), CDFs of both runs overlaid (when both have records), and
// each run's own latency tables.
func CompareHTML(w io.Writer, in CompareHTMLInput) error {
	c := in.Comparison
	if c == nil {
		return fmt.Errorf("compare html: no comparison")
	}
	d := comparePage{Title: "goodput compare", A: c.A, B: c.B, UserView: c.UserView, Notes: c.Notes}
	if c.Samples {
		d.Method = fmt.Sprintf("Differences are B − A. Intervals: %s %% percentile bootstrap, %d resamples of each run's requests, seed %d; correlated requests count as fewer (batch means). Verdicts hold for the %d distinct rows together (Holm), so an interval may exclude zero where the verdict does not.",
			strconv.FormatFloat(100*c.Options.Confidence, 'f', -1, 64), c.Options.Resamples, c.Options.Seed, c.Family)
	} else {
		d.Method = "Differences are B − A, from summary figures: no intervals or verdicts without per-request records."
	}
	d.Deltas = table{Head: []string{"metric (ms)", "stat", "A", "B", "B − A", "change", "CI", "verdict"}}
	d.Deltas.Rows = deltaRows(c.Deltas)
	d.Overall = table{Head: []string{"figure", "A", "B", "change", "CI", "verdict"}}
	for _, x := range c.Throughput {
		d.Overall.Rows = append(d.Overall.Rows, []cell{{Text: strings.ReplaceAll(x.Metric, "_", " ") + " (" + x.Unit + ")"},
			{Text: f2(x.A)}, {Text: f2(x.B)}, {Text: relText(x.Rel)}, {Text: "–"}, {Text: string(x.Verdict)}})
	}
	if g := c.Goodput; g != nil {
		d.Overall.Rows = append(d.Overall.Rows,
			[]cell{{Text: "goodput under " + g.SLO + " (req/s)"}, {Text: f2(g.Goodput.A)}, {Text: f2(g.Goodput.B)}, {Text: relText(g.Goodput.Rel)},
				{Text: ciCell(g.Goodput)}, {Text: string(g.Goodput.Verdict), Class: verdictClass(g.Goodput.Verdict)}},
			[]cell{{Text: "SLO attainment"}, {Text: shareText(g.Attainment.A)}, {Text: shareText(g.Attainment.B)}, {Text: changeText(g.Attainment)},
				{Text: shareCI(g.Attainment)}, {Text: string(g.Attainment.Verdict), Class: verdictClass(g.Attainment.Verdict)}})
	}
	if r := c.Repeats; r != nil {
		t := &table{Caption: fmt.Sprintf("Each figure once a repeat (%d and %d): B's mean against A's, Welch's t interval; verdicts hold for the %d rows together (Holm)", r.NA, r.NB, r.Family),
			Head: []string{"metric (ms)", "stat", "A", "B", "B − A", "change", "CI", "verdict"}}
		t.Rows = deltaRows(r.Deltas)
		d.Repeats = t
	}
	if sc := c.Sessions; sc != nil {
		t := &table{Caption: fmt.Sprintf("%d → %d sessions", sc.SessionsA, sc.SessionsB),
			Head: []string{"figure", "stat", "A", "B", "B − A", "change", "CI", "verdict"}}
		if sc.SLO != "" {
			t.Caption += fmt.Sprintf("; session SLO (ms) %s: %d → %d met", sc.SLO, sc.MetA, sc.MetB)
		}
		for _, x := range sc.Deltas {
			cs := sessionDeltaCells(x)
			row := make([]cell, len(cs))
			for i, s := range cs {
				row[i] = cell{Text: s}
			}
			row[len(row)-1].Class = verdictClass(x.Verdict)
			t.Rows = append(t.Rows, row)
		}
		d.Sessions = t
	}
	if in.A.Records != nil && in.B.Records != nil {
		ca := collect(Records(in.A.Records), stats.SLO{}, 1)
		cb := collect(Records(in.B.Records), stats.SLO{}, 1)
		for _, m := range chartMetrics {
			title := "CDF of " + metricLabel(m) + ": A vs B"
			svg, err := lineChart(title, metricLabel(m)+" (ms)", "share of requests", []series{
				{name: "A", xys: cdfPoints(pooled(ca, m), 400), color: seriesColor(0)},
				{name: "B", xys: cdfPoints(pooled(cb, m), 400), color: seriesColor(1), dashed: true},
			}, true, nil)
			if err != nil {
				d.Notes = append(d.Notes, "A chart could not be drawn: "+err.Error())
				continue
			}
			if svg != "" {
				d.Charts = append(d.Charts, chartBlock{Title: title, SVG: svg})
			}
		}
	}
	for _, l := range in.A.Levels {
		d.SideA = append(d.SideA, metricsTable(l, len(in.A.Levels)))
	}
	for _, l := range in.B.Levels {
		d.SideB = append(d.SideB, metricsTable(l, len(in.B.Levels)))
	}
	d.Footer = "Generated by goodput."
	if !in.Generated.IsZero() {
		d.Footer = "Generated " + in.Generated.UTC().Format("2006-01-02 15:04:05 MST") + " by goodput."
	}
	var b bytes.Buffer
	if err := compareTmpl.ExecuteTemplate(&b, "compare", d); err != nil {
		return fmt.Errorf("compare html: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func shareCI(d compare.Delta) string {
	if !d.HasCI {
		return "–"
	}
	return "[" + compare.Signed(100*d.Lo) + ", " + compare.Signed(100*d.Hi) + "] pp"
}

func verdictClass(v compare.Verdict) string {
	switch v {
	case compare.Better:
		return "good"
	case compare.Worse:
		return "bad"
	}
	return ""
}

var compareTmpl = template.Must(template.Must(pageTmpl.Clone()).New("compare").Parse(compareHTML))

const compareHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{template "css"}}td.good{color:#1a7f37}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:20px}
.sides>div{overflow-x:auto;min-width:0}
.sides table{font-size:.8rem}
.sides th,.sides td{padding:.2rem .3rem}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
<p class="sub">A: {{.A}} · B: {{.B}}</p>
{{if .UserView}}<h2>What users feel</h2>
<ul>{{range .UserView}}<li>{{.}}</li>
{{end}}</ul>{{end}}
<h2>Differences</h2>
<p class="sub">{{.Method}}</p>
{{template "table" .Deltas}}
{{template "table" .Overall}}
{{with .Repeats}}<h2>Between runs</h2>
{{template "table" .}}{{end}}
{{with .Sessions}}<h2>Sessions</h2>
{{template "table" .}}{{end}}
{{if .Charts}}<h2>Distributions</h2>
<div class="grid">{{range .Charts}}{{template "chart" .}}{{end}}</div>{{end}}
{{if or .SideA .SideB}}<h2>Side by side (ms)</h2>
<div class="sides"><div><h3>A: {{.A}}</h3>{{range .SideA}}{{template "table" .}}{{end}}</div>
<div><h3>B: {{.B}}</h3>{{range .SideB}}{{template "table" .}}{{end}}</div></div>{{end}}
{{if .Notes}}<h2>Notes</h2>
<ul>{{range .Notes}}<li class="warn">{{.}}</li>
{{end}}</ul>{{end}}
<footer>{{.Footer}}</footer>
</main>
</body>
</html>
`
