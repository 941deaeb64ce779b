package sweep

// JSON renders the sweep's verdict as the result file's "sweep" object:
// axis and unit, knee (or null, with knee_note), knee_method,
// throughput_peak, goodput_peak, recommendation (the goodput peak),
// max_within_slo, violation, saturated (per point), stopped, skipped,
// capacity_above_range (no level saturated: the peaks at the highest load
// are lower bounds), and search when a search ran. Peaks carry their level index, load,
// request_throughput, output_throughput, request_goodput and
// slo_attainment. Keys are snake_case so --fail-if can name them, e.g.
// sweep.goodput_peak.load.
func JSON(res *Result, search *SearchResult) map[string]any {
	peak := func(p *Peak) any {
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
		"recommendation": peak(res.GoodputPeak), "max_within_slo": peak(res.MaxWithinSLO),
		"stopped": res.Stopped, "skipped": res.Skipped, "saturated": res.Saturated,
		"capacity_above_range": res.CapacityAbove,
	}
	if k := res.Knee; k != nil {
		out["knee"] = map[string]any{"level": res.Points[k.Index].Index, "label": res.Points[k.Index].Level.Label, "load": k.Load,
			"p99_ttft_ms": k.P99TTFTMs, "slope_ms_per_unit": k.Slope, "base_slope_ms_per_unit": k.BaseSlope, "k": k.K}
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
