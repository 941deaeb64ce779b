package findings

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// metric returns the named metric when it has samples.
func metric(s *stats.Summary, name string) (stats.MetricSummary, bool) {
	m, ok := s.Metric(name)
	return m, ok && m.N > 0
}

// ClientBound is the client-bound verdict: the load generator itself was a
// bottleneck, so the numbers describe the client, not the server. It is
// critical, and holds when the client used at least 80 % of the machine's
// CPU, or when requests left late against their schedule (lateLag) while
// the client's own CPU was not measured or was not low. Late sends with
// the client's CPU low are the host's doing (HostBusy says so), and a full
// --max-concurrency cap the user set is not the client's fault
// (CapLimited reports it): neither counts here.
func ClientBound(in Input) (Finding, bool) {
	s := in.Summary
	if s == nil || s.Requests == 0 {
		return Finding{}, false
	}
	ev := map[string]any{}
	var reasons []string
	late, lagWhy := lateLag(in, ev)
	if late && !hostToBlame(in) {
		reasons = append(reasons, lagWhy)
	}
	if in.ClientCPU > 0 {
		ev["client_cpu_pct"] = round2(100 * in.ClientCPU)
		if in.ClientCPU >= clientCPUHigh {
			reasons = append(reasons, fmt.Sprintf("the client used %s %% of the machine's CPU", num(100*in.ClientCPU)))
		}
	}
	if len(reasons) == 0 {
		return Finding{}, false
	}
	return Finding{
		ID: "client-bound", Severity: Critical, Evidence: ev,
		Message: "CLIENT-BOUND: the load generator was a bottleneck, so these numbers describe the client, not the server: " +
			strings.Join(reasons, "; ") + ". Lower the rate, or run the client on more cores (or several machines).",
	}, true
}

// HostBusy reports sends that left late against their schedule (lateLag)
// while the load generator's own CPU stayed low (under 50 % of the
// machine), or while it shared its process with the embedded simulator:
// the client was not the bottleneck, the host was — other processes, CPU
// steal on a shared VM, or the simulator kept the client from running on
// time. A warning: the server was offered a load other than the one
// asked.
func HostBusy(in Input) (Finding, bool) {
	s := in.Summary
	if s == nil || s.Requests == 0 || !hostToBlame(in) {
		return Finding{}, false
	}
	ev := map[string]any{}
	late, lagWhy := lateLag(in, ev)
	if !late {
		return Finding{}, false
	}
	if embedded(in) {
		return Finding{ID: "host-busy", Severity: Warning, Evidence: ev,
			Message: fmt.Sprintf("The host was busy: %s, and the embedded simulator runs in the same process as the load generator, competing for its CPU. The simulator was offered a later, smoother load than asked: run goodput serve apart from the client, or goodput sim (virtual time, no client).", lagWhy),
		}, true
	}
	ev["client_cpu_pct"] = round2(100 * in.ClientCPU)
	return Finding{ID: "host-busy", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("The host was busy: %s, yet the load generator itself used only %s %% of the machine's CPU, so other processes (or CPU steal on a shared VM) delayed it. The server was offered a later, smoother load than asked: rerun on a quieter machine.",
			lagWhy, num(100*in.ClientCPU)),
	}, true
}

// hostToBlame says late sends are not the load generator's own doing:
// its CPU was measured and low, or it shares its process with the
// embedded simulator it measures (whose work its CPU would include).
func hostToBlame(in Input) bool {
	return (in.ClientCPU > 0 && in.ClientCPU < clientCPUBusy) || (in.ClientCPU == 0 && embedded(in))
}

// embedded says the run measured the simulator embedded in the client's
// process.
func embedded(in Input) bool { return in.Meta != nil && in.Meta.Target == embeddedTarget }

// embeddedTarget is runlog.Meta.Target of a run against the embedded
// simulator (package run names it so).
const embeddedTarget = "embedded-sim"

// lateLag says whether requests left late enough against their schedule
// to change the load the server saw, adding the figures it read to ev.
// Absolute lag alone does not: sending everything at once (--request-rate
// inf) always lags by the time the sends take, harmlessly when that is
// small beside the requests' own latency. It holds when the send lag is
// above 5 ms at P50 or 50 ms at P99, and its P99 is at least 10 % of the
// E2E P50 (else TTFT P50), and, at a finite rate, its P50 is at least the
// mean gap between arrivals (requests typically left after the next one
// was due). Lag behind a full --max-concurrency cap never counts.
func lateLag(in Input, ev map[string]any) (bool, string) {
	s := in.Summary
	if s.SendLag.N == 0 {
		return false, ""
	}
	p50, p99 := sendLag(s)
	ev["send_lag_p50_ms"], ev["send_lag_p99_ms"] = round2(p50), round2(p99)
	if capDelayed(in) || (p50 <= sendLagP50Ms && p99 <= sendLagP99Ms) {
		return false, ""
	}
	lat, ok := s.MetricP(stats.MetricE2E, 50)
	if !ok {
		lat, ok = s.MetricP(stats.MetricTTFT, 50)
	}
	if ok && lat > 0 {
		ev["latency_p50_ms"] = round2(lat)
		if p99 < sendLagLatencyShare*lat {
			return false, ""
		}
	}
	if lv := in.level(); lv != nil && lv.RequestRate > 0 && !math.IsInf(lv.RequestRate, 0) {
		gap := 1e3 / lv.RequestRate
		ev["arrival_gap_ms"] = round2(gap)
		if p50 < gap {
			return false, ""
		}
	}
	against := ""
	if ok && lat > 0 {
		against = fmt.Sprintf(", against a typical request of %s ms", num(lat))
	}
	return true, fmt.Sprintf("requests left late against their schedule (send lag P50 %s ms, P99 %s ms%s)", num(p50), num(p99), against)
}

// sendLag is the send lag's P50 and P99 (the maximum when P99 was not
// computed), ms.
func sendLag(s *stats.Summary) (p50, p99 float64) {
	p50, _ = s.SendLag.P(50)
	p99, ok := s.SendLag.P(99)
	if !ok {
		p99 = s.SendLag.Max
	}
	return p50, p99
}

// backlogEvidence adds what shows a client-side backlog to ev: the send lag
// (P50, P99) and response time (from the intended send) beside E2E (P99).
// It returns the two P99s, ms, each with whether it is known.
func backlogEvidence(ev map[string]any, s *stats.Summary) (resp, e2e float64, okResp, okE2E bool) {
	if s.SendLag.N > 0 {
		p50, p99 := sendLag(s)
		ev["send_lag_p50_ms"], ev["send_lag_p99_ms"] = round2(p50), round2(p99)
	}
	if resp, okResp = s.MetricP(stats.MetricResponse, 99); okResp {
		ev["response_p99_ms"] = round2(resp)
		if e2e, okE2E = s.MetricP(stats.MetricE2E, 99); okE2E {
			ev["e2el_p99_ms"] = round2(e2e)
		}
	}
	return resp, e2e, okResp, okE2E
}

// delayed is the level's count of arrivals that found the in-flight cap
// full (0 without a cap or a known level).
func delayed(in Input) int {
	if lv := in.level(); lv != nil && lv.MaxConcurrency > 0 {
		return lv.DelayedArrivals
	}
	return 0
}

// capDelayed says whether any arrival waited for the user's in-flight cap:
// then late sends are the cap's doing, not the client's.
func capDelayed(in Input) bool { return delayed(in) > 0 }

// CapLimited reports that the user's own --max-concurrency cap held back
// an open-loop schedule: at least 1 % of arrivals found the cap full and
// waited for a slot, so the server was offered less than the rate asked
// and the wait shows in response time (and send lag), not in the server's
// TTFT or E2E. That is the cap working, not the client failing: a warning
// from 10 % of arrivals (the level's rate no longer describes the load),
// else info.
func CapLimited(in Input) (Finding, bool) {
	s := in.Summary
	lv := in.level()
	if s == nil || s.Requests == 0 || lv == nil || lv.MaxConcurrency <= 0 {
		return Finding{}, false
	}
	n := delayed(in)
	if float64(n) < delayedShare*float64(s.Requests) || n == 0 {
		return Finding{}, false
	}
	share := float64(n) / float64(s.Requests)
	ev := map[string]any{
		"max_concurrency": lv.MaxConcurrency, "delayed_arrivals": n, "delayed_pct": pctOf(float64(n), float64(s.Requests)),
		"requests": s.Requests, "achieved_rps": round2(s.RequestThroughput), "peak_concurrency": s.PeakConcurrency,
	}
	offered := ""
	if lv.RequestRate > 0 {
		ev["offered_rps"] = round2(lv.RequestRate)
		offered = fmt.Sprintf(" than the %s req/s asked (it completed %s req/s)", num(lv.RequestRate), num(s.RequestThroughput))
	}
	wait := "the wait shows in response time (from the intended send), not in the server's TTFT or E2E"
	if r, e, okR, okE := backlogEvidence(ev, s); okR && okE {
		wait = fmt.Sprintf("the wait shows in response time (P99 %s, from the intended send), not in the server's E2E (P99 %s)", dur(r), dur(e))
	}
	sev := Info
	if share >= capHeavyShare {
		sev = Warning
	}
	return Finding{ID: "concurrency-cap-limited", Severity: sev, Evidence: ev,
		Message: fmt.Sprintf("The --max-concurrency %d cap limited the offered load: %d of %d arrivals (%s %%) found %d requests in flight and waited for a slot, so the server was offered less%s; %s. This is the cap you set, not the client: raise or drop --max-concurrency to offer the full rate, or keep it if it models a real client's limit.",
			lv.MaxConcurrency, n, s.Requests, num(100*share), lv.MaxConcurrency, offered, wait),
	}, true
}

// retryShare and retryCriticalShare are the retried attempts, as a share
// of the requests, at which client retries are a warning and critical.
const (
	retryShare         = 0.05
	retryCriticalShare = 0.5
)

// RetryAmplification reports client retries that multiplied the load the
// server was offered: a warning from 5 % more attempts than requests,
// critical from 50 % (a retry storm in the making: under overload each
// failure brings another attempt, which makes the overload worse).
func RetryAmplification(in Input) (Finding, bool) {
	s := in.Summary
	if s == nil || s.Requests == 0 || float64(s.RetriedAttempts) < retryShare*float64(s.Requests) {
		return Finding{}, false
	}
	amp := float64(s.Requests+s.RetriedAttempts) / float64(s.Requests)
	sev := Warning
	if float64(s.RetriedAttempts) >= retryCriticalShare*float64(s.Requests) {
		sev = Critical
	}
	var classes []string
	by := map[string]any{}
	for _, c := range runlog.ErrorClasses {
		if n := s.RetriedBy[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%d %s", n, c))
			by[string(c)] = n
		}
	}
	return Finding{ID: "retry-amplification", Severity: sev,
		Evidence: map[string]any{"requests": s.Requests, "retried_attempts": s.RetriedAttempts, "amplification_x": round2(amp), "retried_by_class": by},
		Message: fmt.Sprintf("Client retries offered the server %d attempts for %d requests (×%s; retried: %s). Under overload a retry adds load exactly when the server sheds it, and the retries' own failures bring more (a retry storm): back off exponentially with jitter, honour Retry-After, cap the retries, and shed load early (admission control) so that failing fast is cheap.",
			s.Requests+s.RetriedAttempts, s.Requests, num(amp), strings.Join(classes, ", ")),
	}, true
}

// failureAdvice explains each error class.
var failureAdvice = map[runlog.ErrorClass]string{
	runlog.ErrConnect:        "could not connect: wrong --base-url or port, the server is down, or TLS fails (misconfiguration)",
	runlog.ErrConnectReset:   "connections reset before a response, typically a full listen backlog (overload)",
	runlog.ErrHTTP4xx:        "the server rejected requests: wrong --model or --endpoint, or prompts beyond the context length (misconfiguration)",
	runlog.ErrHTTP429:        "rate limited: the server or a gateway shed load (overload, or a rate limit below the offered load)",
	runlog.ErrHTTP5xx:        "server errors: the server crashed or ran out of memory under load (overload) or is misconfigured",
	runlog.ErrStream:         "streams broke after a 200: the server or a proxy cut responses (overload or proxy timeouts)",
	runlog.ErrMalformed:      "chunks were not the JSON expected: wrong --backend for this server (misconfiguration)",
	runlog.ErrTimeout:        "requests exceeded --timeout: overload, or a timeout shorter than the longest outputs",
	runlog.ErrIdleTimeout:    "streams went silent past --idle-timeout: the server stalled (overload) or a proxy buffers the stream",
	runlog.ErrCancelled:      "requests were cancelled by the run itself (Ctrl-C, --duration, or a saturation stop): not the server's fault",
	runlog.ErrNotEventStream: "a 200 answer was neither an event stream nor JSON (often a gateway's or login page's HTML): wrong --base-url or --endpoint, or an auth proxy in the way (misconfiguration)",
	runlog.ErrRedirect:       "the server redirected requests, not followed: to another origin (credentials are never sent there) or, same-origin, without --follow-redirects; point --base-url at the final address (misconfiguration)",
	runlog.ErrRedirectLoop:   "redirects went round in a loop or past 10 hops: a misconfigured gateway or load balancer (misconfiguration)",
	runlog.ErrBadResponse:    "responses could not be read: broken or oversized headers, the connection closed inside them, or an unknown Content-Encoding (a broken server or proxy)",
	runlog.ErrRunaway:        "streams ran far past the tokens asked (max_tokens, or --max-response-tokens) and were stopped: a server ignoring max_tokens or looping",
}

// failures reports each error class seen, with its count and share: critical
// from 5 % of requests, else a warning.
func failures(in Input) []Finding {
	s := in.Summary
	if s.Failed == 0 || s.Requests == 0 {
		return nil
	}
	var out []Finding
	classes := make([]runlog.ErrorClass, 0, len(s.Failures))
	for _, c := range runlog.ErrorClasses {
		if s.Failures[c] > 0 {
			classes = append(classes, c)
		}
	}
	for c, n := range s.Failures {
		if n > 0 && failureAdvice[c] == "" {
			classes = append(classes, c)
		}
	}
	for _, c := range classes {
		n := s.Failures[c]
		share := float64(n) / float64(s.Requests)
		sev := Warning
		if share >= failureCriticalShare && c != runlog.ErrCancelled {
			sev = Critical
		}
		advice := failureAdvice[c]
		if advice == "" {
			advice = "requests failed with this class"
		}
		ev := map[string]any{"class": string(c), "failed": n, "requests": s.Requests, "failed_pct": pctOf(float64(n), float64(s.Requests))}
		if r := s.RetryAfter; c == runlog.ErrHTTP429 && r.N > 0 {
			ev["retry_after_p50_ms"], ev["retry_after_max_ms"], ev["retry_after_given"] = round2(r.Median), round2(r.Max), r.N
			advice += fmt.Sprintf("; %d answers advertised a wait, P50 %s ms and at most %s ms, so back off that long rather than retry at once", r.N, num(r.Median), num(r.Max))
		}
		msg := fmt.Sprintf("%d of %d requests (%s %%) failed with %s: %s.", n, s.Requests, num(100*share), c, advice)
		if c == runlog.ErrHTTP429 {
			// A limit's answer, not a server failing: said as such.
			msg = fmt.Sprintf("%d of %d requests (%s %%) were rate limited (%s), not failed by the server: %s.", n, s.Requests, num(100*share), c, advice)
		}
		out = append(out, Finding{
			ID: "failures-" + string(c), Severity: sev,
			Message:  msg,
			Evidence: ev,
		})
	}
	return out
}

// ttftHigh splits a high TTFT P99 (above the SLO's TTFT, else 2 s) with a
// stable TPOT (P99 ≤ 2× P50, and within any TPOT SLO) by input-length
// bucket: every populated bucket high means requests wait in a queue; only
// the longest buckets high, with the shortest fine, means prefill compute.
// With fewer than two populated buckets (≥ 10 completed requests each) it
// cannot tell the two apart and says so.
func ttftHigh(in Input) (Finding, bool) {
	s := in.Summary
	ttft, ok := metric(s, stats.MetricTTFT)
	if !ok {
		return Finding{}, false
	}
	p99, ok := ttft.P(99)
	if !ok {
		return Finding{}, false
	}
	limit, source := float64(DefaultTTFTLimitMs), "default"
	if s.Options.SLO.TTFT > 0 {
		limit, source = float64(s.Options.SLO.TTFT)/1e6, "slo"
	}
	if !clears(p99, ttft.PCI(99), limit, true) {
		return Finding{}, false
	}
	ev := map[string]any{"ttft_p99_ms": round2(p99), "ttft_limit_ms": limit, "limit_source": source}
	ciEvidence(ev, "ttft_p99_ms_ci", ttft.PCI(99))
	if tpot, ok := metric(s, stats.MetricTPOT); ok {
		t50, _ := tpot.P(50)
		t99, ok := tpot.P(99)
		if !ok {
			t99 = tpot.Max
		}
		ev["tpot_p50_ms"], ev["tpot_p99_ms"] = round2(t50), round2(t99)
		if t99 > tpotStableRatio*t50 || (s.Options.SLO.TPOT > 0 && t99 > float64(s.Options.SLO.TPOT)/1e6) {
			return Finding{}, false // TPOT is not stable: not this rule's pattern
		}
	}

	type bucket struct {
		label string
		p99   float64
		high  bool
	}
	var pop []bucket
	for i := range s.Buckets {
		b := &s.Buckets[i]
		if b.Completed < minBucketRequests {
			continue
		}
		m, ok := b.Metric(stats.MetricTTFT)
		if !ok || m.N == 0 {
			continue
		}
		v, ok := m.P(99)
		if !ok {
			continue
		}
		pop = append(pop, bucket{b.Label, v, v > limit})
	}
	byBucket := map[string]any{}
	for _, b := range pop {
		byBucket[b.label] = round2(b.p99)
	}
	if len(pop) > 0 {
		ev["ttft_p99_ms_by_input"] = byBucket
	}
	head := fmt.Sprintf("TTFT P99 %s ms is above %s ms while TPOT stays stable", num(p99), num(limit))
	if len(pop) < 2 {
		return Finding{ID: "ttft-high", Severity: Warning, Evidence: ev,
			Message: head + ": requests wait for a slot (queueing: scale out, admission control) or long prompts take long to prefill (chunked prefill, an input cap); with fewer than two input-length buckets of 10+ requests the two cannot be told apart."}, true
	}
	all := true
	for _, b := range pop {
		all = all && b.high
	}
	// The high buckets form a suffix (the longest inputs) and the shortest is
	// fine: the time goes into prefill, not into waiting.
	suffix, seenHigh := !pop[0].high, false
	for _, b := range pop {
		if seenHigh && !b.high {
			suffix = false
		}
		seenHigh = seenHigh || b.high
	}
	switch {
	case all:
		return Finding{ID: "ttft-queueing", Severity: Warning, Evidence: ev,
			Message: head + ", in every input-length bucket: requests queue before they are served, whatever their length. Scale out or add admission control."}, true
	case suffix:
		var high []string
		for _, b := range pop {
			if b.high {
				high = append(high, b.label)
			}
		}
		return Finding{ID: "ttft-prefill", Severity: Warning, Evidence: ev,
			Message: head + ", but only for inputs " + strings.Join(high, ", ") + " tokens: prefill compute of long prompts, not queueing. Use chunked prefill, cap input length, or split long and short traffic."}, true
	default:
		return Finding{ID: "ttft-high", Severity: Warning, Evidence: ev,
			Message: head + ", in some input-length buckets but not in a pattern that points to queueing or prefill alone."}, true
	}
}

// clears says v lies above limit (above) or below it by more than its
// interval: with one (the run asked for intervals and the sample supports
// one) the whole interval must lie beyond limit, so no finding fires on a
// difference its own noise could make; without, v alone decides.
func clears(v float64, iv stats.Interval, limit float64, above bool) bool {
	lo, hi := v, v
	if iv.OK() {
		lo, hi = iv.Lo, iv.Hi
	}
	if above {
		return v > limit && lo > limit
	}
	return v < limit && hi < limit
}

// ciEvidence adds iv to ev under key as [lo, hi] when there is one.
func ciEvidence(ev map[string]any, key string, iv stats.Interval) {
	if iv.OK() {
		ev[key] = []float64{round2(iv.Lo), round2(iv.Hi)}
	}
}

// readingSpeed notes a TPOT P50 faster than people read: further TPOT gains
// are invisible, so latency budget can buy throughput (bigger batches).
func readingSpeed(in Input) (Finding, bool) {
	tpot, ok := metric(in.Summary, stats.MetricTPOT)
	if !ok {
		return Finding{}, false
	}
	rs := in.ReadingSpeedMs
	if rs <= 0 {
		rs = DefaultReadingSpeedMs
	}
	p50, _ := tpot.P(50)
	if p50 <= 0 || !clears(p50, tpot.PCI(50), rs, false) {
		return Finding{}, false
	}
	return Finding{ID: "tpot-below-reading-speed", Severity: Info,
		Message:  fmt.Sprintf("TPOT P50 %s ms is already faster than reading speed (%s): users cannot see further TPOT gains, so latency budget can buy throughput (larger batches, more concurrency).", num(p50), stats.ReadingSpeedCite(rs)),
		Evidence: map[string]any{"tpot_p50_ms": round2(p50), "reading_speed_ms": rs, "speed_margin_x": round2(rs / p50)},
	}, true
}

// hiddenWait flags TTP (first visible token) far above TTFT: P50 at least
// twice and 100 ms above, so hidden reasoning or tool calls dominate the
// user's wait.
func hiddenWait(in Input) (Finding, bool) {
	s := in.Summary
	ttft, ok1 := metric(s, stats.MetricTTFT)
	ttp, ok2 := metric(s, stats.MetricTTP)
	if !ok1 || !ok2 {
		return Finding{}, false
	}
	a, _ := ttft.P(50)
	b, _ := ttp.P(50)
	if b < hiddenWaitRatio*a || b-a < hiddenWaitMinMs {
		return Finding{}, false
	}
	// Both medians' intervals: TTP's low end must still clear the bar
	// TTFT's high end sets.
	if ia, ib := ttft.PCI(50), ttp.PCI(50); ia.OK() && ib.OK() && (ib.Lo < hiddenWaitRatio*ia.Hi || ib.Lo-ia.Hi < hiddenWaitMinMs) {
		return Finding{}, false
	}
	ev := map[string]any{"ttft_p50_ms": round2(a), "ttp_p50_ms": round2(b)}
	if s.OutputTokens > 0 {
		ev["reasoning_pct"] = pctOf(float64(s.ReasoningTokens), float64(s.OutputTokens))
	}
	return Finding{ID: "hidden-wait", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("Time to publish P50 %s ms is far above TTFT P50 %s ms: hidden reasoning or tool calls dominate the user's wait, so TTFT flatters the experience; judge TTP.", num(b), num(a)),
	}, true
}

// cacheOptimistic flags a high share (≥ 30 %) of prompt tokens served from
// the prefix cache: TTFT is optimistic for cold traffic. Not for
// conversations and agent jobs, whose later requests resend their history
// by design: there the hits are the traffic's own, and busting them would
// measure traffic that does not exist.
func cacheOptimistic(in Input) (Finding, bool) {
	s := in.Summary
	if s.InputTokens == 0 || s.CachedShare < cachedShareHigh {
		return Finding{}, false
	}
	if in.Meta != nil && sharingDatasets[strings.ToLower(in.Meta.Dataset)] {
		return Finding{}, false
	}
	return Finding{ID: "cache-optimistic", Severity: Warning,
		Message:  fmt.Sprintf("%s %% of prompt tokens were served from the prefix cache: TTFT is optimistic for cold traffic (use --cache-bust to measure it).", num(100*s.CachedShare)),
		Evidence: map[string]any{"cached_pct": round2(100 * s.CachedShare), "cached_tokens": s.CachedTokens, "input_tokens": s.InputTokens},
	}, true
}

// uniformLengths flags input or output lengths with near-zero variance
// (coefficient of variation < 0.05 over ≥ 10 requests): uniform requests
// batch perfectly, so results overestimate real performance.
func uniformLengths(in Input) (Finding, bool) {
	s := in.Summary
	ev := map[string]any{}
	var which []string
	for _, l := range []struct {
		name string
		m    stats.MetricSummary
	}{{"input", s.InputLen}, {"output", s.OutputLen}} {
		if l.m.N < minLengthSamples || l.m.Mean <= 0 {
			continue
		}
		cv := l.m.Std / l.m.Mean
		ev[l.name+"_cv"] = round2(cv)
		ev[l.name+"_mean_tokens"] = round2(l.m.Mean)
		if cv < lowCV {
			which = append(which, l.name)
		}
	}
	if len(which) == 0 {
		return Finding{}, false
	}
	if in.Meta != nil && in.Meta.Dataset == "random" {
		// The random dataset's fixed lengths are vLLM's default and ours:
		// a property of the workload asked for, not a mistake to warn of.
		ev["dataset"] = in.Meta.Dataset
		return Finding{ID: "uniform-lengths", Severity: Info, Evidence: ev,
			Message: fmt.Sprintf("%s lengths are fixed, as the random dataset sends them by default (as vLLM's does): uniform requests batch well, so real traffic of the same mean length may do worse. For a realistic mix use --random-range-ratio, --input-len-dist or a real dataset.", upperFirst(strings.Join(which, " and "))),
		}, true
	}
	return Finding{ID: "uniform-lengths", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("%s lengths barely vary (coefficient of variation < %s): uniform requests batch perfectly, so these results overestimate real performance. Use a length distribution (--random-range-ratio, --input-len-dist) or a real dataset.", strings.Join(which, " and "), num(lowCV)),
	}, true
}

// concurrencyOne flags a run of one level at concurrency 1: no request ever
// waited for another, so TTFT excludes queueing.
func concurrencyOne(in Input) (Finding, bool) {
	s := in.Summary
	n := in.Levels
	if n == 0 && in.Meta != nil {
		n = len(in.Meta.Levels)
	}
	if n > 1 || s.Requests < 2 {
		return Finding{}, false
	}
	lv := in.level()
	one := s.PeakConcurrency <= 1
	if lv != nil && lv.MaxConcurrency > 0 {
		one = lv.MaxConcurrency == 1
	}
	if !one {
		return Finding{}, false
	}
	return Finding{ID: "concurrency-one", Severity: Warning,
		Message:  "Only one load level, at concurrency 1: no request waited for another, so TTFT excludes queueing. Sweep the load (goodput sweep) to see latency under contention.",
		Evidence: map[string]any{"levels": max(n, 1), "peak_concurrency": s.PeakConcurrency},
	}, true
}

// longTail flags TTFT or E2E whose P99 is at least 3× the mean (over ≥ 100
// samples, so P99 means something): a long tail the mean hides.
func longTail(in Input) (Finding, bool) {
	s := in.Summary
	ev := map[string]any{}
	var which []string
	for _, name := range []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricE2E} {
		m, ok := metric(s, name)
		if !ok || m.N < stats.MinSamples(99) || m.Mean <= 0 {
			continue
		}
		p99, ok := m.P(99)
		if !ok || p99 < longTailRatio*m.Mean {
			continue
		}
		// With intervals, the P99's low end against the mean's high end.
		if iv := m.PCI(99); iv.OK() && iv.Lo < longTailRatio*max(m.Mean, m.MeanCI.Hi) {
			continue
		}
		which = append(which, fmt.Sprintf("%s (mean %s ms, P99 %s ms)", strings.ToUpper(name), num(m.Mean), num(p99)))
		ev[name] = map[string]any{"mean_ms": round2(m.Mean), "p99_ms": round2(p99), "ratio": round2(p99 / m.Mean)}
	}
	if len(which) == 0 {
		return Finding{}, false
	}
	return Finding{ID: "long-tail", Severity: Info, Evidence: ev,
		Message: "Long tail: " + strings.Join(which, "; ") + " — P99 is 3× the mean or more, so the mean hides what the slowest users see; judge percentiles.",
	}, true
}

// smallSample flags percentiles asked of too few samples (fewer than
// stats.MinSamples(p)): such a percentile is little more than the maximum.
func smallSample(in Input) (Finding, bool) {
	s := in.Summary
	ev := map[string]any{}
	var parts []string
	for _, p := range s.Options.Percentiles {
		need := stats.MinSamples(p)
		var short []string
		for _, m := range s.Metrics {
			if m.N > 0 && m.N < need {
				short = append(short, fmt.Sprintf("%s (%d)", m.Name, m.N))
			}
		}
		if len(short) > 0 {
			name := "p" + stats.PercentileName(p)
			ev[name+"_needs"] = need
			parts = append(parts, fmt.Sprintf("%s needs %d samples, %s had fewer", name, need, strings.Join(short, ", ")))
		}
	}
	if len(parts) == 0 {
		return Finding{}, false
	}
	return Finding{ID: "small-sample", Severity: Warning, Evidence: ev,
		Message: "Percentile sample too small: " + strings.Join(parts, "; ") + ". Those percentiles are little more than the largest value; send more requests.",
	}, true
}

// upperFirst capitalises the first letter of an ASCII word list.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// sharingDatasets are the workloads whose prompts share their history by
// design: multi-turn sessions and agent job traces.
var sharingDatasets = map[string]bool{"conversations": true, "mooncake-sessions": true, "weka": true, "tracelab": true, "otel": true}
