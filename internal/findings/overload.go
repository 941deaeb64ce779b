package findings

import (
	"fmt"
	"slices"

	"github.com/goodput/goodput/internal/stats"
)

// loadShape is how an open-loop level's queue evolved over its sending
// window (first send → last send), from the Tracker's request spans.
type loadShape struct {
	// requests is the measured requests seen; sampled how many spans the
	// figures rest on (all of them up to spanCap).
	requests, sampled int
	// windowS is the sending window, seconds.
	windowS float64
	// inFlightMid and inFlightEnd are the requests in flight (sent, not
	// ended) at mid-window and at the last send, and sentAfterMid those
	// sent in between, scaled from the sample.
	inFlightMid, inFlightEnd, sentAfterMid float64
	// waitFirstMs and waitLastMs are the median waits from the scheduled
	// send to the first token (the end, without one) of the requests
	// scheduled in the window's first and last thirds, ms.
	waitFirstMs, waitLastMs float64
}

// shape computes the load shape; ok is false with too few requests or no
// window.
func (t *Tracker) shape() (loadShape, bool) {
	sp := t.spans.items
	if t.spans.seen < minOverloadRequests || len(sp) == 0 {
		return loadShape{}, false
	}
	lo, hi := sp[0].sent, sp[0].sent
	ilo, ihi := sp[0].intended, sp[0].intended
	for _, s := range sp {
		lo, hi = min(lo, s.sent), max(hi, s.sent)
		ilo, ihi = min(ilo, s.intended), max(ihi, s.intended)
	}
	if hi <= lo || ihi <= ilo {
		return loadShape{}, false
	}
	scale := float64(t.spans.seen) / float64(len(sp))
	inFlight := func(at int64) float64 {
		n := 0
		for _, s := range sp {
			if s.sent <= at && at < s.end {
				n++
			}
		}
		return scale * float64(n)
	}
	mid := lo + (hi-lo)/2
	after := 0
	for _, s := range sp {
		if s.sent > mid {
			after++
		}
	}
	var first, last []float64
	third := (ihi - ilo) / 3
	for _, s := range sp {
		w := float64(s.first-s.intended) / 1e6
		switch {
		case s.intended < ilo+third:
			first = append(first, w)
		case s.intended >= ihi-third:
			last = append(last, w)
		}
	}
	if len(first) < 5 || len(last) < 5 {
		return loadShape{}, false
	}
	return loadShape{
		requests: int(t.spans.seen), sampled: len(sp), windowS: float64(hi-lo) / 1e9,
		inFlightMid: inFlight(mid), inFlightEnd: inFlight(hi), sentAfterMid: scale * float64(after),
		waitFirstMs: median(first), waitLastMs: median(last),
	}, true
}

// median is the middle value of xs (the mean of the two middle ones for
// an even count); xs is reordered.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Overload is the overload verdict: an open-loop level (a --request-rate)
// whose server did not keep up, so its queue grew for as long as the run
// sent. It holds over at least 50 measured requests when the median wait
// from the scheduled send to the first token of the last third of sends is
// at least 2× and 500 ms above the first third's, and the requests in
// flight grew from mid-window to the last send by at least 5 % of the
// requests sent in that time (the server fell that far short of the
// rate; a running batch of hundreds makes a ratio of in-flight counts
// too blunt). A
// closed-loop (unpaced) run offers no rate to fall behind, and a full
// --max-concurrency cap is CapLimited's case. Critical: the latency
// percentiles of such a run grow with its length and describe no steady
// state of the server.
func Overload(in Input) (Finding, bool) {
	s, t, lv := in.Summary, in.Requests, in.level()
	if s == nil || t == nil || lv == nil || lv.RequestRate <= 0 || s.Requests == 0 {
		return Finding{}, false
	}
	if float64(delayed(in)) >= delayedShare*float64(s.Requests) {
		return Finding{}, false
	}
	sh, ok := t.shape()
	if !ok {
		return Finding{}, false
	}
	grew := sh.waitLastMs >= overloadWaitRatio*sh.waitFirstMs && sh.waitLastMs-sh.waitFirstMs >= overloadMinGrowthMs &&
		sh.inFlightEnd-sh.inFlightMid >= overloadBacklogShare*sh.sentAfterMid
	if !grew {
		return Finding{}, false
	}
	ev := map[string]any{
		"offered_rps": round2(lv.RequestRate), "achieved_rps": round2(s.RequestThroughput),
		"in_flight_mid_window": round2(sh.inFlightMid), "in_flight_at_last_send": round2(sh.inFlightEnd),
		"wait_first_third_p50_ms": round2(sh.waitFirstMs), "wait_last_third_p50_ms": round2(sh.waitLastMs),
		"sending_window_s": round2(sh.windowS), "requests": sh.requests,
	}
	if sh.sampled < sh.requests {
		ev["sampled_requests"] = sh.sampled
	}
	users := ""
	if r, _, ok, _ := backlogEvidence(ev, s); ok {
		users = fmt.Sprintf("; response time (P99 %s, from the intended send) is what its users waited", dur(r))
	}
	if v, ok := s.MetricP(stats.MetricTTFT, 99); ok {
		ev["ttft_p99_ms"] = round2(v)
	}
	return Finding{ID: "overload", Severity: Critical, Evidence: ev,
		Message: fmt.Sprintf("OVERLOADED: the server did not keep up with the offered %s req/s (it completed %s req/s): requests in flight grew from %.0f at mid-run to %.0f at the last send, and the wait from the scheduled send to the first token rose from %s (first third of sends) to %s (last third). The queue grew for as long as the run sent, so its latency percentiles grow with the run's length and describe no steady state%s. Lower --request-rate below about %s req/s, or find the capacity with goodput sweep.",
			num(lv.RequestRate), num(s.RequestThroughput), sh.inFlightMid, sh.inFlightEnd,
			dur(sh.waitFirstMs), dur(sh.waitLastMs), users, num(s.RequestThroughput)),
	}, true
}
