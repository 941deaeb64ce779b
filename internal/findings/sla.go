package findings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/stats"
)

// SLOTarget is the share of requests that must meet every SLO constraint
// for a run to keep its SLO (MLPerf-server style: the P99 meets the
// bound), as sweep's default --slo-attainment.
const SLOTarget = 0.99

// SLOMet says whether the summarised run kept its SLO: at least SLOTarget
// of its requests met every constraint (failures count as misses). ok is
// false when the run had no SLO or no request.
func SLOMet(s *stats.Summary) (met, ok bool) {
	if s == nil || !s.SLO.Set || s.Requests == 0 {
		return false, false
	}
	return s.SLO.Attainment >= SLOTarget, true
}

// SLASentence states the run in one line a contract could quote:
//
//	TTFT P50 400 ms, P99 1.2 s; TPOT P99 45 ms; input P95 4K tokens, concurrency 60; SLO per request TTFT <= 2 s: met by 99.6 % of requests, P99 headroom ~40 %
//
// The input percentile is P95 when the summary has it, else P90. The load
// is the concurrency cap, else the rate and the peak concurrency seen. The
// SLO is a bound on every request, as --goodput defines it and the
// terminal's SLO block counts it: the clause says what share of requests
// met all of it and whether that keeps the SLO (SLOMet). A kept SLO states
// the tightest constraint's margin at P99, 1 − P99/limit; a missed one the
// share short of the target and how far the worst P99 is over its bound.
// It returns "" when nothing succeeded.
func SLASentence(in Input) string {
	s := in.Summary
	if s == nil || s.Completed == 0 {
		return ""
	}
	var parts []string
	lvl := s.Options.Confidence
	if m, ok := metric(s, stats.MetricTTFT); ok {
		p50, _ := m.P(50)
		t := "TTFT P50 " + durCI(p50, m.PCI(50), lvl)
		if p99, ok := m.P(99); ok {
			t += ", P99 " + durCI(p99, m.PCI(99), lvl)
		}
		parts = append(parts, t)
	}
	if m, ok := metric(s, stats.MetricTPOT); ok {
		if p99, ok := m.P(99); ok {
			parts = append(parts, "TPOT P99 "+durCI(p99, m.PCI(99), lvl))
		} else {
			p50, _ := m.P(50)
			parts = append(parts, "TPOT P50 "+durCI(p50, m.PCI(50), lvl))
		}
	}
	var load []string
	if s.InputLen.N > 0 {
		for _, p := range []float64{95, 90} {
			if v, ok := s.InputLen.P(p); ok {
				load = append(load, fmt.Sprintf("input P%s %s tokens", stats.PercentileName(p), tokens(v)))
				break
			}
		}
	}
	lv := in.level()
	switch {
	case lv != nil && lv.MaxConcurrency > 0:
		load = append(load, fmt.Sprintf("concurrency %d", lv.MaxConcurrency))
	case lv != nil && lv.RequestRate > 0:
		load = append(load, fmt.Sprintf("rate %s req/s, peak concurrency %d", num(lv.RequestRate), s.PeakConcurrency))
	default:
		load = append(load, fmt.Sprintf("peak concurrency %d", s.PeakConcurrency))
	}
	parts = append(parts, strings.Join(load, ", "))
	if slo := sloClause(s); slo != "" {
		parts = append(parts, slo)
	}
	return strings.Join(parts, "; ")
}

// sloClause is "SLO per request TTFT <= 2 s, TPOT <= 50 ms: met by 99.6 %
// of requests, P99 headroom ~40 % (TPOT)" or "…: missed, met by 83 % of
// requests (target 99 %); TTFT P99 19 % over its bound".
func sloClause(s *stats.Summary) string {
	met, ok := SLOMet(s)
	if !ok || len(s.SLO.Constraints) == 0 {
		return ""
	}
	var bounds []string
	tight, tightName := math.Inf(1), ""
	for _, c := range s.SLO.Constraints {
		bounds = append(bounds, fmt.Sprintf("%s <= %s", strings.ToUpper(c.Name), dur(c.LimitMs)))
		m, ok := metric(s, c.Name)
		if !ok {
			continue
		}
		p99, ok := m.P(99)
		if !ok || c.LimitMs <= 0 {
			continue
		}
		if h := 1 - p99/c.LimitMs; h < tight {
			tight, tightName = h, strings.ToUpper(c.Name)
		}
	}
	clause := "SLO per request " + strings.Join(bounds, ", ")
	att := num(100*s.SLO.Attainment) + " %"
	iv := s.SLO.AttainmentCI
	if s.Options.Confidence > 0 && iv.OK() {
		att += fmt.Sprintf(" [%s–%s %%]", num(100*iv.Lo), num(100*iv.Hi))
	}
	// A verdict its own interval could reverse is said to be close.
	close := s.Options.Confidence > 0 && iv.OK() && iv.Lo < SLOTarget && SLOTarget <= iv.Hi
	if met {
		clause += fmt.Sprintf(": met by %s of requests", att)
		if close {
			clause += fmt.Sprintf(", but the interval spans the %s %% target: a rerun could miss it", num(100*SLOTarget))
		}
		if !math.IsInf(tight, 1) && tight >= 0 {
			clause += fmt.Sprintf(", P99 headroom ~%.0f %%", 100*tight)
			if len(s.SLO.Constraints) > 1 {
				clause += " (" + tightName + ")"
			}
		}
		return clause
	}
	clause += fmt.Sprintf(": missed, met by %s of requests (target %s %%)", att, num(100*SLOTarget))
	if close {
		clause += ", but the interval spans the target: a rerun could meet it"
	}
	if !math.IsInf(tight, 1) && tight < 0 {
		clause += fmt.Sprintf("; %s P99 %.0f %% over its bound", tightName, -100*tight)
	}
	return clause
}

// slaEvidence carries the sentence's figures for machines.
func slaEvidence(in Input) map[string]any {
	s := in.Summary
	ev := map[string]any{}
	for _, name := range []string{stats.MetricTTFT, stats.MetricTPOT} {
		if m, ok := metric(s, name); ok {
			p50, _ := m.P(50)
			ev[name+"_p50_ms"] = round2(p50)
			if p99, ok := m.P(99); ok {
				ev[name+"_p99_ms"] = round2(p99)
			}
		}
	}
	ev["peak_concurrency"] = s.PeakConcurrency
	if s.SLO.Set {
		ev["slo"] = s.Options.SLO.String()
		ev["slo_attainment_pct"] = round2(100 * s.SLO.Attainment)
		if met, ok := SLOMet(s); ok {
			ev["slo_met"] = met
			ev["slo_target_pct"] = round2(100 * SLOTarget)
		}
	}
	return ev
}

// durCI is dur(ms) followed by its interval, "72 ms [70–75 ms]", when the
// run asked for intervals (level > 0) and the figure has one; "166 ms (too
// few for an interval)" when it has none.
func durCI(ms float64, iv stats.Interval, level float64) string {
	switch {
	case level <= 0:
		return dur(ms)
	case !iv.OK():
		return dur(ms) + " (too few for an interval)"
	}
	return dur(ms) + " [" + strings.TrimSuffix(dur(iv.Lo), " ms") + "–" + dur(iv.Hi) + "]"
}

// dur formats milliseconds for people: "45 ms", "4.5 ms", "1.2 s", "2 s".
func dur(ms float64) string {
	switch {
	case ms >= 1000:
		return trim(strconv.FormatFloat(ms/1000, 'f', 1, 64)) + " s"
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	default:
		return trim(strconv.FormatFloat(ms, 'f', 1, 64)) + " ms"
	}
}

// tokens formats a token count: "900", "4K", "1.5K" (K = 1024, as the
// input-length buckets count).
func tokens(n float64) string {
	if n < 1024 {
		return strconv.FormatFloat(n, 'f', 0, 64)
	}
	return trim(strconv.FormatFloat(n/1024, 'f', 1, 64)) + "K"
}

func trim(s string) string { return strings.TrimSuffix(s, ".0") }

// SessionSLASentence states a run's sessions in one line a contract could
// quote, as SLASentence does its requests:
//
//	20 sessions, 8 turns each on average (0 failed); turn TTP P95 1.1 s, turn TTFT P95 40 ms, session duration P95 18 s; TTFT +0.6 ms per 1K tokens of history; SLO per session TTP <= 60 s, turn TTFT P95 <= 2 s: met by 95 % of sessions, 0.88 sessions/s
//
// The percentile is P95 when the summary has it, else P99, else the
// median. It returns "" without sessions.
func SessionSLASentence(s *stats.SessionSummary) string {
	if s == nil || s.Sessions == 0 {
		return ""
	}
	parts := []string{fmt.Sprintf("%d sessions, %s turns each on average (%d failed)", s.Sessions, num(s.TurnsPerSession.Mean), s.Failed)}
	var lat []string
	for _, m := range []struct {
		name string
		v    stats.MetricSummary
	}{{"turn TTP", s.TurnTTP}, {"turn TTFT", s.TurnTTFT}, {"session duration", s.Duration}} {
		if m.v.N == 0 {
			continue
		}
		p, v := "P50", m.v.Median
		for _, q := range []float64{95, 99} {
			if x, ok := m.v.P(q); ok {
				p, v = "P"+stats.PercentileName(q), x
				break
			}
		}
		lat = append(lat, fmt.Sprintf("%s %s %s", m.name, p, dur(v)))
	}
	if len(lat) > 0 {
		parts = append(parts, strings.Join(lat, ", "))
	}
	if len(s.Turns) > 1 {
		parts = append(parts, fmt.Sprintf("TTFT %+.1f ms per 1K tokens of history", s.TTFTPer1KHistory))
	}
	if !s.SLO.IsZero() {
		var bounds []string
		for _, b := range []struct {
			name  string
			limit float64
		}{{"TTP", toMs(s.SLO.TTP)}, {"turn TTFT P95", toMs(s.SLO.TurnTTFTP95)}, {"duration", toMs(s.SLO.Duration)}} {
			if b.limit > 0 {
				bounds = append(bounds, fmt.Sprintf("%s <= %s", b.name, dur(b.limit)))
			}
		}
		parts = append(parts, fmt.Sprintf("SLO per session %s: met by %s %% of sessions, %s sessions/s",
			strings.Join(bounds, ", "), num(100*s.Attainment), num(s.Goodput)))
	}
	return strings.Join(parts, "; ")
}

func toMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
