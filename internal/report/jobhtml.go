package report

import (
	"fmt"
	"html/template"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// jobsView is the agent jobs' HTML section: the counts and the prefix
// cache's share, the spread of job times over jobs, the jobs one by one
// (as the terminal's table), and a timeline of the first jobs' requests
// drawn from the records.
type jobsView struct {
	Summary  table
	Spread   *table
	Jobs     table
	Timeline *chartBlock
}

// maxJobTimelineRows caps the timeline's rows (one per request): the
// first jobs' requests, whole jobs only, so a reader sees each graph
// entire.
const maxJobTimelineRows = 60

// jobsHTML is the section for j (nil for none), its timeline from recs
// (nil leaves it out).
func jobsHTML(j *breakdown.Jobs, recs iter.Seq[*runlog.Record]) *jobsView {
	if j == nil {
		return nil
	}
	v := &jobsView{Summary: table{Head: []string{"jobs completed", "failed", "requests", "prefix cache hits"}}}
	cache := pctText(j.MeasuredShare()) + " measured"
	if j.HasImplied {
		cache += ", " + pctText(j.ImpliedShare()) + " implied by the trace's hash ids"
	}
	v.Summary.Rows = [][]cell{{{Text: strconv.Itoa(j.Completed)}, {Text: strconv.Itoa(j.Failed)}, {Text: strconv.Itoa(j.Requests)}, {Text: cache}}}
	if j.Completed > 0 {
		head := []string{"job time (ms)", "mean"}
		for _, p := range j.Percentiles {
			head = append(head, "P"+stats.PercentileName(p))
		}
		v.Spread = &table{Head: head}
		for _, r := range []struct {
			name string
			d    breakdown.JobDist
		}{{"end-to-end", j.E2E}, {"model (critical path)", j.Model}, {"waiting (gaps)", j.Waiting}} {
			row := []cell{{Text: r.name}, {Text: fmtMs(r.d.Mean)}}
			for _, x := range r.d.P {
				row = append(row, cell{Text: fmtMs(x)})
			}
			v.Spread.Rows = append(v.Spread.Rows, row)
		}
	}
	v.Jobs = table{Head: []string{"job", "requests", "E2E (ms)", "model (ms)", "waiting (ms)", "cache %", "implied %", "critical path"}}
	if len(j.Rows) > jobRowsShown {
		v.Jobs.Caption = fmt.Sprintf("The first %d of %d jobs; every one is in the result JSON", jobRowsShown, len(j.Rows))
	}
	for i, r := range j.Rows {
		if i == jobRowsShown {
			break
		}
		e2e, model, wait, path := "–", "–", "–", cell{Text: "failed", Class: "bad"}
		if r.Whole {
			e2e, model, wait, path = fmtMs(r.E2EMs), fmtMs(r.ModelMs), fmtMs(r.WaitingMs), cell{Text: strings.Join(r.Critical, " › ")}
		}
		implied := "–"
		if r.HasImplied {
			implied = f2(100 * r.ImpliedShare())
		}
		v.Jobs.Rows = append(v.Jobs.Rows, []cell{{Text: r.ID}, {Text: strconv.Itoa(r.Requests)}, {Text: e2e}, {Text: model}, {Text: wait},
			{Text: f2(100 * r.MeasuredShare())}, {Text: implied}, path})
	}
	if recs != nil {
		if svg, caption := jobTimelineSVG(j, recs); svg != "" {
			v.Timeline = &chartBlock{Title: "Job timeline", SVG: svg, Caption: caption}
		}
	}
	return v
}

// jobBar is one request of the timeline.
type jobBar struct {
	label            string
	gap0, send, end  int64 // the gap's start (its predecessors' end), the send, the end
	critical, failed bool
	firstOfJob       bool
}

// jobTimelineSVG draws the first jobs' requests, one row each in the
// order the records list them within a job: a bar from send to end (dark
// on the job's critical path, red when it failed) after the gap it
// waited (its predecessors' end plus the trace's gap: tool latency, think
// time). "" when the records hold no job request.
func jobTimelineSVG(j *breakdown.Jobs, recs iter.Seq[*runlog.Record]) (template.HTML, string) {
	crit := map[string]map[string]bool{}
	var order []string
	for _, r := range j.Rows {
		m := map[string]bool{}
		for _, n := range r.Critical {
			m[n] = true
		}
		crit[r.ID] = m
		order = append(order, r.ID)
	}
	byJob := map[string][]jobBar{}
	for r := range recs {
		if r.JobNode == "" || r.Warmup || r.Retried {
			continue
		}
		c, ok := crit[r.SessionID]
		if !ok {
			continue
		}
		byJob[r.SessionID] = append(byJob[r.SessionID], jobBar{label: r.SessionID + " " + r.JobNode,
			gap0: r.Intended - r.JobGapNs, send: r.Sent, end: r.End, critical: c[r.JobNode], failed: !r.OK()})
	}
	var rows []jobBar
	jobs := 0
	for _, id := range order {
		bars := byJob[id]
		if len(bars) == 0 {
			continue
		}
		if len(rows) > 0 && len(rows)+len(bars) > maxJobTimelineRows {
			break
		}
		slices.SortStableFunc(bars, func(a, b jobBar) int { return int(max(min(a.send-b.send, 1), -1)) })
		bars[0].firstOfJob = true
		rows = append(rows, bars...)
		jobs++
	}
	if len(rows) == 0 {
		return "", ""
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		lo, hi = min(lo, float64(min(r.gap0, r.send))), max(hi, float64(r.end))
	}
	if !(hi > lo) {
		hi = lo + 1
	}
	colors := map[string]string{"gap": "#e69f00", "path": "#08306b", "other": "#6baed6", "failed": "#cb181d"}
	c := newRowChart("job timeline", len(rows), 150, lo, hi)
	for k, r := range rows {
		y := c.rowY(k)
		if r.firstOfJob && k > 0 {
			fmt.Fprintf(&c.b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#999" stroke-width="0.5"/>`, c.left, y, c.left+c.plotW, y)
		}
		c.label(k, r.label, 24)
		if r.gap0 < r.send {
			c.bar(r.gap0, r.send, y+rowChartRowH*0.4, rowChartRowH*0.2, colors["gap"])
		}
		fill := colors["other"]
		switch {
		case r.failed:
			fill = colors["failed"]
		case r.critical:
			fill = colors["path"]
		}
		c.bar(r.send, r.end, y+1, rowChartRowH-2, fill)
	}
	svg := c.finish([][2]string{{colors["path"], "request on the critical path"}, {colors["other"], "other request"},
		{colors["gap"], "waiting its gap (tool, think)"}, {colors["failed"], "failed request"}})
	first := "the first job"
	if jobs > 1 {
		first = fmt.Sprintf("the first %d jobs", jobs)
	}
	caption := fmt.Sprintf("%d requests of %s, one row each from send to end; the thin bar before each is the gap it waited after what it depends on.", len(rows), first)
	switch left := len(order) - jobs; {
	case left == 1:
		caption += " 1 more job is left out."
	case left > 1:
		caption += fmt.Sprintf(" %d more jobs are left out.", left)
	}
	return svg, caption
}
