package report

import (
	"fmt"
	"html/template"
	"strings"
)

// rowChart draws horizontal bars on a time axis, one row each: the
// session and the agent-job timelines. Times are ns from the run's start;
// the axis reads seconds.
type rowChart struct {
	b                       strings.Builder
	left, plotW, top, plotH float64
	h, lo, hi               float64
}

// Row charts' layout: the width, a row's height, the margins.
const (
	rowChartW, rowChartRowH = 1000.0, 12.0
	rowChartRight           = 12.0
	rowChartTop             = 34.0
	rowChartBottom          = 34.0
)

// newRowChart starts a chart of rows rows over [lo, hi] ns (hi > lo),
// labels in a left margin of left, aria-labelled label.
func newRowChart(label string, rows int, left, lo, hi float64) *rowChart {
	c := &rowChart{left: left, plotW: rowChartW - left - rowChartRight, top: rowChartTop, plotH: rowChartRowH * float64(rows), lo: lo, hi: hi}
	c.h = c.top + c.plotH + rowChartBottom
	fmt.Fprintf(&c.b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s">`, rowChartW, c.h, label)
	fmt.Fprintf(&c.b, `<rect x="0" y="0" width="%g" height="%g" fill="#ffffff"/>`, rowChartW, c.h)
	return c
}

// x is time t's position.
func (c *rowChart) x(t int64) float64 { return c.left + c.plotW*(float64(t)-c.lo)/(c.hi-c.lo) }

// rowY is row k's top.
func (c *rowChart) rowY(k int) float64 { return c.top + float64(k)*rowChartRowH }

// label writes row k's label, cut to max runes with an ellipsis.
func (c *rowChart) label(k int, text string, max int) {
	r := []rune(text)
	if len(r) > max {
		r = append(r[:max-1], '…')
	}
	fmt.Fprintf(&c.b, `<text x="%g" y="%.1f" font-size="9" text-anchor="end">%s</text>`, c.left-4, c.rowY(k)+rowChartRowH*0.75, template.HTMLEscapeString(string(r)))
}

// bar draws [t0, t1] at height y, h tall; an instant stays visible.
func (c *rowChart) bar(t0, t1 int64, y, h float64, fill string) {
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, c.x(t0), y, max(c.x(t1)-c.x(t0), 0.6), h, fill)
}

// finish draws the time axis and the legend (colour, name pairs) and
// returns the SVG.
func (c *rowChart) finish(legend [][2]string) template.HTML {
	const secondsPerNs = 1e-9
	b := &c.b
	bottom := c.top + c.plotH
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#000" stroke-width="0.8"/>`, c.left, bottom, c.left+c.plotW, bottom)
	for _, v := range axisTicks(c.lo*secondsPerNs, c.hi*secondsPerNs, 8) {
		px := c.left + c.plotW*(v/secondsPerNs-c.lo)/(c.hi-c.lo)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#000" stroke-width="0.6"/>`, px, bottom, px, bottom+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%g" font-size="11" text-anchor="middle">%s</text>`, px, bottom+16, trimFloat(v))
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" font-size="12" text-anchor="middle">time from run start (s)</text>`, c.left+c.plotW/2, c.h-4)
	lx := c.left
	for _, l := range legend {
		fmt.Fprintf(b, `<rect x="%.1f" y="10" width="12" height="10" fill="%s"/><text x="%.1f" y="19" font-size="11">%s</text>`,
			lx, l[0], lx+16, template.HTMLEscapeString(l[1]))
		lx += 16 + 6.5*float64(len([]rune(l[1]))) + 14
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
