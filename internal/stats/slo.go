package stats

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// SLO is a per-request service-level objective: a request meets it when every
// set constraint holds (value ≤ limit, inclusive, as vLLM's goodput counts).
// A zero field means no constraint on that metric; the zero SLO has none.
type SLO struct {
	// TTFT is the time-to-first-token limit.
	TTFT time.Duration
	// TPOT is the time-per-output-token limit.
	TPOT time.Duration
	// E2E is the end-to-end latency limit (vLLM's "e2el").
	E2E time.Duration
	// TTP is the time-to-publish (first visible token) limit.
	TTP time.Duration
}

// sloNames are the constraint names in the order SLO.String and reports use.
var sloNames = [...]string{MetricTTFT, MetricTPOT, MetricE2E, MetricTTP}

// limits returns the constraints in sloNames order.
func (s SLO) limits() [4]time.Duration { return [4]time.Duration{s.TTFT, s.TPOT, s.E2E, s.TTP} }

// IsZero reports whether s has no constraint.
func (s SLO) IsZero() bool { return s == SLO{} }

// String renders s in the form ParseSLO reads, e.g. "ttft:2000 tpot:50";
// limits are in milliseconds. The zero SLO renders as "".
func (s SLO) String() string {
	var b strings.Builder
	for i, d := range s.limits() {
		if d == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sloNames[i])
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64))
	}
	return b.String()
}

// ParseSLO reads constraints written like vLLM's --goodput: "name:ms" pairs
// separated by spaces and/or commas, e.g. "ttft:2000 tpot:50 e2el:3000
// ttp:1000". Names are ttft, tpot, e2el (alias e2e) and ttp; values are
// positive milliseconds (fractions allowed). The empty string is the zero
// SLO. Errors name the offending pair.
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	for _, f := range fields {
		name, val, ok := strings.Cut(f, ":")
		if !ok {
			return SLO{}, fmt.Errorf("slo %q: want name:milliseconds, e.g. ttft:2000", f)
		}
		var dst *time.Duration
		switch strings.ToLower(name) {
		case "ttft":
			dst = &slo.TTFT
		case "tpot":
			dst = &slo.TPOT
		case "e2el", "e2e":
			dst = &slo.E2E
		case "ttp":
			dst = &slo.TTP
		default:
			return SLO{}, fmt.Errorf("slo %q: unknown metric %q (want ttft, tpot, e2el or ttp)", f, name)
		}
		ms, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return SLO{}, fmt.Errorf("slo %q: %q is not a number of milliseconds: %w", f, val, errors.Unwrap(err))
		}
		// The upper bound keeps the conversion to nanoseconds from overflowing
		// and keeps limits exact in float64 (11 days is already no limit).
		if !(ms > 0) || ms > 1e9 || math.IsInf(ms, 0) {
			return SLO{}, fmt.Errorf("slo %q: limit must be a positive number of milliseconds up to 1e9", f)
		}
		if *dst != 0 {
			return SLO{}, fmt.Errorf("slo %q: %s given twice", f, name)
		}
		d := time.Duration(math.Round(ms * float64(time.Millisecond)))
		if d == 0 {
			return SLO{}, fmt.Errorf("slo %q: limit is below one nanosecond", f)
		}
		*dst = d
	}
	return slo, nil
}

// Met reports whether r counts toward goodput under s: it succeeded and
// meets every constraint (a request with no token fails TTFT and E2E limits,
// one with no visible token fails a TTP limit, and one with fewer than two
// output tokens meets a TPOT limit, as in vLLM). The zero SLO is met by
// every successful request.
func (s SLO) Met(r *runlog.Record) bool {
	if !r.OK() {
		return false
	}
	_, all := s.check(r)
	return all
}

// check reports, per constraint in sloNames order, whether the successful
// record r meets it (unset constraints are met), and whether all are met.
//
// A request that produced no token fails TTFT and E2E limits (the user got
// nothing); one with no visible token fails a TTP limit. A request with fewer
// than two output tokens has no TPOT and meets a TPOT limit, as in vLLM
// (which counts its TPOT as 0 for goodput).
func (s SLO) check(r *runlog.Record) (per [4]bool, all bool) {
	lim := s.limits()
	all = true
	for i, l := range lim {
		if l == 0 {
			per[i] = true
			continue
		}
		d, ok := RequestMetric(r, sloNames[i])
		if !ok && sloNames[i] == MetricTPOT {
			d, ok = 0, true
		}
		per[i] = ok && d <= l
		all = all && per[i]
	}
	return per, all
}

// RequestMetric reads one request's value of a per-request metric by name:
// MetricTTFT, MetricTTP, MetricTPOT, MetricE2E or MetricResponse. ok is
// false when the record lacks it, and for names that are not per-request
// (MetricITL is per gap).
func RequestMetric(r *runlog.Record, name string) (d time.Duration, ok bool) {
	switch name {
	case MetricTTFT:
		return r.TTFT()
	case MetricTTP:
		return r.TTP()
	case MetricTPOT:
		return r.TPOT()
	case MetricE2E:
		return r.E2E()
	case MetricResponse:
		return r.ResponseTime()
	}
	return 0, false
}

// IsRequestMetric reports whether RequestMetric knows name.
func IsRequestMetric(name string) bool {
	switch name {
	case MetricTTFT, MetricTTP, MetricTPOT, MetricE2E, MetricResponse:
		return true
	}
	return false
}
