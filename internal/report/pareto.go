package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot/plotter"

	"github.com/goodput/goodput/internal/breakdown"
)

// ParetoTerminal writes the sweep's points, most interactive first, the
// frontier marked, with the SLO line: which points meet the SLO.
func ParetoTerminal(w io.Writer, ps []breakdown.ParetoPoint, gpus int) error {
	var b strings.Builder
	b.WriteString(center(" Pareto: per-GPU goodput vs interactivity ", '=') + "\n")
	fmt.Fprintf(&b, "%d GPU(s); interactivity = output tokens/s of one request (1000 / TPOT P50);\n* = on its length pair's frontier within SLO; ✗ = SLO missed\n", gpus)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tLevel\tConc\tIn:Out\tTok/s/user\tTok/s/GPU\tGoodput/GPU\tSLO met\tTTFT P99\t")
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	// By length pair, then most interactive first: each pair's frontier
	// reads as its trade-off.
	before := func(a, b breakdown.ParetoPoint) bool {
		if a.InputLen != b.InputLen || a.OutputLen != b.OutputLen {
			return a.InputLen < b.InputLen || (a.InputLen == b.InputLen && a.OutputLen < b.OutputLen)
		}
		return a.Interactivity > b.Interactivity
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && before(ps[order[j]], ps[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for _, k := range order {
		p := ps[k]
		mark, slo := "", "-"
		if p.Frontier {
			mark = "*"
		}
		if p.SLOSet {
			slo = fmt.Sprintf("%.1f %%", 100*p.Attainment)
			if !p.WithinSLO {
				slo += " ✗"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d:%d\t%s\t%s\t%s\t%s\t%s\t\n", mark, p.Index, p.Concurrency, p.InputLen, p.OutputLen,
			f1(p.Interactivity), f1(p.ThroughputPerGPU), f2(p.GoodputPerGPU), slo, f1(p.TTFTP99Ms))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString(center("", '=') + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ParetoJSON is the sweep's points for the result JSON.
func ParetoJSON(ps []breakdown.ParetoPoint, gpus int) map[string]any {
	pts := make([]map[string]any, len(ps))
	for i, p := range ps {
		pts[i] = map[string]any{"level": p.Index, "concurrency": p.Concurrency, "input_len": p.InputLen, "output_len": p.OutputLen,
			"tokens_per_s_per_user": p.Interactivity, "output_tokens_per_s_per_gpu": p.ThroughputPerGPU,
			"goodput_per_gpu": p.GoodputPerGPU, "slo_attainment": p.Attainment, "within_slo": p.WithinSLO, "frontier": p.Frontier,
			"p99_ttft_ms": p.TTFTP99Ms, "p50_tpot_ms": p.TPOTP50Ms}
	}
	return map[string]any{"num_gpus": gpus, "points": pts}
}

// paretoChart draws each length pair's frontier as a line through its
// points and the pair's other levels as points (interactivity on x,
// goodput per GPU on y).
func paretoChart(ps []breakdown.ParetoPoint) (template.HTML, error) {
	type pair struct{ in, out int }
	var order []pair
	byPair := map[pair][]breakdown.ParetoPoint{}
	for _, p := range ps {
		k := pair{p.InputLen, p.OutputLen}
		if _, ok := byPair[k]; !ok {
			order = append(order, k)
		}
		byPair[k] = append(byPair[k], p)
	}
	var ss []series
	for i, k := range order {
		var front, rest plotter.XYs
		pts := byPair[k]
		sort.Slice(pts, func(a, b int) bool { return pts[a].Interactivity < pts[b].Interactivity })
		for _, p := range pts {
			xy := plotter.XY{X: p.Interactivity, Y: p.GoodputPerGPU}
			if p.Frontier {
				front = append(front, xy)
			} else {
				rest = append(rest, xy)
			}
		}
		name := fmt.Sprintf("%d:%d", k.in, k.out)
		c := seriesColor(i)
		if len(front) > 0 {
			ss = append(ss, series{name: name + " frontier", xys: front, color: c, points: true})
		}
		if len(rest) > 0 {
			ss = append(ss, series{name: name + " other", xys: rest, color: c, scatter: true})
		}
	}
	return lineChart("Pareto: goodput per GPU vs interactivity", "output tokens/s per user", "goodput per GPU (requests/s meeting the SLO)", ss, true, nil)
}
