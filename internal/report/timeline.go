package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
)

// The per-request timeline is drawn by hand: one thin horizontal bar per
// request, which gonum/plot has no plotter for. At most maxTimelineRows
// requests are drawn, every k-th by send time, so the chart stays readable
// and small at any run size.
const maxTimelineRows = 400

// Timeline colours: shades of green for requests that met the SLO, red for
// those that missed it, blue when there is no SLO; light for waiting in the
// queue, middle for prefill (or, measured from outside, waiting for the
// first token), dark for decoding.
var (
	metShades    = [3]string{"#c7e9c0", "#74c476", "#238b45"}
	missedShades = [3]string{"#fcbba1", "#fb6a4a", "#cb181d"}
	plainShades  = [3]string{"#c6dbef", "#6baed6", "#2171b5"}
	failedShade  = "#636363"
)

// maxTicks caps the ticks of a hand-drawn axis, whatever the span.
const maxTicks = 24

// niceStep returns a round tick step (1, 2 or 5 × 10^k) giving about n
// ticks over span; 1 for a span that is not a positive finite number.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || math.IsInf(span, 0) || n <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	if !(mag > 0) || math.IsInf(mag, 0) {
		return 1
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// axisTicks returns round tick values (as niceStep) within [lo, hi], at
// most maxTicks of them, counted by an integer so no step can be lost in
// the rounding of a large value; none for a range that is not finite.
func axisTicks(lo, hi float64, n int) []float64 {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return nil
	}
	step := niceStep(hi-lo, n)
	first := math.Ceil(lo/step) * step
	var out []float64
	for k := 0; k < maxTicks; k++ {
		v := first + float64(k)*step
		if v > hi+step*1e-9 {
			break
		}
		if len(out) > 0 && v == out[len(out)-1] {
			break // the step is below the values' precision
		}
		out = append(out, v)
	}
	return out
}

// timelineSVG renders the spans' timeline; hasSLO picks green/red over
// neutral blue. It returns the SVG and a caption saying what is shown.
func timelineSVG(spans []span, hasSLO bool) (template.HTML, string) {
	if len(spans) == 0 {
		return "", ""
	}
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case spans[a].sent < spans[b].sent:
			return -1
		case spans[a].sent > spans[b].sent:
			return 1
		}
		return 0
	})
	stride := (len(order) + maxTimelineRows - 1) / maxTimelineRows
	var rows []int
	for i := 0; i < len(order); i += stride {
		rows = append(rows, order[i])
	}
	// The axis in float64 ns: times from files may lie so far apart that
	// their difference would not fit an int64.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, i := range rows {
		s := spans[i]
		lo = min(lo, float64(s.sent))
		hi = max(hi, float64(s.sent), float64(s.end), float64(s.last))
	}
	if !(hi > lo) {
		hi = lo + 1
	}

	const (
		W, H            = 1000.0, 420.0
		left, right     = 56.0, 12.0
		top, bottom     = 34.0, 34.0
		plotW, plotH    = W - left - right, H - top - bottom
		secondsPerNanos = 1e-9
	)
	x := func(t int64) float64 { return left + plotW*(float64(t)-lo)/(hi-lo) }
	rowH := plotH / float64(len(rows))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="per-request timeline">`, W, H)
	b.WriteString(`<rect x="0" y="0" width="1000" height="420" fill="#ffffff"/>`)
	shades := plainShades
	if hasSLO {
		shades = metShades
	}
	anyServer := false
	for _, i := range rows {
		anyServer = anyServer || spans[i].hasServer
	}
	bar := func(t0, t1 int64, y float64, fill string) {
		if t1 < t0 {
			return
		}
		w := max(x(t1)-x(t0), 0.6) // keep an instant visible
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.2f" width="%.1f" height="%.2f" fill="%s"/>`, x(t0), y, w, max(rowH*0.85, 0.5), fill)
	}
	for k, i := range rows {
		s := spans[i]
		y := top + float64(k)*rowH
		sh := shades
		if hasSLO && !s.met {
			sh = missedShades
		}
		switch {
		case !s.ok:
			bar(s.sent, s.end, y, failedShade)
		case s.first < 0:
			bar(s.sent, s.end, y, sh[0])
		case s.hasServer:
			// Server truth: queued, then prefill up to the first token;
			// time before the queue (the network) is drawn as queue too.
			qEnd := min(s.first, s.first-s.prefill)
			bar(s.sent, qEnd, y, sh[0])
			bar(qEnd, s.first, y, sh[1])
			bar(s.first, s.last, y, sh[2])
		default:
			bar(s.sent, s.first, y, sh[1])
			bar(s.first, s.last, y, sh[2])
		}
	}
	// Axes and ticks: time in seconds from the run start.
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#000" stroke-width="0.8"/>`, left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#000" stroke-width="0.8"/>`, left, top, left, top+plotH)
	for _, v := range axisTicks(lo*secondsPerNanos, hi*secondsPerNanos, 8) {
		px := left + plotW*(v/secondsPerNanos-lo)/(hi-lo)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#000" stroke-width="0.6"/>`, px, top+plotH, px, top+plotH+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" font-size="11" text-anchor="middle">%s</text>`, px, top+plotH+16, trimFloat(v))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="12" text-anchor="middle">time from run start (s)</text>`, left+plotW/2, H-4)
	fmt.Fprintf(&b, `<text x="14" y="%g" font-size="12" text-anchor="middle" transform="rotate(-90 14 %g)">requests by send time</text>`, top+plotH/2, top+plotH/2)
	// Legend.
	names := [3]string{"send → first token", "first token → last", ""}
	if anyServer {
		names = [3]string{"queued", "prefill", "decode"}
	} else {
		names[2] = "streaming"
		names[0], names[1] = "no token", "send → first token"
	}
	lx := left
	legend := func(fill, name string) {
		fmt.Fprintf(&b, `<rect x="%.1f" y="10" width="12" height="10" fill="%s"/><text x="%.1f" y="19" font-size="11">%s</text>`,
			lx, fill, lx+16, template.HTMLEscapeString(name))
		lx += 16 + 6.5*float64(len([]rune(name))) + 14
	}
	label := func(text string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="19" font-size="11" font-weight="bold">%s</text>`, lx, template.HTMLEscapeString(text))
		lx += 6.5*float64(len([]rune(text))) + 8
	}
	// With an SLO every phase has a met and a missed shade, and each gets
	// its entry: an overloaded run is mostly the missed queue's light red,
	// which a single "SLO missed" swatch in the dark shade did not name.
	groups := []struct {
		name   string
		shades [3]string
	}{{"", shades}}
	if hasSLO {
		groups = []struct {
			name   string
			shades [3]string
		}{{"SLO met:", metShades}, {"SLO missed:", missedShades}}
	}
	for _, g := range groups {
		if g.name != "" {
			label(g.name)
		}
		for j, n := range names {
			if !anyServer && j == 0 {
				continue // "no token" rarely matters; it shares the lightest shade
			}
			legend(g.shades[j], n)
		}
	}
	legend(failedShade, "failed")
	b.WriteString(`</svg>`)

	caption := fmt.Sprintf("All %d requests, sorted by send time.", len(spans))
	if stride > 1 {
		caption = fmt.Sprintf("%d of %d requests (every %d%s by send time), so the chart stays readable.",
			len(rows), len(spans), stride, ordinalSuffix(stride))
	}
	return template.HTML(b.String()), caption
}

func ordinalSuffix(n int) string {
	if n%100 >= 11 && n%100 <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

func trimFloat(v float64) string {
	if math.Abs(v) < 1e-9 {
		v = 0
	}
	return fmt.Sprintf("%g", math.Round(v*1e6)/1e6)
}

// overTime returns output tokens/s per time bin and in-flight requests at
// evenly spaced instants, both against seconds from the run start, at most
// maxPts points each.
func overTime(cd *chartData, maxPts int) (tput, inflight plotter.XYs) {
	tb := cd.tokens
	if len(tb.counts) > 0 {
		group := (len(tb.counts) + maxPts - 1) / maxPts
		w := float64(tb.width*int64(group)) / 1e9
		for i := 0; i < len(tb.counts); i += group {
			sum := 0.0
			for j := i; j < min(i+group, len(tb.counts)); j++ {
				sum += tb.counts[j]
			}
			t0 := float64(int64(i)*tb.width) / 1e9
			// A step: the bin's rate held over the bin.
			tput = append(tput, plotter.XY{X: t0, Y: sum / w}, plotter.XY{X: t0 + w, Y: sum / w})
		}
	}
	lo, hi := cd.timeRange()
	if hi <= lo || len(cd.spans) == 0 || maxPts <= 0 {
		return tput, nil
	}
	starts := make([]int64, len(cd.spans))
	ends := make([]int64, len(cd.spans))
	for i, s := range cd.spans {
		starts[i], ends[i] = s.sent, s.end
	}
	slices.Sort(starts)
	slices.Sort(ends)
	si, ei := 0, 0
	for k := range maxPts + 1 {
		// In float64: hi − lo may not fit an int64, let alone times k.
		t := int64(float64(lo) + (float64(hi)-float64(lo))*float64(k)/float64(maxPts))
		t = min(max(t, lo), hi)
		for si < len(starts) && starts[si] <= t {
			si++
		}
		for ei < len(ends) && ends[ei] <= t {
			ei++
		}
		inflight = append(inflight, plotter.XY{X: float64(t) / 1e9, Y: float64(si - ei)})
	}
	return tput, inflight
}
