package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/servermetrics"
)

// maxServerPoints caps the points of one server series: a long run scraped
// every second would otherwise put tens of thousands in the page.
const maxServerPoints = 600

// serverCharts adds the "Server side" charts to d: per endpoint, requests
// running and waiting, KV cache usage, prompt and generation tokens/s from
// the token counters, and per GPU (DCGM) power and utilisation, each
// against seconds from the run start. A chart appears only when some
// series of it has two points or more.
func serverCharts(d *pageData, ss []breakdown.ServerSeries, add func(*[]chartBlock, string, template.HTML, string, error)) {
	named := 0
	for _, s := range ss {
		if len(s.Snapshots) > 0 {
			named++
		}
	}
	// One x range for every chart, from the run start to the last scrape,
	// so the charts line up with each other and with the timeline's.
	var xMax float64
	for _, s := range ss {
		for _, sn := range s.Snapshots {
			xMax = max(xMax, float64(sn.TimeNS)/1e9)
		}
	}
	for _, s := range ss {
		if len(s.Snapshots) == 0 {
			continue
		}
		// With several endpoints, each title says whose charts they are.
		title := func(t string) string {
			if named > 1 {
				return t + " (" + s.Target + ")"
			}
			return t
		}
		from := fmt.Sprintf("From %s", s.Target)
		if k := s.Snapshots[0].Kind; k != servermetrics.KindUnknown && string(k) != s.Target {
			from += " (" + string(k) + ")"
		}
		from += fmt.Sprintf(", %d scrapes", len(s.Snapshots))
		chart := func(t, yLabel string, lines []series, caption string) {
			lines = drawable(lines)
			if len(lines) == 0 {
				return
			}
			svg, err := timeChart(title(t), yLabel, lines, xMax)
			add(&d.Server, title(t), svg, from+caption, err)
		}

		chart("Requests running and waiting", "requests", []series{
			{name: "running", xys: gaugePoints(s.Snapshots, servermetrics.Running, 1), color: seriesColor(0)},
			{name: "waiting", xys: gaugePoints(s.Snapshots, servermetrics.Waiting, 1), color: seriesColor(1)},
		}, ".")
		kv := unitOf(servermetrics.KVUsage)
		chart("KV cache usage", kv.labelled("KV cache usage"), []series{
			{xys: gaugePoints(s.Snapshots, servermetrics.KVUsage, kv.scale), color: seriesColor(2)},
		}, ".")
		chart("Server token throughput", "tokens/s", []series{
			{name: "prompt", xys: downsample(counterRate(s.Snapshots, servermetrics.PromptTokens), maxServerPoints), color: seriesColor(0)},
			{name: "generation", xys: downsample(counterRate(s.Snapshots, servermetrics.GenerationTokens), maxServerPoints), color: seriesColor(1)},
		}, "; each point is the counter's rate over the scrape interval ending there, and an interval in which a counter fell (a restart) is skipped.")

		ids := snapshotGPUIDs(s.Snapshots)
		var power, util []series
		pw, ut := unitOf(servermetrics.GPUPowerWatts), unitOf(servermetrics.GPUUtil)
		for i, id := range ids {
			power = append(power, series{name: "GPU " + id, xys: gpuPoints(s.Snapshots, id, servermetrics.GPUPowerWatts, pw.scale), color: seriesColor(i)})
			util = append(util, series{name: "GPU " + id, xys: gpuPoints(s.Snapshots, id, servermetrics.GPUUtil, ut.scale), color: seriesColor(i)})
		}
		chart("GPU power", pw.labelled("power"), power, ".")
		chart("GPU utilisation", ut.labelled("utilisation"), util, "; the share of time a kernel ran.")
	}
}

// timeChart draws lines against seconds from the run start over [0, xMax],
// the y axis from 0, as lineChart draws the over-time charts; a NaN y
// breaks a line (a skipped interval is not bridged).
func timeChart(title, yLabel string, ss []series, xMax float64) (template.HTML, error) {
	p := newPlot(title, "time from run start (s)", yLabel)
	for _, s := range ss {
		var legend *plotter.Line
		for _, seg := range segments(s.xys) {
			if len(seg) == 1 {
				// A lone rate between two gaps: a dot, not an invisible line.
				sc, err := plotter.NewScatter(seg)
				if err != nil {
					return "", fmt.Errorf("chart %q: %w", title, err)
				}
				sc.Color, sc.Radius, sc.Shape = s.color, vg.Points(2), draw.CircleGlyph{}
				p.Add(sc)
				continue
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return "", fmt.Errorf("chart %q: %w", title, err)
			}
			l.LineStyle.Color = s.color
			l.LineStyle.Width = vg.Points(1.5)
			p.Add(l)
			if legend == nil {
				legend = l
			}
		}
		if s.name != "" && legend != nil {
			p.Legend.Add(s.name, legend)
		}
	}
	p.Y.Min = 0
	p.X.Min = 0
	if xMax > 0 {
		p.X.Max = max(p.X.Max, xMax)
	}
	return renderSVG(p, chartW, chartH, title)
}

// segments splits xys at its NaN y values into the runs of finite points
// between them.
func segments(xys plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, p := range xys {
		if math.IsNaN(p.Y) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		if f := finite(plotter.XYs{p}); len(f) == 1 {
			cur = append(cur, p)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// drawable keeps the series with a line to draw, two points in a row: one
// scrape is no line over time.
func drawable(ss []series) []series {
	var out []series
	for _, s := range ss {
		if slices.ContainsFunc(segments(s.xys), func(seg plotter.XYs) bool { return len(seg) >= 2 }) {
			out = append(out, s)
		}
	}
	return out
}

// gaugePoints is a snapshot value over time: seconds from the run start
// against the value times scale, for the snapshots that report it, at most
// maxServerPoints of them.
func gaugePoints(snaps []servermetrics.Snapshot, n servermetrics.Name, scale float64) plotter.XYs {
	var xys plotter.XYs
	for _, s := range snaps {
		if v, ok := s.Values[n]; ok {
			xys = append(xys, plotter.XY{X: float64(s.TimeNS) / 1e9, Y: scale * v})
		}
	}
	return downsample(xys, maxServerPoints)
}

// gpuPoints is one GPU's value over time, as gaugePoints.
func gpuPoints(snaps []servermetrics.Snapshot, id string, n servermetrics.Name, scale float64) plotter.XYs {
	var xys plotter.XYs
	for _, s := range snaps {
		for _, g := range s.GPUs {
			if v, ok := g.Values[n]; ok && g.ID == id {
				xys = append(xys, plotter.XY{X: float64(s.TimeNS) / 1e9, Y: scale * v})
			}
		}
	}
	return downsample(xys, maxServerPoints)
}

// counterRate is a counter's rate per second between consecutive snapshots
// that both report it, placed at the later one's time (seconds from the run
// start). An interval in which the counter fell is a server restart and is
// skipped, a point with a NaN rate at its end marking the gap: what the
// server did between the earlier scrape and the restart is lost. An
// interval of no positive length is skipped too.
func counterRate(snaps []servermetrics.Snapshot, n servermetrics.Name) plotter.XYs {
	var xys plotter.XYs
	var prev *servermetrics.Snapshot
	for i := range snaps {
		s := &snaps[i]
		v, ok := s.Values[n]
		if !ok {
			continue
		}
		if prev != nil {
			pv := prev.Values[n]
			switch dt := float64(s.TimeNS-prev.TimeNS) / 1e9; {
			case v < pv:
				xys = append(xys, plotter.XY{X: float64(s.TimeNS) / 1e9, Y: math.NaN()})
			case dt > 0:
				xys = append(xys, plotter.XY{X: float64(s.TimeNS) / 1e9, Y: (v - pv) / dt})
			}
		}
		prev = s
	}
	return xys
}

// downsample keeps at most maxPts of xys (maxPts ≥ 2): every k-th point
// from the first, and the last.
func downsample(xys plotter.XYs, maxPts int) plotter.XYs {
	n := len(xys)
	if n <= maxPts || maxPts < 2 {
		return xys
	}
	k := (n - 1 + maxPts - 2) / (maxPts - 1) // ⌈(n−1)/(maxPts−1)⌉
	out := make(plotter.XYs, 0, maxPts)
	for i := 0; i < n-1; i += k {
		out = append(out, xys[i])
	}
	return append(out, xys[n-1])
}

// snapshotGPUIDs are the GPUs any snapshot reports, by device index as in
// the terminal block.
func snapshotGPUIDs(snaps []servermetrics.Snapshot) []string {
	seen := map[string]map[servermetrics.Name]servermetrics.GaugeStats{}
	for _, s := range snaps {
		for _, g := range s.GPUs {
			seen[g.ID] = nil
		}
	}
	return gpuIDs(&servermetrics.Window{GPUs: seen})
}
