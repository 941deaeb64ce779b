package sweep

import (
	"fmt"
	"strconv"

	"github.com/goodput/goodput/internal/findings"
)

// g formats a load or slope for people: four significant digits.
func g(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// ByLoad lists the indexes of res.Points in load order (run order among
// equal loads).
func (res *Result) ByLoad() []int {
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

// AtTop says whether p sits at the highest load tested while no level
// saturated (CapacityAbove): then it is a lower bound, not a peak.
func (res *Result) AtTop(p *Peak) bool {
	if !res.CapacityAbove || p == nil {
		return false
	}
	top, ok := res.top()
	return ok && res.Points[top].Load(res.Axis) == p.Load
}

// top is the index of the highest-load point judged (a level cut short
// is not).
func (res *Result) top() (int, bool) {
	order := res.ByLoad()
	for j := len(order) - 1; j >= 0; j-- {
		if !res.Points[order[j]].Partial() {
			return order[j], true
		}
	}
	return 0, false
}

// Step names one unit of load on the axis, for slopes: "ms per req/s",
// "ms per added concurrent request".
func (a Axis) Step() string { return a.step() }

// EffectiveAttainment is the SLO attainment a level needs under c (0–1):
// c.Attainment, or DefaultAttainment when that is unset.
func (c Criteria) EffectiveAttainment() float64 { return c.attainment() }

// Findings states the sweep's verdict as findings: the knee (or that the
// capacity lies above the range tested), the recommendation (the highest
// load within SLO under crit), the goodput peak when it is another level,
// the throughput peak inside SLO violation, the search result, levels cut
// short and an early stop, each with its figures.
func Findings(res *Result, search *SearchResult, crit Criteria) []findings.Finding {
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
	for _, i := range res.Partial {
		p := res.Points[i]
		fs = append(fs, findings.Finding{ID: "sweep-level-interrupted", Severity: findings.Warning,
			Message: fmt.Sprintf("Level %d (%s) was interrupted before its last request: its figures cover part of a level, so it is left out of the knee, the peaks and the recommendation.",
				p.Index, p.Level.Label),
			Evidence: map[string]any{"level": p.Index, "load": p.Load(res.Axis), "requests": p.Summary.Requests}})
	}
	if ti, ok := res.top(); res.Knee == nil && res.CapacityAbove && ok {
		top := res.Points[ti]
		fs = append(fs, findings.Finding{ID: "capacity-above-range", Severity: findings.Info,
			Message: fmt.Sprintf("No level saturated: throughput still grew with load up to the highest load tested (%s %s), so the capacity lies above the range tested and the knee is not placed yet; sweep higher loads.",
				g(top.Load(res.Axis)), unit),
			Evidence: map[string]any{"highest_load": top.Load(res.Axis), "level": top.Index, "request_throughput": top.Summary.RequestThroughput}})
	}
	if rec := res.Recommended; rec != nil {
		msg := fmt.Sprintf("Recommended operating point: %s %s, the highest load within SLO (attainment %.1f %% ≥ %g %%; %.2f req/s meeting the SLO).",
			g(rec.Load), unit, 100*rec.Attainment, 100*crit.EffectiveAttainment(), rec.Goodput)
		if res.AtTop(rec) {
			msg = fmt.Sprintf("The highest load within SLO is the highest load tested, %s %s (attainment %.1f %%): no level saturated, so the capacity lies above the range tested; sweep higher loads before taking it as the operating point.",
				g(rec.Load), unit, 100*rec.Attainment)
		}
		fs = append(fs, findings.Finding{ID: "recommended-load", Severity: findings.Info, Message: msg,
			Evidence: map[string]any{"load": rec.Load, "request_goodput": rec.Goodput, "slo_attainment": rec.Attainment, "level": res.Points[rec.Index].Index,
				"attainment_needed": crit.EffectiveAttainment(), "capacity_above_range": res.AtTop(rec)}})
	} else if res.GoodputPeak != nil {
		fs = append(fs, findings.Finding{ID: "recommended-load", Severity: findings.Warning,
			Message:  fmt.Sprintf("No level kept the SLO (attainment ≥ %g %%%s), so no load can be recommended: sweep lower loads.", 100*crit.EffectiveAttainment(), queueText(crit)),
			Evidence: map[string]any{"attainment_needed": crit.EffectiveAttainment()}})
	}
	if gp := res.GoodputPeak; gp != nil && (res.Recommended == nil || gp.Index != res.Recommended.Index) {
		// Said as what it is: the most good requests per second, which a
		// load past the SLO can reach while failing more users.
		msg := fmt.Sprintf("Goodput peak at a load of %s %s: %.2f req/s meet the SLO (attainment %.1f %%).", g(gp.Load), unit, gp.Goodput, 100*gp.Attainment)
		if ok, why := crit.Meets(res.Points[gp.Index]); !ok {
			msg = fmt.Sprintf("Goodput peak at a load of %s %s: %.2f req/s meet the SLO there, but it misses the SLO (%s): more requests per second meet it there, and more users miss it; not an operating point.",
				g(gp.Load), unit, gp.Goodput, why)
		}
		fs = append(fs, findings.Finding{ID: "goodput-peak", Severity: findings.Info, Message: msg,
			Evidence: map[string]any{"load": gp.Load, "request_goodput": gp.Goodput, "slo_attainment": gp.Attainment, "level": res.Points[gp.Index].Index,
				"capacity_above_range": res.AtTop(gp)}})
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

// queueText is the median-queue criterion as a clause ("" without one).
func queueText(c Criteria) string {
	if c.MaxMedianQueueMs > 0 {
		return fmt.Sprintf(", median queue ≤ %g ms", c.MaxMedianQueueMs)
	}
	return ""
}
