package sweep

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/stats"
)

func cell(s *stats.Summary, name string, p float64) string {
	v, ok := s.MetricP(name, p)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func g(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// LevelLine is the one-line summary of a finished level; saturated is its
// saturation verdict ("" if none).
func LevelLine(p Point, saturated string) string {
	s := &p.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "level %d %s: %d ok, %d failed | %.2f req/s, %.0f out tok/s", p.Index, p.Level.Label, s.Completed, s.Failed, s.RequestThroughput, s.OutputThroughput)
	if s.SLO.Set {
		fmt.Fprintf(&b, " | goodput %.2f req/s (%.1f %%)", s.SLO.Goodput, 100*s.SLO.Attainment)
	}
	fmt.Fprintf(&b, " | TTFT P50/P99 %s/%s ms | TPOT P50/P99 %s/%s ms",
		cell(s, stats.MetricTTFT, 50), cell(s, stats.MetricTTFT, 99), cell(s, stats.MetricTPOT, 50), cell(s, stats.MetricTPOT, 99))
	if saturated != "" {
		b.WriteString(" | SATURATED: " + saturated)
	}
	return b.String()
}

// Render writes the curve table (one row per level, in load order) and the
// verdict: the knee with its method, both peaks and how far the throughput
// peak sits inside SLO violation, the recommendation, the highest level
// within SLO, the search result if any, and why the sweep stopped early.
func Render(w io.Writer, res *Result, search *SearchResult, crit Criteria) error {
	var b strings.Builder
	b.WriteString("=============================Sweep Curve==============================\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Level\tLoad\tReq/s\tOut tok/s\tGoodput\tAttain %\tTTFT P50\tTTFT P99\tTPOT P50\tTPOT P99\t")
	for _, i := range byLoad(res) {
		p := &res.Points[i]
		s := &p.Summary
		gp, att := "-", "-"
		if s.SLO.Set {
			gp, att = strconv.FormatFloat(s.SLO.Goodput, 'f', 2, 64), strconv.FormatFloat(100*s.SLO.Attainment, 'f', 1, 64)
		}
		mark := ""
		switch {
		case res.Saturated[i] != "":
			mark = " sat"
		case res.GoodputPeak != nil && res.GoodputPeak.Index == i:
			mark = " *"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Index, p.Level.Label, s.RequestThroughput, s.OutputThroughput, gp, att,
			cell(s, stats.MetricTTFT, 50), cell(s, stats.MetricTTFT, 99), cell(s, stats.MetricTPOT, 50), cell(s, stats.MetricTPOT, 99), mark)
	}
	_ = tw.Flush() // a strings.Builder does not fail
	b.WriteString("(latencies in ms; * goodput peak, sat saturated)\n")
	unit := res.Axis.Unit()
	label := func(i int) string { return res.Points[i].Level.Label }

	if k := res.Knee; k != nil {
		fmt.Fprintf(&b, "Knee: %s %s (%s): P99 TTFT %.0f ms, rising %s ms per %s vs %s at low load\n",
			g(k.Load), unit, label(k.Index), k.P99TTFTMs, g(k.Slope), res.Axis.step(), g(k.BaseSlope))
	} else {
		fmt.Fprintf(&b, "Knee: none found: %s\n", res.KneeNote)
	}
	fmt.Fprintf(&b, "  method: %s\n", res.KneeMethod)
	if tp := res.ThroughputPeak; tp != nil {
		fmt.Fprintf(&b, "Throughput peak: %.2f req/s (%.0f output tok/s) at %s", tp.RequestThroughput, tp.OutputThroughput, label(tp.Index))
		if atTop(res, tp) {
			b.WriteString(", the highest load tested (throughput still rising)")
		}
		if v := res.Violation; v != nil {
			fmt.Fprintf(&b, " — inside SLO violation: %.1f %% of requests miss the SLO there, goodput %.0f %% below its peak, at %.2f× the goodput peak's load",
				100*v.ViolatingShare, 100*v.GoodputLoss, v.LoadRatio)
		}
		b.WriteByte('\n')
	}
	switch gp := res.GoodputPeak; {
	case gp != nil && atTop(res, gp):
		fmt.Fprintf(&b, "Goodput peak: %.2f req/s meeting the SLO at %s (attainment %.1f %%), the highest load tested: no level saturated, so the capacity lies above the range tested; sweep higher loads before taking it as the operating point\n",
			gp.Goodput, label(gp.Index), 100*gp.Attainment)
	case gp != nil:
		fmt.Fprintf(&b, "Goodput peak (recommended operating point): %.2f req/s meeting the SLO at %s (attainment %.1f %%)\n", gp.Goodput, label(gp.Index), 100*gp.Attainment)
	default:
		b.WriteString("Goodput peak: none (no SLO, or nothing met it)\n")
	}
	if m := res.MaxWithinSLO; m != nil {
		fmt.Fprintf(&b, "Highest level within SLO (attainment ≥ %g %%%s): %s\n", 100*crit.attainment(), queueText(crit), label(m.Index))
	} else if res.GoodputPeak != nil {
		fmt.Fprintf(&b, "Highest level within SLO (attainment ≥ %g %%%s): none\n", 100*crit.attainment(), queueText(crit))
	}
	if search != nil {
		if search.Found {
			fmt.Fprintf(&b, "Max load within SLO (bisection): %s %s, bracket [%s, %s], precision %s, %d runs",
				g(search.Capacity), unit, g(search.Lo), g(search.Hi), g(search.Precision), len(search.Points))
		} else {
			b.WriteString("Max load within SLO (bisection): none in range")
		}
		if search.Note != "" {
			b.WriteString(" — " + search.Note)
		}
		b.WriteByte('\n')
	}
	if res.Stopped != "" {
		fmt.Fprintf(&b, "Sweep stopped early: %s (%d levels not run)\n", res.Stopped, res.Skipped)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func queueText(c Criteria) string {
	if c.MaxMedianQueueMs > 0 {
		return fmt.Sprintf(", median queue ≤ %g ms", c.MaxMedianQueueMs)
	}
	return ""
}

// atTop says whether p sits at the highest load tested while no level
// saturated: then it is a lower bound, not a peak.
func atTop(res *Result, p *Peak) bool {
	if !res.CapacityAbove || len(res.Points) == 0 {
		return false
	}
	order := byLoad(res)
	return res.Points[order[len(order)-1]].Load(res.Axis) == p.Load
}

// byLoad lists point indexes in load order (run order among equals).
func byLoad(res *Result) []int {
	idx := make([]int, len(res.Points))
	for i := range idx {
		idx[i] = i
	}
	// Insertion sort: a handful of levels, stable.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && res.Points[idx[j]].Load(res.Axis) < res.Points[idx[j-1]].Load(res.Axis); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}

// Findings states the sweep's verdict as findings: the knee (or that the
// capacity lies above the range tested), the throughput peak inside SLO
// violation, the recommendation, the search result and an early stop, each
// with its figures.
func Findings(res *Result, search *SearchResult) []findings.Finding {
	var fs []findings.Finding
	unit := res.Axis.Unit()
	if res.Stopped != "" {
		fs = append(fs, findings.Finding{ID: "sweep-saturated", Severity: findings.Warning,
			Message:  "The sweep stopped early: " + res.Stopped + ".",
			Evidence: map[string]any{"levels_run": len(res.Points), "levels_skipped": res.Skipped}})
	}
	if k := res.Knee; k != nil {
		fs = append(fs, findings.Finding{ID: "knee", Severity: findings.Info,
			Message: fmt.Sprintf("P99 TTFT turns up at %s %s (%.0f ms), rising %s ms per %s against %s at low load; beyond it queueing dominates.",
				g(k.Load), unit, k.P99TTFTMs, g(k.Slope), res.Axis.step(), g(k.BaseSlope)),
			Evidence: map[string]any{"load": k.Load, "p99_ttft_ms": k.P99TTFTMs, "slope": k.Slope, "base_slope": k.BaseSlope, "k": k.K, "level": res.Points[k.Index].Index}})
	}
	if k := res.Knee; k == nil && res.CapacityAbove {
		top := res.Points[byLoad(res)[len(res.Points)-1]]
		fs = append(fs, findings.Finding{ID: "capacity-above-range", Severity: findings.Info,
			Message: fmt.Sprintf("No level saturated: throughput still grew with load up to the highest load tested (%s %s), so the capacity lies above the range tested and the knee is not placed yet; sweep higher loads.",
				g(top.Load(res.Axis)), unit),
			Evidence: map[string]any{"highest_load": top.Load(res.Axis), "level": top.Index, "request_throughput": top.Summary.RequestThroughput}})
	}
	if gp := res.GoodputPeak; gp != nil {
		msg := fmt.Sprintf("Recommended operating point: %s %s, the goodput peak (%.2f req/s meeting the SLO, attainment %.1f %%).",
			g(gp.Load), unit, gp.Goodput, 100*gp.Attainment)
		if atTop(res, gp) {
			msg = fmt.Sprintf("The goodput peak is the highest load tested, %s %s (%.2f req/s meeting the SLO, attainment %.1f %%): no level saturated, so the capacity lies above the range tested; sweep higher loads before taking it as the operating point.",
				g(gp.Load), unit, gp.Goodput, 100*gp.Attainment)
		}
		fs = append(fs, findings.Finding{ID: "goodput-peak", Severity: findings.Info, Message: msg,
			Evidence: map[string]any{"load": gp.Load, "request_goodput": gp.Goodput, "slo_attainment": gp.Attainment, "level": res.Points[gp.Index].Index,
				"capacity_above_range": atTop(res, gp)}})
	}
	if v, tp := res.Violation, res.ThroughputPeak; v != nil && tp != nil {
		fs = append(fs, findings.Finding{ID: "throughput-peak-violates-slo", Severity: findings.Warning,
			Message: fmt.Sprintf("The throughput peak (%.2f req/s at %s %s) sits inside SLO violation: %.1f %% of its requests miss the SLO and its goodput is %.0f %% below the goodput peak; running there trades users for a bigger number.",
				tp.RequestThroughput, g(tp.Load), unit, 100*v.ViolatingShare, 100*v.GoodputLoss),
			Evidence: map[string]any{"load": tp.Load, "request_throughput": tp.RequestThroughput, "violating_share": v.ViolatingShare,
				"goodput_loss": v.GoodputLoss, "load_ratio": v.LoadRatio, "level": res.Points[tp.Index].Index}})
	}
	if search != nil {
		ev := map[string]any{"found": search.Found, "capacity": search.Capacity, "lo": search.Lo, "hi": search.Hi, "precision": search.Precision, "runs": len(search.Points)}
		msg := fmt.Sprintf("Max load within SLO: %s %s (± %s, %d runs).", g(search.Capacity), unit, g(search.Precision), len(search.Points))
		if !search.Found {
			msg = "Max load within SLO: none in the searched range."
		}
		if search.Note != "" {
			msg += " " + search.Note + "."
		}
		fs = append(fs, findings.Finding{ID: "capacity", Severity: findings.Info, Message: msg, Evidence: ev})
	}
	return fs
}
