package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

func sweepCell(s *stats.Summary, name string, p float64) string {
	v, ok := s.MetricP(name, p)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// sweepG formats a load or slope: four significant digits, as sweep's
// findings do.
func sweepG(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// SweepLevelLine is the one-line summary of a finished sweep level;
// saturated is its saturation verdict ("" if none).
func SweepLevelLine(p sweep.Point, saturated string) string {
	s := &p.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "level %d %s: %d ok, %d failed | %.2f req/s, %.0f out tok/s", p.Index, p.Level.Label, s.Completed, s.Failed, s.RequestThroughput, s.OutputThroughput)
	if s.SLO.Set {
		fmt.Fprintf(&b, " | goodput %.2f req/s (%.1f %%)", s.SLO.Goodput, 100*s.SLO.Attainment)
	}
	fmt.Fprintf(&b, " | TTFT P50/P99 %s/%s ms | TPOT P50/P99 %s/%s ms",
		sweepCell(s, stats.MetricTTFT, 50), sweepCell(s, stats.MetricTTFT, 99), sweepCell(s, stats.MetricTPOT, 50), sweepCell(s, stats.MetricTPOT, 99))
	if saturated != "" {
		b.WriteString(" | SATURATED: " + saturated)
	}
	return b.String()
}

// SweepTerminal writes a sweep's curve table (one row per level, in load
// order) and its verdict: the knee with its method, both peaks and how far
// the throughput peak sits inside SLO violation, the recommendation, the
// highest level within SLO under crit, the search result if any (search
// may be nil), and why the sweep stopped early.
func SweepTerminal(w io.Writer, res *sweep.Result, search *sweep.SearchResult, crit sweep.Criteria) error {
	var b strings.Builder
	b.WriteString("=============================Sweep Curve==============================\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Level\tLoad\tReq/s\tOut tok/s\tGoodput\tAttain %\tTTFT P50\tTTFT P99\tTPOT P50\tTPOT P99\t")
	for _, i := range res.ByLoad() {
		p := &res.Points[i]
		s := &p.Summary
		gp, att := "-", "-"
		if s.SLO.Set {
			gp, att = strconv.FormatFloat(s.SLO.Goodput, 'f', 2, 64), strconv.FormatFloat(100*s.SLO.Attainment, 'f', 1, 64)
		}
		mark := ""
		switch {
		case p.Partial():
			mark = " cut"
		case res.Saturated[i] != "":
			mark = " sat"
		default:
			if res.Recommended != nil && res.Recommended.Index == i {
				mark = " rec"
			}
			if res.GoodputPeak != nil && res.GoodputPeak.Index == i {
				mark += " *"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Index, p.Level.Label, s.RequestThroughput, s.OutputThroughput, gp, att,
			sweepCell(s, stats.MetricTTFT, 50), sweepCell(s, stats.MetricTTFT, 99), sweepCell(s, stats.MetricTPOT, 50), sweepCell(s, stats.MetricTPOT, 99), mark)
	}
	_ = tw.Flush() // a strings.Builder does not fail
	b.WriteString("(latencies in ms; rec recommended: highest load within SLO; * goodput peak; sat saturated; cut interrupted, not judged)\n")
	unit := res.Axis.Unit()
	label := func(i int) string { return res.Points[i].Level.Label }

	if k := res.Knee; k != nil {
		fmt.Fprintf(&b, "Knee: %s %s (%s): P99 TTFT %.0f ms, rising %s ms per %s vs %s at low load",
			sweepG(k.Load), unit, label(k.Index), k.P99TTFTMs, sweepG(k.Slope), res.Axis.Step(), sweepG(k.BaseSlope))
		switch r := k.Range; {
		case r == nil:
		case r.Beyond:
			fmt.Fprintf(&b, "; within the P99 intervals it could lie anywhere from %s %s to beyond the highest load tested", sweepG(r.First), unit)
		case r.First != r.Last:
			fmt.Fprintf(&b, "; within the P99 intervals it could lie anywhere from %s to %s %s", sweepG(r.First), sweepG(r.Last), unit)
		}
		b.WriteByte('\n')
	} else {
		fmt.Fprintf(&b, "Knee: none found: %s\n", res.KneeNote)
	}
	fmt.Fprintf(&b, "  method: %s\n", res.KneeMethod)
	if tp := res.ThroughputPeak; tp != nil {
		fmt.Fprintf(&b, "Throughput peak: %.2f req/s (%.0f output tok/s) at %s", tp.RequestThroughput, tp.OutputThroughput, label(tp.Index))
		if res.AtTop(tp) {
			b.WriteString(", the highest load tested (throughput still rising)")
		}
		if v := res.Violation; v != nil {
			fmt.Fprintf(&b, " — inside SLO violation: %.1f %% of requests miss the SLO there, goodput %.0f %% below its peak, at %.2f× the goodput peak's load",
				100*v.ViolatingShare, 100*v.GoodputLoss, v.LoadRatio)
		}
		b.WriteByte('\n')
	}
	switch gp := res.GoodputPeak; {
	case gp == nil:
		b.WriteString("Goodput peak: none (no SLO, or nothing met it)\n")
	default:
		fmt.Fprintf(&b, "Goodput peak: %.2f req/s meeting the SLO at %s (attainment %.1f %%)", gp.Goodput, label(gp.Index), 100*gp.Attainment)
		if ok, why := crit.Meets(res.Points[gp.Index]); !ok {
			b.WriteString(" — misses the SLO (" + why + "): not an operating point")
		}
		if lo, hi, n, ok := PeakRange(res); ok && n > 1 {
			fmt.Fprintf(&b, "; within the intervals the peak could lie anywhere from %s to %s %s (%d levels' goodput intervals reach the peak's)",
				sweepG(lo), sweepG(hi), unit, n)
		}
		b.WriteByte('\n')
	}
	// The recommendation is the highest load that keeps the SLO, never a
	// load that misses it however much goodput it shows.
	within := fmt.Sprintf("attainment ≥ %g %%%s", 100*crit.EffectiveAttainment(), sweepQueueText(crit))
	switch rec := res.Recommended; {
	case rec != nil && res.AtTop(rec):
		fmt.Fprintf(&b, "Recommended operating point (highest load within SLO, %s): %s (attainment %.1f %%), the highest load tested: no level saturated, so the capacity lies above the range tested; sweep higher loads before taking it as the operating point\n",
			within, label(rec.Index), 100*rec.Attainment)
	case rec != nil:
		fmt.Fprintf(&b, "Recommended operating point (highest load within SLO, %s): %s (attainment %.1f %%, %.2f req/s meeting the SLO)\n", within, label(rec.Index), 100*rec.Attainment, rec.Goodput)
	case res.GoodputPeak != nil:
		fmt.Fprintf(&b, "Recommended operating point (highest load within SLO, %s): none: no level kept the SLO; sweep lower loads\n", within)
	}
	for _, i := range res.Partial {
		fmt.Fprintf(&b, "Level %d (%s) was interrupted: shown, but left out of the knee, the peaks and the recommendation\n", res.Points[i].Index, label(i))
	}
	if search != nil {
		if search.Found {
			fmt.Fprintf(&b, "Max load within SLO (bisection): %s %s, bracket [%s, %s], precision %s, %d runs",
				sweepG(search.Capacity), unit, sweepG(search.Lo), sweepG(search.Hi), sweepG(search.Precision), len(search.Points))
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

func sweepQueueText(c sweep.Criteria) string {
	if c.MaxMedianQueueMs > 0 {
		return fmt.Sprintf(", median queue ≤ %g ms", c.MaxMedianQueueMs)
	}
	return ""
}

// SweepJSON renders a sweep's verdict as the result file's "sweep" object:
// axis and unit, knee (or null, with knee_note), knee_method,
// throughput_peak, goodput_peak, recommendation (the highest load within
// SLO, as max_within_slo; null when none kept it), max_within_slo,
// interrupted (the level indexes cut short and left out of the verdicts), violation, saturated (per point), stopped, skipped,
// capacity_above_range (no level saturated: the peaks at the highest load
// are lower bounds), and search when a search ran (search may be nil). Peaks carry their level index, load,
// request_throughput, output_throughput, request_goodput and
// slo_attainment. Keys are snake_case so --fail-if can name them, e.g.
// sweep.goodput_peak.load.
func SweepJSON(res *sweep.Result, search *sweep.SearchResult) map[string]any {
	peak := func(p *sweep.Peak) any {
		if p == nil {
			return nil
		}
		return map[string]any{
			"level": res.Points[p.Index].Index, "label": res.Points[p.Index].Level.Label, "load": p.Load,
			"request_throughput": p.RequestThroughput, "output_throughput": p.OutputThroughput,
			"request_goodput": p.Goodput, "slo_attainment": p.Attainment,
		}
	}
	out := map[string]any{
		"axis": string(res.Axis), "unit": res.Axis.Unit(), "knee_method": res.KneeMethod,
		"throughput_peak": peak(res.ThroughputPeak), "goodput_peak": peak(res.GoodputPeak),
		"recommendation": peak(res.Recommended), "max_within_slo": peak(res.MaxWithinSLO),
		"stopped": res.Stopped, "skipped": res.Skipped, "saturated": res.Saturated,
		"capacity_above_range": res.CapacityAbove,
	}
	interrupted := []int{}
	for _, i := range res.Partial {
		interrupted = append(interrupted, res.Points[i].Index)
	}
	out["interrupted"] = interrupted
	if lo, hi, _, ok := PeakRange(res); ok {
		out["goodput_peak_load_range"] = []float64{lo, hi}
	}
	if k := res.Knee; k != nil {
		knee := map[string]any{"level": res.Points[k.Index].Index, "label": res.Points[k.Index].Level.Label, "load": k.Load,
			"p99_ttft_ms": k.P99TTFTMs, "slope_ms_per_unit": k.Slope, "base_slope_ms_per_unit": k.BaseSlope, "k": k.K}
		if r := k.Range; r != nil {
			// null for the upper end: the knee could lie above the levels.
			knee["load_range"] = []any{r.First, r.Last}
			if r.Beyond {
				knee["load_range"] = []any{r.First, nil}
			}
		}
		out["knee"] = knee
	} else {
		out["knee"], out["knee_note"] = nil, res.KneeNote
	}
	if v := res.Violation; v != nil {
		out["violation"] = map[string]any{"load_ratio": v.LoadRatio, "violating_share": v.ViolatingShare, "goodput_loss": v.GoodputLoss}
	} else {
		out["violation"] = nil
	}
	if search != nil {
		out["search"] = map[string]any{
			"found": search.Found, "capacity": search.Capacity, "lo": search.Lo, "hi": search.Hi,
			"precision": search.Precision, "converged": search.Converged, "runs": len(search.Points), "note": search.Note,
		}
	}
	return out
}

// PeakRange is the range of loads the goodput peak could lie at given the
// levels' goodput intervals: every judged level whose interval reaches the
// peak's lower bound could be the peak on a rerun. n counts those levels
// (the peak's own included); ok is false without a peak or intervals.
func PeakRange(res *sweep.Result) (lo, hi float64, n int, ok bool) {
	gp := res.GoodputPeak
	if gp == nil || gp.Index < 0 || gp.Index >= len(res.Points) {
		return 0, 0, 0, false
	}
	piv := res.Points[gp.Index].Summary.SLO.GoodputCI
	if !piv.OK() {
		return 0, 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i, p := range res.Points {
		iv := p.Summary.SLO.GoodputCI
		if p.Partial() || (i < len(res.Saturated) && res.Saturated[i] != "" && i != gp.Index) || !iv.OK() || iv.Hi < piv.Lo {
			continue
		}
		l := p.Load(res.Axis)
		lo, hi, n = min(lo, l), max(hi, l), n+1
	}
	return lo, hi, n, n > 0
}
