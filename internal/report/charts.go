package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/goodput/goodput/internal/stats"
)

// Charts are drawn with gonum/plot on its SVG canvas and inlined in the
// page: no script, no font or image fetched from anywhere. Text is set in
// Liberation Sans (the metrics gonum/plot measures with); a browser without
// it falls back to its sans-serif, which is close enough for labels.

// palette is a colour-blind-friendly categorical palette (Okabe–Ito),
// cycled for levels and series.
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // bluish green
	{204, 121, 167, 255}, // reddish purple
	{230, 159, 0, 255},   // orange
	{86, 180, 233, 255},  // sky blue
	{240, 228, 66, 255},  // yellow
	{0, 0, 0, 255},       // black
}

// sloRed draws an SLO limit: red, apart from the palette's series colours.
var sloRed = color.RGBA{203, 24, 29, 255}

func seriesColor(i int) color.RGBA { return palette[i%len(palette)] }

// chartW and chartH are a chart's size; the page scales the SVG to its
// column width through the viewBox.
const (
	chartW = 6 * vg.Inch
	chartH = 3.4 * vg.Inch
)

// newPlot returns a plot with goodput's look: sans-serif text, a light grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, f := range []*vg.Length{
		&p.Title.TextStyle.Font.Size, &p.X.Label.TextStyle.Font.Size, &p.Y.Label.TextStyle.Font.Size,
	} {
		*f = 11
	}
	p.Title.TextStyle.Font.Variant = "Sans"
	p.X.Label.TextStyle.Font.Variant = "Sans"
	p.Y.Label.TextStyle.Font.Variant = "Sans"
	p.X.Tick.Label.Font.Variant = "Sans"
	p.Y.Tick.Label.Font.Variant = "Sans"
	p.Legend.TextStyle.Font.Variant = "Sans"
	p.Legend.TextStyle.Font.Size = 9
	p.Legend.Padding = vg.Points(2)
	p.Legend.Top = true
	p.Legend.Left = false
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 225}
	grid.Horizontal.Color = color.Gray{Y: 225}
	p.Add(grid)
	return p
}

// svgHeader matches the XML prolog, comment and sized <svg> tag vgsvg
// writes, so the SVG can be inlined in HTML and scaled by CSS.
var svgHeader = regexp.MustCompile(`(?s)^.*?<svg [^>]*viewBox="([^"]*)"[^>]*>`)

// renderSVG draws p into an inline SVG element.
func renderSVG(p *plot.Plot, w, h vg.Length, label string) (svg template.HTML, err error) {
	// gonum/plot panics on some degenerate inputs (e.g. a log axis over
	// zero); data is sanitised before, and a chart that still fails is
	// left out with an error rather than taking the report down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %q: %v", label, r)
		}
	}()
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	// The legend gets a column of its own right of the plot, so it never
	// covers a line (inside the axes it hid the curves of busy charts).
	leg := p.Legend
	if lr := leg.Rectangle(dc); lr.Size().X > 0 {
		p.Legend = plot.Legend{TextStyle: leg.TextStyle}
		lw := lr.Size().X + vg.Points(12)
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		leg.Top, leg.Left = true, true
		leg.XOffs, leg.YOffs = 0, 0
		// Top aligned with the plot's frame, below the title.
		leg.Draw(draw.Crop(dc, w-lw+vg.Points(4), 0, 0, -vg.Points(22)))
		p.Legend = leg
	} else {
		p.Draw(dc)
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("chart %q: %w", label, err)
	}
	m := svgHeader.FindSubmatchIndex(b.Bytes())
	if m == nil {
		return "", fmt.Errorf("chart %q: unexpected SVG output", label)
	}
	viewBox := string(b.Bytes()[m[2]:m[3]])
	body := b.Bytes()[m[1]:]
	head := fmt.Sprintf(`<svg class="chart" viewBox="%s" role="img" aria-label="%s">`,
		template.HTMLEscapeString(viewBox), template.HTMLEscapeString(label))
	// The chart is generated here from numbers and escaped labels.
	return template.HTML(head + string(body)), nil
}

// finite drops NaN and infinite points, which gonum/plot cannot place.
func finite(xys plotter.XYs) plotter.XYs {
	out := xys[:0:0]
	for _, p := range xys {
		if !math.IsNaN(p.X) && !math.IsInf(p.X, 0) && !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
			out = append(out, p)
		}
	}
	return out
}

// cdfPoints downsamples the empirical CDF of sorted values to at most max
// points: the value at evenly spaced ranks, always with the min and max.
func cdfPoints(sorted []float64, maxPts int) plotter.XYs {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	k := min(n, maxPts)
	xys := make(plotter.XYs, 0, k+1)
	xys = append(xys, plotter.XY{X: sorted[0], Y: 0})
	for j := range k {
		i := 0
		if k > 1 {
			i = int(math.Round(float64(j) * float64(n-1) / float64(k-1)))
		}
		xys = append(xys, plotter.XY{X: sorted[i], Y: float64(i+1) / float64(n)})
	}
	return xys
}

// series is one named line of a chart.
type series struct {
	name   string
	xys    plotter.XYs
	dashed bool
	color  color.RGBA
	points bool
	// scatter draws the points alone, unjoined.
	scatter bool
	// hline, when above zero, makes the series a horizontal line at that
	// y across the plot (an SLO limit); xys is unused.
	hline float64
	// errs, when set, are the points' confidence intervals, index for
	// index with xys, drawn as error bars (points without one get none).
	errs []stats.Interval
}

// errorBars are a series' points that have an interval, as gonum's
// plotter.XYer and YErrorer: the error below and above each value.
type errorBars struct {
	plotter.XYs
	low, high []float64
}

func (e errorBars) YError(i int) (float64, float64) { return e.low[i], e.high[i] }

// addErrorBars draws s's intervals on p, in the series' colour.
func addErrorBars(p *plot.Plot, s series) error {
	var e errorBars
	for i, iv := range s.errs {
		if i >= len(s.xys) || !iv.OK() {
			continue
		}
		pt := s.xys[i]
		lo, hi := pt.Y-iv.Lo, iv.Hi-pt.Y
		if len(finite(plotter.XYs{pt, {X: lo, Y: hi}})) == 0 {
			continue
		}
		e.XYs = append(e.XYs, pt)
		e.low, e.high = append(e.low, max(lo, 0)), append(e.high, max(hi, 0))
	}
	if len(e.XYs) == 0 {
		return nil
	}
	b, err := plotter.NewYErrorBars(e)
	if err != nil {
		return err
	}
	b.LineStyle.Color = s.color
	b.CapWidth = vg.Points(4)
	p.Add(b)
	return nil
}

// lineChart draws named series on one plot; its legend goes beside the
// plot (renderSVG).
func lineChart(title, xLabel, yLabel string, ss []series, yFromZero bool, marks []vmark) (template.HTML, error) {
	p := newPlot(title, xLabel, yLabel)
	any := false
	var hlines []series
	for _, s := range ss {
		if s.hline > 0 {
			hlines = append(hlines, s)
			continue
		}
		xys := finite(s.xys)
		if len(xys) == 0 {
			continue
		}
		any = true
		var l *plotter.Line
		var err error
		if s.scatter {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return "", fmt.Errorf("chart %q: %w", title, err)
			}
			sc.Color, sc.Radius = s.color, vg.Points(2.5)
			p.Add(sc)
			if s.name != "" {
				p.Legend.Add(s.name, sc)
			}
			continue
		}
		if s.points {
			var sc *plotter.Scatter
			l, sc, err = plotter.NewLinePoints(xys)
			if err == nil {
				sc.Color = s.color
				sc.Radius = vg.Points(2.5)
				p.Add(sc)
			}
		} else {
			l, err = plotter.NewLine(xys)
		}
		if err != nil {
			return "", fmt.Errorf("chart %q: %w", title, err)
		}
		l.LineStyle.Color = s.color
		l.LineStyle.Width = vg.Points(1.5)
		if s.dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if s.name != "" {
			p.Legend.Add(s.name, l)
		}
		if err := addErrorBars(p, s); err != nil {
			return "", fmt.Errorf("chart %q: %w", title, err)
		}
	}
	if !any {
		return "", nil
	}
	if yFromZero {
		p.Y.Min = 0
	}
	for _, h := range hlines {
		// The limit stays in view even when every point is far below it.
		p.Y.Max = max(p.Y.Max, h.hline*1.05)
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: h.hline}, {X: p.X.Max, Y: h.hline}})
		if err != nil {
			continue
		}
		l.LineStyle.Color, l.LineStyle.Width = h.color, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(h.name, l)
	}
	addMarks(p, marks)
	return renderSVG(p, chartW, chartH, title)
}

// vmark is a vertical line marking an x position (the knee, the goodput
// peak).
type vmark struct {
	name  string
	x     float64
	color color.RGBA
	// solid draws the line unbroken and thicker: the mark to act on.
	solid bool
}

func addMarks(p *plot.Plot, marks []vmark) {
	for _, m := range marks {
		if math.IsNaN(m.x) || math.IsInf(m.x, 0) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: p.Y.Min}, {X: m.x, Y: p.Y.Max}})
		if err != nil {
			continue
		}
		l.LineStyle.Color = m.color
		l.LineStyle.Width = vg.Points(1.2)
		l.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		if m.solid {
			l.LineStyle.Width, l.LineStyle.Dashes = vg.Points(2), nil
		}
		p.Add(l)
		p.Legend.Add(m.name, l)
	}
}

// histogramChart draws a histogram of vals over [0, hi] with nBins bins;
// values above hi are counted in the caption by the caller.
func histogramChart(title, xLabel string, vals []float64, hi float64, nBins int) (template.HTML, error) {
	if len(vals) == 0 || !(hi > 0) {
		return "", nil
	}
	w := hi / float64(nBins)
	bins := make([]plotter.HistogramBin, nBins)
	for i := range bins {
		bins[i] = plotter.HistogramBin{Min: float64(i) * w, Max: float64(i+1) * w}
	}
	for _, v := range vals {
		if v < 0 || v > hi || math.IsNaN(v) {
			continue
		}
		i := min(int(v/w), nBins-1)
		bins[i].Weight++
	}
	// Share of samples per bin, so the axis reads the same whatever the
	// sample size.
	for i := range bins {
		bins[i].Weight /= float64(len(vals))
	}
	p := newPlot(title, xLabel, "share of gaps")
	h := &plotter.Histogram{Bins: bins, Width: w, FillColor: seriesColor(0)}
	h.LineStyle.Width = vg.Points(0.3)
	h.LineStyle.Color = color.White
	p.Add(h)
	p.Y.Min = 0
	return renderSVG(p, chartW, chartH, title)
}

// sortedCopy returns vals sorted ascending without NaNs.
func sortedCopy(vals []float64) []float64 {
	out := make([]float64, 0, len(vals))
	for _, v := range vals {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// band is a P50 line with a shaded band between two percentiles, over a
// shared x (turn numbers).
type band struct {
	name, bandName string
	mid, lo, hi    plotter.XYs // lo and hi have mid's x values
	color          color.RGBA
}

// bandChart draws each band's shaded region (lo to hi) under its line
// (mid); integerX puts a tick at every whole x when there are few.
func bandChart(title, xLabel, yLabel string, bs []band, integerX bool) (template.HTML, error) {
	p := newPlot(title, xLabel, yLabel)
	any := false
	for _, b := range bs {
		lo, hi := finite(b.lo), finite(b.hi)
		if len(lo) > 0 && len(lo) == len(hi) {
			ring := append(plotter.XYs{}, lo...)
			for i := len(hi) - 1; i >= 0; i-- {
				ring = append(ring, hi[i])
			}
			poly, err := plotter.NewPolygon(ring)
			if err != nil {
				return "", fmt.Errorf("chart %q: %w", title, err)
			}
			c := b.color
			poly.Color = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 60}
			poly.LineStyle.Width = 0
			p.Add(poly)
			if b.bandName != "" {
				p.Legend.Add(b.bandName, poly)
			}
		}
	}
	for _, b := range bs {
		mid := finite(b.mid)
		if len(mid) == 0 {
			continue
		}
		any = true
		l, sc, err := plotter.NewLinePoints(mid)
		if err != nil {
			return "", fmt.Errorf("chart %q: %w", title, err)
		}
		l.LineStyle.Color, l.LineStyle.Width = b.color, vg.Points(1.5)
		sc.Color, sc.Radius = b.color, vg.Points(2.5)
		p.Add(l, sc)
		if b.name != "" {
			p.Legend.Add(b.name, l)
		}
	}
	if !any {
		return "", nil
	}
	p.Y.Min = 0
	if integerX {
		// Half a turn of margin, so the first and last points are not on
		// the frame.
		p.X.Tick.Marker = integerTicks{}
		p.X.Min, p.X.Max = p.X.Min-0.5, p.X.Max+0.5
	}
	return renderSVG(p, chartW, chartH*0.8, title)
}

// plainTicks are gonum/plot's default ticks labelled in the fewest digits
// that tell them apart: its own labels pad every tick to the precision of
// the finest one ("250.00 1250.00 2250.00").
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = tickLabel(ts[i].Value)
		}
	}
	return ts
}

// tickLabel writes v in the shortest form that survives rounding noise
// from the tick arithmetic (0.30000000000000004 reads 0.3).
func tickLabel(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// integerTicks marks every whole number of the axis range, at most 20 of
// them (then every k-th).
type integerTicks struct{}

// Ticks implements plot.Ticker.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := math.Ceil(lo), math.Floor(hi)
	if !(last >= first) || math.IsInf(last-first, 0) {
		return nil
	}
	step := math.Max(1, math.Ceil((last-first+1)/20))
	var out []plot.Tick
	for v := first; v <= last; v += step {
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return out
}
