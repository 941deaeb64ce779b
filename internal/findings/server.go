package findings

import (
	"fmt"
	"sort"

	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// Thresholds of the server-evidence rules (see docs/sweep.md, "Server
// evidence"). Server histograms are in seconds; the client's summary and
// these constants are in ms.
const (
	// serverWaitingMean: a mean queue above half a request over the
	// window's scrapes means requests waited in most of them, not once
	// between two scheduler steps.
	serverWaitingMean = 0.5
	// serverWaitingMax: a scrape that saw two requests waiting shows a
	// queue even when the mean stays low (a burst).
	serverWaitingMax = 2.0
	// serverQueueOverPrefill: the server's mean queue time at least this
	// times its mean prefill time means waiting, not compute, dominates
	// the time to the first token.
	serverQueueOverPrefill = 2.0
	// serverQueueMinMs is the mean queue time, ms, below which queueing is
	// not worth a warning whatever its share: a few ms of scheduling delay
	// is normal at any load.
	serverQueueMinMs = 50.0
	// serverQueueShareOfTTFT: a mean queue time of at least this share of
	// the client's mean TTFT means queueing is a large part of what users
	// wait for, even where prefill is long too.
	serverQueueShareOfTTFT = 0.3
	// serverKVFull is the KV cache usage (0–1) from which the cache is the
	// limit: vLLM preempts when it cannot allocate a block, and blocks are
	// allocated ahead, so 95 % is as full as it gets in practice.
	serverKVFull = 0.95
	// serverPrefixHitLow is the prefix-cache hit rate (0–1) below which the
	// cache hardly helped: fewer than one prompt token in ten was reused.
	serverPrefixHitLow = 0.10
	// serverPrefixMinQueries is the fewest prompt tokens looked up in the
	// prefix cache (a few requests' worth) that the hit rate needs to say
	// anything.
	serverPrefixMinQueries = 1000.0
	// clientGapMinMs and clientGapShare: the client's mean TTFT at least
	// this many ms and this share above the server's own is time spent
	// outside the engine (network, HTTP, the client), more than timer
	// noise or the first chunk's flush.
	clientGapMinMs = 50.0
	clientGapShare = 0.3
	// gpuIdleUtil is the mean GPU utilisation (0–1, DCGM's share of time a
	// kernel ran) below which the GPUs had compute to spare.
	gpuIdleUtil = 0.5
)

// ServerEvidence judges one level by what the server said about it: the
// client's summary s of the level beside the server's window w over the
// same stretch of time. Each finding names the server metric it read (the
// server's own family, e.g. vllm:num_requests_waiting, and the canonical
// name) and carries the figures in its evidence, with the families read
// under "server_metrics". In order:
//
//   - server-queueing (warning): requests waiting (mean > 0.5 or max ≥ 2)
//     and a mean queue time of at least 50 ms that is ≥ 2× the mean prefill
//     time or ≥ 30 % of the client's mean TTFT.
//   - server-kv-pressure (warning): KV cache usage max ≥ 95 %, or any
//     preemption in the window.
//   - gpu-idle-while-queueing (warning): mean GPU utilisation < 50 % while
//     requests waited (mean > 0.5): a scheduler or batching limit.
//   - client-side-latency (warning): the client's mean TTFT exceeds the
//     server's (its TTFT histogram, else queue + prefill time) by ≥ 50 ms
//     and by ≥ 30 % of the client's.
//   - server-prefix-cache-low (info): prefix-cache hit rate < 10 % over at
//     least 1,000 prompt tokens looked up.
//
// s may be nil (the rules that need the client's TTFT then stay quiet); a
// nil w yields nil, and so does a window where no rule holds. It is pure
// and safe for concurrent use.
func ServerEvidence(s *stats.Summary, w *servermetrics.Window, o ServerOptions) []Finding {
	if w == nil {
		return nil
	}
	v := serverView{s: s, w: w}
	var fs []Finding
	rules := []func(serverView) (Finding, bool){serverQueueing, serverKVPressure, gpuIdleWhileQueueing, clientSideLatency}
	switch {
	case o.SharedPrefixTokens > 0 && s != nil:
		rules = append(rules, func(v serverView) (Finding, bool) { return prefixCacheBelowImplied(v, o.SharedPrefixTokens) })
	case o.SharedPrefixes:
		rules = append(rules, serverPrefixCacheLow)
	}
	for _, rule := range rules {
		if f, ok := rule(v); ok {
			fs = append(fs, f)
		}
	}
	return fs
}

// Reconcile drops from fs (a copy) the client-side diagnoses that a
// server finding with better evidence contradicts or settles, so that no
// finding fires beside one that shows it wrong: when the server confirms
// queueing (server-queueing), ttft-high's "cannot tell queueing from
// prefill" goes, and so does ttft-prefill when the server's mean queue
// time was at least twice its mean prefill time.
func Reconcile(fs []Finding) []Finding {
	q, ok := findID(fs, "server-queueing")
	if !ok {
		return fs
	}
	queue, _ := q.Evidence["queue_time_mean_ms"].(float64)
	prefill, okPrefill := q.Evidence["prefill_time_mean_ms"].(float64)
	queueDominates := okPrefill && queue >= serverQueueOverPrefill*prefill
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if f.ID == "ttft-high" || (f.ID == "ttft-prefill" && queueDominates) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// findID is the finding of fs with the given id.
func findID(fs []Finding, id string) (Finding, bool) {
	for _, f := range fs {
		if f.ID == id {
			return f, true
		}
	}
	return Finding{}, false
}

// ServerOptions say what ServerEvidence knows of the workload.
type ServerOptions struct {
	// SharedPrefixes says the prompts share prefixes (sessions resending
	// their history, a shared system prompt), so that a low prefix-cache
	// hit rate is a fault to report; random prompts share nothing, and a
	// low rate says nothing about them.
	SharedPrefixes bool
	// SharedPrefixTokens is how many leading prompt tokens each request
	// shares with others by the workload's design (a shared system prompt,
	// --random-prefix-len, prefix repetition); with it the rule compares
	// the hit rate with the share those tokens imply of the prompts.
	SharedPrefixTokens int
}

// serverView is what the server-evidence rules read.
type serverView struct {
	s *stats.Summary
	w *servermetrics.Window
}

// gauge returns the named gauge when some scrape reported it.
func (v serverView) gauge(n servermetrics.Name) (servermetrics.GaugeStats, bool) {
	g, ok := v.w.Gauges[n]
	return g, ok && g.N > 0
}

// histMs returns the named histogram's mean over the window, ms, when it
// observed something.
func (v serverView) histMs(n servermetrics.Name) (float64, bool) {
	h, ok := v.w.Histograms[n]
	if !ok || h.Count <= 0 {
		return 0, false
	}
	return 1e3 * h.Mean, true
}

// clientTTFTMs is the client's mean TTFT, ms, when it measured one.
func (v serverView) clientTTFTMs() (float64, bool) {
	if v.s == nil {
		return 0, false
	}
	m, ok := metric(v.s, stats.MetricTTFT)
	return m.Mean, ok
}

// gpuUtil is the mean GPU utilisation (0–1) over the window: the mean over
// GPUs of each GPU's mean, else the snapshots' own mean over GPUs.
func (v serverView) gpuUtil() (util float64, gpus int, ok bool) {
	var sum float64
	for _, g := range v.w.GPUs {
		if u, ok := g[servermetrics.GPUUtil]; ok && u.N > 0 {
			sum += u.Mean
			gpus++
		}
	}
	if gpus > 0 {
		return sum / float64(gpus), gpus, true
	}
	if u, ok := v.gauge(servermetrics.GPUUtil); ok {
		return u.Mean, 0, true
	}
	return 0, 0, false
}

// name is how a message names a metric: the server's own family (the
// window's kind's, else vLLM's, else the first server's that has one)
// with the canonical name, e.g. "vllm:num_requests_waiting (waiting)".
func (v serverView) name(n servermetrics.Name) string {
	return v.family(n) + " (" + string(n) + ")"
}

// family is the exposed family behind canonical n for this window.
func (v serverView) family(n servermetrics.Name) string {
	d, ok := servermetrics.Lookup(n)
	if !ok {
		return string(n)
	}
	for _, k := range []servermetrics.Kind{v.w.Kind, servermetrics.KindVLLM} {
		if src := d.Sources[k]; len(src) > 0 {
			return src[0].Family
		}
	}
	kinds := make([]string, 0, len(d.Sources))
	for k := range d.Sources {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if src := d.Sources[servermetrics.Kind(k)]; len(src) > 0 {
			return src[0].Family
		}
	}
	return string(n)
}

// evidence starts a finding's evidence: the server kind and, under
// "server_metrics", the family read for each canonical name.
func (v serverView) evidence(read ...servermetrics.Name) map[string]any {
	m := make(map[string]string, len(read))
	for _, n := range read {
		m[string(n)] = v.family(n)
	}
	return map[string]any{"server_kind": string(v.w.Kind), "server_metrics": m}
}

// serverQueueing is queueing confirmed by the server: requests waited
// (waiting mean > 0.5, or max ≥ 2) and the mean queue time, at least
// 50 ms, is at least twice the mean prefill time or at least 30 % of the
// client's mean TTFT.
func serverQueueing(v serverView) (Finding, bool) {
	wait, ok := v.gauge(servermetrics.Waiting)
	if !ok || (wait.Mean <= serverWaitingMean && wait.Max < serverWaitingMax) {
		return Finding{}, false
	}
	queue, ok := v.histMs(servermetrics.QueueTime)
	if !ok || queue < serverQueueMinMs {
		return Finding{}, false
	}
	prefill, okPrefill := v.histMs(servermetrics.PrefillTime)
	ttft, okTTFT := v.clientTTFTMs()
	overPrefill := okPrefill && queue >= serverQueueOverPrefill*prefill
	shareOfTTFT := okTTFT && ttft > 0 && queue >= serverQueueShareOfTTFT*ttft
	if !overPrefill && !shareOfTTFT {
		return Finding{}, false
	}
	kv, okKV := v.gauge(servermetrics.KVUsage)
	read := []servermetrics.Name{servermetrics.Waiting, servermetrics.QueueTime}
	if okPrefill {
		read = append(read, servermetrics.PrefillTime)
	}
	if okKV {
		read = append(read, servermetrics.KVUsage)
	}
	ev := v.evidence(read...)
	ev["waiting_mean"], ev["waiting_max"] = round2(wait.Mean), round2(wait.Max)
	ev["queue_time_mean_ms"] = round2(queue)
	var why []string
	if okPrefill {
		ev["prefill_time_mean_ms"] = round2(prefill)
		switch {
		case overPrefill && prefill > 0:
			why = append(why, fmt.Sprintf("%s× the mean %s of %s", num(queue/prefill), v.name(servermetrics.PrefillTime), dur(prefill)))
		case overPrefill:
			why = append(why, fmt.Sprintf("while the mean %s was 0 ms", v.name(servermetrics.PrefillTime)))
		}
	}
	if okTTFT && ttft > 0 {
		ev["client_ttft_mean_ms"] = round2(ttft)
		ev["queue_share_of_ttft_pct"] = pctOf(queue, ttft)
		if shareOfTTFT {
			why = append(why, fmt.Sprintf("%s %% of the client's mean TTFT of %s", num(100*queue/ttft), dur(ttft)))
		}
	}
	room := ""
	if okKV {
		ev["kv_usage_max_pct"] = round2(100 * kv.Max)
		room = fmt.Sprintf(" (%s peaked at %s %%)", v.name(servermetrics.KVUsage), num(100*kv.Max))
	}
	return Finding{ID: "server-queueing", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("The server confirms queueing: %s averaged %s requests (max %s) and the mean %s was %s, %s. Requests wait for a slot before prefill starts: add replicas, lower the load, or raise --max-num-seqs if the KV cache has room%s.",
			v.name(servermetrics.Waiting), num(wait.Mean), num(wait.Max), v.name(servermetrics.QueueTime), dur(queue), joinAnd(why), room),
	}, true
}

// serverKVPressure is the KV cache as the limit: usage reached 95 %, or
// the server preempted requests in the window.
func serverKVPressure(v serverView) (Finding, bool) {
	kv, okKV := v.gauge(servermetrics.KVUsage)
	pre, okPre := v.w.Increase[servermetrics.Preemptions]
	full := okKV && kv.Max >= serverKVFull
	preempted := okPre && pre > 0
	if !full && !preempted {
		return Finding{}, false
	}
	var read []servermetrics.Name
	if okKV {
		read = append(read, servermetrics.KVUsage)
	}
	if okPre {
		read = append(read, servermetrics.Preemptions)
	}
	ev := v.evidence(read...)
	var seen []string
	if okKV {
		ev["kv_usage_max_pct"], ev["kv_usage_mean_pct"] = round2(100*kv.Max), round2(100*kv.Mean)
		seen = append(seen, fmt.Sprintf("%s peaked at %s %% (mean %s %%)", v.name(servermetrics.KVUsage), num(100*kv.Max), num(100*kv.Mean)))
	}
	if okPre {
		rate := v.w.Rate[servermetrics.Preemptions]
		ev["preemptions"], ev["preemptions_per_s"] = round2(pre), round2(rate)
		seen = append(seen, fmt.Sprintf("%s rose by %s (%s/s)", v.name(servermetrics.Preemptions), num(pre), num(rate)))
	}
	effect := "the scheduler is about to preempt running requests, which recompute their prefill: TPOT spikes and TTFT tails follow"
	if preempted {
		effect = "preempted requests give up their KV blocks and recompute their prefill: TPOT spikes and TTFT tails"
	}
	return Finding{ID: "server-kv-pressure", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("The KV cache is the limit: %s; %s. Run fewer concurrent sequences (--max-num-seqs), quantize the KV cache (--kv-cache-dtype fp8), give it more GPU memory or tensor parallelism, or shorten contexts.",
			joinAnd(seen), effect),
	}, true
}

// gpuIdleWhileQueueing is requests waiting (mean > 0.5) while the GPUs
// were busy less than half the time: something other than compute holds
// them back.
func gpuIdleWhileQueueing(v serverView) (Finding, bool) {
	wait, ok := v.gauge(servermetrics.Waiting)
	if !ok || wait.Mean <= serverWaitingMean {
		return Finding{}, false
	}
	util, gpus, ok := v.gpuUtil()
	if !ok || util >= gpuIdleUtil {
		return Finding{}, false
	}
	kv, okKV := v.gauge(servermetrics.KVUsage)
	read := []servermetrics.Name{servermetrics.Waiting, servermetrics.GPUUtil}
	if okKV {
		read = append(read, servermetrics.KVUsage)
	}
	ev := v.evidence(read...)
	ev["waiting_mean"], ev["gpu_util_mean_pct"] = round2(wait.Mean), round2(100*util)
	over := ""
	if gpus > 0 {
		ev["gpus"] = gpus
		over = fmt.Sprintf(", mean over %d GPUs", gpus)
	}
	kvFull := ""
	if okKV {
		ev["kv_usage_max_pct"] = round2(100 * kv.Max)
		if kv.Max >= serverKVFull {
			kvFull = fmt.Sprintf(" With %s at %s %%, the full KV cache may be what admits no more (see server-kv-pressure).", v.name(servermetrics.KVUsage), num(100*kv.Max))
		}
	}
	return Finding{ID: "gpu-idle-while-queueing", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("GPUs were busy only %s %% of the time (%s%s) while %s averaged %s requests: requests wait although compute is free, so a scheduler or batching limit holds them back (--max-num-seqs, --max-num-batched-tokens), not compute.%s",
			num(100*util), v.name(servermetrics.GPUUtil), over, v.name(servermetrics.Waiting), num(wait.Mean), kvFull),
	}, true
}

// clientSideLatency is a client TTFT well above the server's own: the
// server's TTFT histogram mean (else its queue + prefill means) at least
// 50 ms and 30 % below the client's mean TTFT.
func clientSideLatency(v serverView) (Finding, bool) {
	client, ok := v.clientTTFTMs()
	if !ok || client <= 0 {
		return Finding{}, false
	}
	server, ok := v.histMs(servermetrics.TTFT)
	read := []servermetrics.Name{servermetrics.TTFT}
	what := "mean " + v.name(servermetrics.TTFT)
	if !ok {
		queue, okQ := v.histMs(servermetrics.QueueTime)
		prefill, okP := v.histMs(servermetrics.PrefillTime)
		if !okQ || !okP {
			return Finding{}, false
		}
		server, read = queue+prefill, []servermetrics.Name{servermetrics.QueueTime, servermetrics.PrefillTime}
		what = "mean " + v.name(servermetrics.QueueTime) + " + " + v.name(servermetrics.PrefillTime)
	}
	gap := client - server
	if gap < clientGapMinMs || gap < clientGapShare*client {
		return Finding{}, false
	}
	ev := v.evidence(read...)
	ev["client_ttft_mean_ms"], ev["server_ttft_mean_ms"] = round2(client), round2(server)
	ev["gap_ms"], ev["gap_pct"] = round2(gap), pctOf(gap, client)
	return Finding{ID: "client-side-latency", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("The client's mean TTFT of %s is %s (%s %%) above the server's own, %s by %s: that time is spent outside the engine — network, HTTP and the client — so tuning the server will not remove it. Measure closer to the server, or check proxies and the client's load.",
			dur(client), dur(gap), num(100*gap/client), dur(server), what),
	}, true
}

// serverPrefixCacheLow states a prefix-cache hit rate below 10 % over at
// least 1,000 prompt tokens looked up. Whether the workload should have hit
// more is judged elsewhere; this only says what the server saw.
func serverPrefixCacheLow(v serverView) (Finding, bool) {
	queries := v.w.Increase[servermetrics.PrefixQueries]
	if queries < serverPrefixMinQueries || v.w.PrefixHitRate >= serverPrefixHitLow {
		return Finding{}, false
	}
	hits := v.w.Increase[servermetrics.PrefixHits]
	ev := v.evidence(servermetrics.PrefixHits, servermetrics.PrefixQueries)
	ev["prefix_hit_pct"] = round2(100 * v.w.PrefixHitRate)
	ev["prefix_queries_tokens"], ev["prefix_hits_tokens"] = round2(queries), round2(hits)
	return Finding{ID: "server-prefix-cache-low", Severity: Info, Evidence: ev,
		Message: fmt.Sprintf("The server's prefix cache hit %s %% of the prompt tokens it looked up (%s of %s, from %s / %s): prompts shared little reusable prefix, or it was evicted before reuse.",
			num(100*v.w.PrefixHitRate), num(hits), num(queries), v.name(servermetrics.PrefixHits), v.name(servermetrics.PrefixQueries)),
	}, true
}

// prefixImpliedMinShare is the least share of the prompts a workload's
// shared prefix must be for a miss to matter; below it the cache saves
// little whatever it does.
const prefixImpliedMinShare = 0.1

// prefixCacheBelowImplied compares the server's prefix-cache hit rate with
// what the workload implies: each request shares shared tokens of its mean
// prompt, so a working cache hits about that share (less the first request
// of each prefix). Under half of it, the cache is not doing its job: off,
// too small for the prefixes, or evicting them between uses.
func prefixCacheBelowImplied(v serverView, shared int) (Finding, bool) {
	queries := v.w.Increase[servermetrics.PrefixQueries]
	// A server whose cache is off looks nothing up: its prompt tokens
	// still grow, its cache queries do not.
	off := queries == 0 && v.w.Increase[servermetrics.PromptTokens] >= serverPrefixMinQueries
	if (queries < serverPrefixMinQueries && !off) || v.s.Completed == 0 || v.s.InputTokens <= 0 {
		return Finding{}, false
	}
	meanPrompt := float64(v.s.InputTokens) / float64(v.s.Completed)
	implied := min(float64(shared)/meanPrompt, 1)
	if implied < prefixImpliedMinShare || (!off && v.w.PrefixHitRate >= implied/2) {
		return Finding{}, false
	}
	ev := v.evidence(servermetrics.PrefixHits, servermetrics.PrefixQueries, servermetrics.PromptTokens)
	ev["prefix_hit_pct"], ev["implied_hit_pct"] = round2(100*v.w.PrefixHitRate), round2(100*implied)
	ev["shared_prefix_tokens"], ev["mean_prompt_tokens"] = shared, round2(meanPrompt)
	if off {
		ev["prefix_queries_tokens"] = 0
		return Finding{ID: "server-prefix-cache-low", Severity: Warning, Evidence: ev,
			Message: fmt.Sprintf("The server looked up no prompt tokens in a prefix cache (%s did not grow while %s did): prefix caching is off, while the workload shares %d leading tokens of a %s-token mean prompt, about %s %% it could serve from the cache. Enable it (vLLM --enable-prefix-caching).",
				v.name(servermetrics.PrefixQueries), v.name(servermetrics.PromptTokens), shared, num(meanPrompt), num(100*implied)),
		}, true
	}
	return Finding{ID: "server-prefix-cache-low", Severity: Warning, Evidence: ev,
		Message: fmt.Sprintf("The server's prefix cache hit %s %% of the prompt tokens it looked up (%s / %s), while the workload shares %d leading tokens of a %s-token mean prompt, about %s %%: the cache is off, too small for the shared prefixes, or evicts them between uses. Enable prefix caching (vLLM --enable-prefix-caching), give the KV cache more memory, or route requests that share a prefix to the same replica.",
			num(100*v.w.PrefixHitRate), v.name(servermetrics.PrefixHits), v.name(servermetrics.PrefixQueries), shared, num(meanPrompt), num(100*implied)),
	}, true
}

// joinAnd joins phrases as "a", "a and b", "a, b and c".
func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	out := parts[0]
	for _, p := range parts[1 : len(parts)-1] {
		out += ", " + p
	}
	return out + " and " + parts[len(parts)-1]
}
