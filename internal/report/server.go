package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// shownUnit is how a canonical unit is printed: the factor from the base
// unit, the label in brackets and the number format.
type shownUnit struct {
	scale  float64
	label  string
	format func(float64) string
}

// unitOf takes the unit from the servermetrics vocabulary, so a label can
// never disagree with the scale applied: fractions print as %, seconds as
// ms, bytes as GiB.
func unitOf(n servermetrics.Name) shownUnit {
	d, _ := servermetrics.Lookup(n)
	switch d.Unit {
	case "ratio":
		return shownUnit{100, "%", f1}
	case "seconds":
		return shownUnit{1e3, "ms", f2}
	case "bytes":
		return shownUnit{1.0 / (1 << 30), "GiB", f2}
	case "watts":
		return shownUnit{1, "W", f1}
	case "tokens":
		return shownUnit{1, "tok", tok}
	case "tokens/s":
		return shownUnit{1, "tok/s", f2}
	}
	return shownUnit{1, "", f2} // requests, steps: plain counts
}

// labelled appends the unit to a label: "KV cache usage" → "KV cache usage (%)".
func (u shownUnit) labelled(s string) string {
	if u.label == "" {
		return s
	}
	return s + " (" + u.label + ")"
}

func (u shownUnit) meanMax(g servermetrics.GaugeStats) string {
	return u.format(u.scale*g.Mean) + " / " + u.format(u.scale*g.Max)
}

// serverGauges are the engine's gauges the block shows, in order.
var serverGauges = []struct {
	name  servermetrics.Name
	label string
}{
	{servermetrics.Running, "Requests running"},
	{servermetrics.Waiting, "Requests waiting"},
	{servermetrics.KVUsage, "KV cache usage"},
}

// serverHistograms are the per-request histograms the block and the JSON
// show, in order, with their JSON keys.
var serverHistograms = []struct {
	name  servermetrics.Name
	label string
	key   string
}{
	{servermetrics.QueueTime, "Queue time", "queue_time_ms"},
	{servermetrics.PrefillTime, "Prefill time", "prefill_time_ms"},
	{servermetrics.DecodeTime, "Decode time", "decode_time_ms"},
	{servermetrics.TTFT, "Server TTFT", "ttft_ms"},
}

// gpuGauges are the per-GPU gauges (DCGM), in order, with their JSON key
// stems.
var gpuGauges = []struct {
	name  servermetrics.Name
	label string
	key   string
}{
	{servermetrics.GPUUtil, "utilisation", "util"},
	{servermetrics.GPUPowerWatts, "power", "power_watts"},
	{servermetrics.GPUMemUsedBytes, "memory used", "mem_used_bytes"},
}

// quantile prints what a histogram proves of a quantile: one figure when
// the range is one, "≤ hi" from 0, "≥ lo" with no upper bound, else
// "lo–hi".
func (u shownUnit) quantile(r servermetrics.Range) string {
	lo, hi := u.format(u.scale*r.Lo), u.format(u.scale*r.Hi)
	switch {
	case r.Exact() || lo == hi:
		return hi
	case math.IsInf(r.Hi, 1):
		return "≥ " + lo
	case r.Lo <= 0:
		return "≤ " + hi
	}
	return lo + "–" + hi
}

// perRequest is the requests' own timing of a server histogram, in ms,
// when the split has it: the queue (when the server reported one),
// prefill and decode.
func perRequest(split *breakdown.TTFTSplit, n servermetrics.Name) (stats.MetricSummary, bool) {
	if split == nil || split.N == 0 {
		return stats.MetricSummary{}, false
	}
	switch n {
	case servermetrics.QueueTime:
		return split.Queue, split.QueueKnown && split.Queue.N > 0
	case servermetrics.PrefillTime:
		return split.Prefill, split.Prefill.N > 0
	case servermetrics.DecodeTime:
		return split.Decode, split.Decode.N > 0
	}
	return stats.MetricSummary{}, false
}

// observed returns a histogram of the window that holds observations: a
// histogram the server reports but that saw no request finish inside the
// window has no quantiles to show.
func observed(win *servermetrics.Window, n servermetrics.Name) (servermetrics.HistogramStats, bool) {
	h, ok := win.Histograms[n]
	return h, ok && h.Count > 0
}

// SpecAcceptance is the share (0–1) of speculative decoding's draft
// tokens the server accepted over the window, from its counters (vLLM's
// spec_decode ones); false when it drafted nothing or does not say.
func SpecAcceptance(win *servermetrics.Window) (float64, bool) {
	if win == nil {
		return 0, false
	}
	d := win.Increase[servermetrics.SpecDraftTokens]
	if !(d > 0) {
		return 0, false
	}
	return win.Increase[servermetrics.SpecAcceptedTokens] / d, true
}

// prefixHitRate is the window's prefix-cache hit rate (0–1): the ratio of
// the hit and query counters' increases, else the mean of the server's own
// hit-rate gauge (SGLang without the counters); false when neither exists.
func prefixHitRate(win *servermetrics.Window) (float64, bool) {
	if win.Increase[servermetrics.PrefixQueries] > 0 {
		return win.PrefixHitRate, true
	}
	if g, ok := win.Gauges[servermetrics.PrefixHitRate]; ok {
		return g.Mean, true
	}
	return 0, false
}

// tokenRates says whether the window has a prompt and a generation token
// throughput: from the token counters or, without them, from the
// per-request token histograms (the rule servermetrics.Compute follows).
func tokenRates(win *servermetrics.Window) (prompt, generation bool) {
	has := func(counter, hist servermetrics.Name) bool {
		_, c := win.Rate[counter]
		_, h := win.Histograms[hist]
		return c || h
	}
	return has(servermetrics.PromptTokens, servermetrics.RequestPromptTokens),
		has(servermetrics.GenerationTokens, servermetrics.RequestGenerationTokens)
}

// restarts is the number of server restarts the window saw: the most
// resets any one counter or histogram went through.
func restarts(win *servermetrics.Window) int {
	n := 0
	for _, r := range win.Resets {
		n = max(n, r)
	}
	return n
}

// gpuIDs orders GPU IDs by device index ("2" before "10"), then by the
// rest of the ID (a MIG instance's "/<GPU_I_ID>"); IDs without an index
// come last, in string order.
func gpuIDs(win *servermetrics.Window) []string {
	index := func(id string) (int, bool) {
		head, _, _ := strings.Cut(id, "/")
		i, err := strconv.Atoi(head)
		return i, err == nil
	}
	ids := slices.Collect(maps.Keys(win.GPUs))
	slices.SortFunc(ids, func(a, b string) int {
		ai, aok := index(a)
		bi, bok := index(b)
		switch {
		case aok && bok && ai != bi:
			return cmp.Compare(ai, bi)
		case aok != bok:
			if aok {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	return ids
}

// ServerTerminal writes the server's own view of one load level, computed
// from scrapes of its /metrics, as a block in the style of Terminal's:
// requests running and waiting and KV cache usage (mean / max over the
// scrapes), preemptions (count and per second), the prefix-cache hit rate,
// prompt (prefill) and generation (decode) token throughput and requests
// finished per second from the server's counters, queue, prefill, decode
// time and TTFT mean and P50 / P99 from the server's histograms (ms; a
// percentile as the range its bucket proves, "≤ 300.00" or "250.00–300.00",
// never a figure interpolated inside it), and per GPU
// (DCGM) utilisation, power and memory used (mean / max). A line appears
// only for a figure the window has; for a nil window, or one without
// scrapes, nothing is written. It returns the writer's error.
func ServerTerminal(w io.Writer, win *servermetrics.Window) error {
	return ServerTerminalTimed(w, win, nil)
}

// ServerTerminalTimed is ServerTerminal for a level whose requests also
// carried the server's own timing (split, nil for none): the queue,
// prefill and decode lines then take their mean and percentiles from the
// requests, marked "(per request)", instead of the histograms' buckets.
func ServerTerminalTimed(w io.Writer, win *servermetrics.Window, split *breakdown.TTFTSplit) error {
	if win == nil || win.Scrapes == 0 {
		return nil
	}
	t := &term{}
	t.header(" Server side ", '=')
	label := "Scrapes:"
	if win.Kind != servermetrics.KindUnknown {
		label = "Scrapes (" + string(win.Kind) + "):"
	}
	t.line(label, fmt.Sprintf("%d over %s s", win.Scrapes, f2(win.Seconds())))
	if n := restarts(win); n > 0 {
		t.line("Server restarts (counters reset):", strconv.Itoa(n))
	}
	for _, g := range serverGauges {
		if st, ok := win.Gauges[g.name]; ok {
			u := unitOf(g.name)
			t.line(u.labelled(g.label)+" mean/max:", u.meanMax(st))
		}
	}
	if n, ok := win.Increase[servermetrics.Preemptions]; ok {
		t.line("Preemptions:", fmt.Sprintf("%s (%s/s)", tok(n), f2(win.Rate[servermetrics.Preemptions])))
	}
	if r, ok := prefixHitRate(win); ok {
		t.line("Prefix cache hit rate (%):", f1(100*r))
	}
	if r, ok := SpecAcceptance(win); ok {
		t.line("Spec. decoding acceptance (%):", fmt.Sprintf("%s (%s of %s draft tokens)", f1(100*r),
			tok(win.Increase[servermetrics.SpecAcceptedTokens]), tok(win.Increase[servermetrics.SpecDraftTokens])))
	}
	prompt, gen := tokenRates(win)
	if prompt {
		t.line("Prompt (prefill) throughput (tok/s):", f2(win.PromptTokensPerSec))
	}
	if gen {
		t.line("Generation (decode) throughput (tok/s):", f2(win.GenerationTokensPerSec))
	}
	if r, ok := win.Rate[servermetrics.RequestsFinished]; ok {
		t.line("Requests finished (req/s):", f2(r))
	}

	head := false
	for _, h := range serverHistograms {
		st, ok := observed(win, h.name)
		if !ok {
			continue
		}
		if !head {
			t.header(" From the server's histograms ", '-')
			head = true
		}
		u := unitOf(h.name)
		label := u.labelled(h.label) + " mean, P50/P99:"
		if m, ok := perRequest(split, h.name); ok {
			// The same figure timed request by request: exact where the
			// buckets could only bound it.
			t.line(label, f2(m.Mean)+", "+p50p99(m)+" (per request)")
			continue
		}
		// The mean is exact (sum over count); a percentile is only known
		// to lie in its bucket (narrowed by the mean and the longest
		// request), so the range is printed, not a figure inside it.
		t.line(label, u.format(u.scale*st.Mean)+", "+u.quantile(st.P50Range)+" / "+u.quantile(st.P99Range))
	}

	if len(win.GPUs) > 0 {
		t.header(" GPUs (DCGM) ", '-')
		for _, id := range gpuIDs(win) {
			for _, g := range gpuGauges {
				if st, ok := win.GPUs[id][g.name]; ok {
					u := unitOf(g.name)
					t.line("GPU "+id+" "+u.labelled(g.label)+" mean/max:", u.meanMax(st))
				}
			}
		}
	}
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// ServerJSON is the server's view of one load level as JSON: the figures
// ServerTerminal prints, with snake_case keys. Fractions (kv_usage_*,
// prefix_hit_rate, a GPU's util_*) are 0–1, rates per second, histogram
// figures in ms ({p50, p90, p99, mean, count}), a GPU's power in watts and
// memory in bytes. A figure the window lacks is left out, not written as
// zero. It returns nil for a nil window or one without scrapes.
func ServerJSON(win *servermetrics.Window) map[string]any {
	return ServerJSONTimed(win, nil)
}

// ServerJSONTimed is ServerJSON for a level whose requests carried the
// server's own timing (split, nil for none), preferred as
// ServerTerminalTimed prefers it. Each histogram figure says its
// "source": "histogram" ({p50, p90, p99} are interpolated estimates held
// inside {p50_min, p50_max, …}, the range the buckets, the mean and the
// longest request prove; a _max is left out when nothing bounds it) or
// "per_request" (exact percentiles of the requests' own timing, at the
// run's percentiles).
func ServerJSONTimed(win *servermetrics.Window, split *breakdown.TTFTSplit) map[string]any {
	if win == nil || win.Scrapes == 0 {
		return nil
	}
	m := map[string]any{"scrapes": win.Scrapes, "seconds": win.Seconds()}
	if win.Kind != servermetrics.KindUnknown {
		m["kind"] = string(win.Kind)
	}
	if n := restarts(win); n > 0 {
		m["restarts"] = n
	}
	gauge := func(key string, n servermetrics.Name) {
		if g, ok := win.Gauges[n]; ok {
			m[key+"_mean"], m[key+"_max"] = g.Mean, g.Max
		}
	}
	gauge("running", servermetrics.Running)
	gauge("waiting", servermetrics.Waiting)
	gauge("kv_usage", servermetrics.KVUsage)
	if n, ok := win.Increase[servermetrics.Preemptions]; ok {
		m["preemptions"], m["preemptions_per_s"] = n, win.Rate[servermetrics.Preemptions]
	}
	if r, ok := prefixHitRate(win); ok {
		m["prefix_hit_rate"] = r
	}
	prompt, gen := tokenRates(win)
	if prompt {
		m["prompt_tokens_per_s"] = win.PromptTokensPerSec
	}
	if gen {
		m["generation_tokens_per_s"] = win.GenerationTokensPerSec
	}
	if r, ok := win.Rate[servermetrics.RequestsFinished]; ok {
		m["requests_per_s"] = r
	}
	for _, h := range serverHistograms {
		st, ok := observed(win, h.name)
		if !ok {
			continue
		}
		if pr, ok := perRequest(split, h.name); ok {
			e := map[string]any{"mean": pr.Mean, "count": pr.N, "source": "per_request"}
			for _, p := range pr.Percentiles {
				e["p"+stats.PercentileName(p.P)] = p.Value
			}
			m[h.key] = e
			continue
		}
		e := map[string]any{"p50": 1e3 * st.P50, "p90": 1e3 * st.P90, "p99": 1e3 * st.P99, "mean": 1e3 * st.Mean, "count": st.Count,
			"source": "histogram"}
		for _, q := range []struct {
			key string
			r   servermetrics.Range
		}{{"p50", st.P50Range}, {"p90", st.P90Range}, {"p99", st.P99Range}} {
			e[q.key+"_min"] = 1e3 * q.r.Lo
			if !math.IsInf(q.r.Hi, 1) {
				e[q.key+"_max"] = 1e3 * q.r.Hi
			}
		}
		m[h.key] = e
	}
	if len(win.GPUs) > 0 {
		var gpus []map[string]any
		for _, id := range gpuIDs(win) {
			g := map[string]any{"id": id}
			for _, gg := range gpuGauges {
				if st, ok := win.GPUs[id][gg.name]; ok {
					g[gg.key+"_mean"], g[gg.key+"_max"] = st.Mean, st.Max
				}
			}
			gpus = append(gpus, g)
		}
		m["gpus"] = gpus
	}
	return m
}
