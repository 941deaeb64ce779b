// Package report renders a stats.Summary for people and for scripts: the
// terminal block laid out like `vllm bench serve`'s result (same labels, two
// decimals) followed by goodput's own sections, and the --save-result JSON
// file carrying vLLM's keys with ours beside them, plus a parser for that
// file so later runs can be compared against it.
//
// A level's breakdowns (package breakdown) render through one Section
// each, registered beside its renderers (RegisterSection), so a caller
// loops over Sections instead of naming each block.
//
// The package is pure: it writes to the io.Writer it is given and reads no
// flags, arguments or environment (the caller says whether colour is wanted).
// Its functions are safe for concurrent use; RegisterSection is for
// package initialisation only.
package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// TermOptions controls terminal rendering.
type TermOptions struct {
	// TTY says the writer is a terminal.
	TTY bool
	// NoColor says the user asked for no colour (NO_COLOR set). Colour is
	// used only when TTY is true and NoColor is false.
	NoColor bool
}

func (o TermOptions) color() bool { return o.TTY && !o.NoColor }

// ANSI styles, used only when TermOptions.color() holds.
const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// metricInfo names a metric the way vLLM prints it: label within lines
// ("Mean TTFT (ms):") and the block header.
type metricInfo struct{ label, header string }

var metricInfos = map[string]metricInfo{
	stats.MetricTTFT:     {"TTFT", "Time to First Token"},
	stats.MetricTPOT:     {"TPOT", "Time per Output Token (excl. 1st token)"},
	stats.MetricITL:      {"ITL", "Inter-token Latency"},
	stats.MetricITLToken: {"ITL per token", "Inter-token Latency (per token)"},
	stats.MetricE2E:      {"E2EL", "End-to-end Latency"},
	stats.MetricTTP:      {"TTP", "Time to Publish"},
	stats.MetricResponse: {"Response Time", "Response Time (from intended send)"},
}

// width is vLLM's block width; labels are padded to labelWidth.
const (
	width      = 50
	labelWidth = 40
)

// center pads s with c to width, the extra fill char going right, as
// Python's "{:c^50}" does.
func center(s string, c byte) string {
	fill := width - len(s)
	if fill <= 0 {
		return s
	}
	l := fill / 2
	return strings.Repeat(string(c), l) + s + strings.Repeat(string(c), fill-l)
}

// term accumulates the rendered text.
type term struct {
	b     bytes.Buffer
	color bool
}

func (t *term) style(code, s string) string {
	if !t.color {
		return s
	}
	return code + s + ansiReset
}

func (t *term) header(s string, c byte) {
	t.b.WriteString(t.style(ansiBold, center(s, c)))
	t.b.WriteByte('\n')
}

// line writes "label value" with the label padded like vLLM's "{:<40} "; the
// value is not padded, so lines carry no trailing blanks.
func (t *term) line(label, value string) {
	fmt.Fprintf(&t.b, "%-*s %s\n", labelWidth, label, value)
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// withCI is value followed by its interval, "[lo, hi]" formatted by f,
// the value padded to vLLM's ten columns so the intervals line up; a
// figure the sample cannot bracket says so. With no intervals asked for
// (level 0) it is value alone, as vLLM prints it.
func withCI(value string, iv stats.Interval, level float64, f func(float64) string) string {
	if level <= 0 {
		return value
	}
	if !iv.OK() {
		return fmt.Sprintf("%-10s (too few samples for a %s%% interval)", value, levelText(level))
	}
	return fmt.Sprintf("%-10s [%s, %s]", value, f(iv.Lo), f(iv.Hi))
}

// levelText is a confidence level as a percentage: 0.95 → "95".
func levelText(level float64) string { return strconv.FormatFloat(100*level, 'g', 4, 64) }

// tok formats a token figure to one decimal, dropping ".0" so whole counts
// read as counts (7600.000000000001 from interpolation reads 7600).
func tok(v float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
}

func pct(n, d int) string {
	if d == 0 {
		return fmt.Sprintf("%d of %d", n, d)
	}
	return fmt.Sprintf("%d of %d (%s%%)", n, d, f2(100*float64(n)/float64(d)))
}

// levelOf returns the load level the summary belongs to, if meta knows it.
func levelOf(s *stats.Summary, meta *runlog.Meta) *runlog.Level {
	if meta == nil {
		return nil
	}
	i := s.Level
	if i < 0 && len(meta.Levels) == 1 {
		i = 0
	}
	if i < 0 || i >= len(meta.Levels) {
		return nil
	}
	return &meta.Levels[i]
}

// Terminal writes s as a human-readable block to w: vLLM's result block
// (same labels and order, two decimals) with goodput's time-to-publish and
// response-time blocks, then SLO attainment, a per-input-length table,
// failures by class, the run's conditions and the warnings. meta may be nil.
// It returns the writer's error.
func Terminal(w io.Writer, s *stats.Summary, meta *runlog.Meta, opt TermOptions) error {
	t := &term{color: opt.color()}
	lv := levelOf(s, meta)

	t.header(" Serving Benchmark Result ", '=')
	t.line("Successful requests:", strconv.Itoa(s.Completed))
	failed := strconv.Itoa(s.Failed)
	if s.Failed > 0 {
		failed = t.style(ansiRed, failed)
	}
	t.line("Failed requests:", failed)
	if n := s.RetriedAttempts; n > 0 {
		// What the client offered beyond its requests: each retried
		// attempt loaded the server once more.
		t.line("Retried attempts (client retries):", fmt.Sprintf("%d, %s attempts per request", n, f2(float64(s.Requests+n)/float64(max(s.Requests, 1)))))
		// Offered against original load: a retry storm is the first
		// rising while goodput falls.
		t.line("Offered load (attempts/s):", f2(s.AttemptRate))
		t.line("Original load (requests/s):", f2(s.OriginalRate))
	}
	if lv != nil && lv.MaxConcurrency > 0 {
		t.line("Maximum request concurrency:", strconv.Itoa(lv.MaxConcurrency))
	}
	if lv != nil && lv.RequestRate > 0 {
		t.line("Request rate configured (RPS):", f2(lv.RequestRate))
	}
	if lv != nil && lv.Precision != "" {
		t.line("Target precision:", lv.Precision)
	}
	t.line("Benchmark duration (s):", f2(s.DurationS))
	t.line("Total input tokens:", strconv.FormatInt(s.InputTokens, 10))
	t.line("Total generated tokens:", strconv.FormatInt(s.OutputTokens, 10))
	lvl := s.Options.Confidence
	t.line("Request throughput (req/s):", withCI(f2(s.RequestThroughput), s.RequestThroughputCI, lvl, f2))
	if s.Embeddings > 0 {
		t.line("Embedding throughput (inputs/s):", f2(s.EmbeddingThroughput))
	}
	if s.SLO.Set {
		t.line("Request goodput (req/s):", withCI(f2(s.SLO.Goodput), s.SLO.GoodputCI, lvl, f2))
	}
	t.line("Output token throughput (tok/s):", withCI(f2(s.OutputThroughput), s.OutputThroughputCI, lvl, f2))
	t.line("Peak output token throughput (tok/s):", f2(s.PeakOutputTokensPerS))
	// vLLM prints this count with two decimals too.
	t.line("Peak concurrent requests:", f2(float64(s.PeakConcurrency)))
	// vLLM releases that print the peak lines spell this label with a capital
	// T (newer main lowercases it); scripts parsing it exist, so keep it.
	t.line("Total Token throughput (tok/s):", f2(s.TotalTokenThroughput))
	if lvl > 0 {
		t.line("Intervals [low, high]:", levelText(lvl)+"% confidence")
	}

	for _, m := range s.Metrics {
		// Per-token ITL equals ITL unless some chunk carried several tokens;
		// a duplicate block would only be noise.
		if m.Name == stats.MetricITLToken && s.MultiTokenRecords == 0 {
			continue
		}
		info, ok := metricInfos[m.Name]
		if !ok {
			info = metricInfo{m.Name, m.Name}
		}
		t.header(info.header, '-')
		t.line("Mean "+info.label+" (ms):", withCI(f2(m.Mean), m.MeanCI, lvl, f2))
		t.line("Median "+info.label+" (ms):", withCI(f2(m.Median), m.MedianCI, lvl, f2))
		for _, p := range m.Percentiles {
			t.line("P"+stats.PercentileName(p.P)+" "+info.label+" (ms):", withCI(f2(p.Value), p.CI, lvl, f2))
		}
	}

	if s.SLO.Set {
		t.header("SLO Attainment", '-')
		t.line("SLO (ms):", s.Options.SLO.String())
		att := pct(s.SLO.Good, s.Requests)
		if iv := s.SLO.AttainmentCI; lvl > 0 && iv.OK() {
			att += fmt.Sprintf(" [%s%%, %s%%]", f2(100*iv.Lo), f2(100*iv.Hi))
		}
		t.line("Requests meeting SLO:", att)
		for _, c := range s.SLO.Constraints {
			t.line(fmt.Sprintf("  %s <= %s ms:", c.Name, strconv.FormatFloat(c.LimitMs, 'f', -1, 64)), pct(c.Met, s.Requests))
		}
	}

	if len(s.Buckets) > 0 {
		t.header("By Input Length (ms)", '-')
		bucketTable(&t.b, s)
	}

	if s.Failed > 0 {
		t.header("Failures", '-')
		for _, fc := range failureClasses(s.Failures) {
			t.line(string(fc)+":", strconv.Itoa(s.Failures[fc]))
		}
		if n := s.Failures[runlog.ErrHTTP429]; n > 0 {
			// A rate limit is the vendor's policy, not a server failure:
			// say so beside the count, with the wait it advertised.
			wait := "no wait advertised"
			if r := s.RetryAfter; r.N > 0 {
				wait = fmt.Sprintf("advertised wait P50 %s ms, max %s ms (%d answers said)", f2(r.Median), f2(r.Max), r.N)
			}
			t.line("  rate limited, not failed:", wait)
		}
	}

	t.header("Conditions", '-')
	conditions(t, s, meta, lv)

	if len(s.Warnings) > 0 {
		t.header("Warnings", '-')
		for _, w := range s.Warnings {
			t.b.WriteString(t.style(ansiYellow, "! "+w))
			t.b.WriteByte('\n')
		}
	}
	t.b.WriteString(t.style(ansiBold, strings.Repeat("=", width)))
	t.b.WriteByte('\n')
	_, err := w.Write(t.b.Bytes())
	return err
}

// bucketTable writes the per-input-length table; "-" marks a figure with
// no sample or an unselected metric.
func bucketTable(w io.Writer, s *stats.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// The columns of the metrics the run measured: a run of whole answers
	// (--no-stream, embeddings) has no TTFT or TPOT to show.
	type col struct {
		name string
		p    float64
	}
	var cols []col
	head := "Input\tRequests\tFailed"
	for _, c := range []col{{stats.MetricTTFT, 50}, {stats.MetricTTFT, 99}, {stats.MetricTPOT, 50}, {stats.MetricTPOT, 99}, {stats.MetricE2E, 99}} {
		if !measured(s, c.name) {
			continue
		}
		cols = append(cols, c)
		head += "\t" + map[string]string{stats.MetricTTFT: "TTFT", stats.MetricTPOT: "TPOT", stats.MetricE2E: "E2EL"}[c.name] + " P" + strconv.Itoa(int(c.p))
	}
	fmt.Fprintln(tw, head)
	for i := range s.Buckets {
		b := &s.Buckets[i]
		cell := func(name string, p float64) string {
			m, ok := b.Metric(name)
			if !ok || m.N == 0 {
				return "-"
			}
			v, ok := m.P(p)
			if !ok {
				return "-"
			}
			return f2(v)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d", b.Label, b.Requests, b.Failed)
		for _, c := range cols {
			fmt.Fprintf(tw, "\t%s", cell(c.name, c.p))
		}
		fmt.Fprintln(tw)
	}
	// Flush only fails if w does, and w is a bytes.Buffer.
	_ = tw.Flush()
}

// measured reports whether the summary carries metric name: one of its
// selected metrics (every one when the run selected none).
func measured(s *stats.Summary, name string) bool {
	if len(s.Metrics) == 0 {
		return true
	}
	for _, m := range s.Metrics {
		if m.Name == name {
			return true
		}
	}
	return false
}

// failureClasses orders the classes seen: runlog's known order, then any
// others alphabetically.
func failureClasses(m map[runlog.ErrorClass]int) []runlog.ErrorClass {
	var out, rest []runlog.ErrorClass
	for _, c := range runlog.ErrorClasses {
		if m[c] > 0 {
			out = append(out, c)
		}
	}
	for c, n := range m {
		if n > 0 && !slices.Contains(runlog.ErrorClasses, c) {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// loadText describes the offered load of a level.
func loadText(lv *runlog.Level) string {
	rate := "inf"
	if lv.RequestRate > 0 {
		rate = strconv.FormatFloat(lv.RequestRate, 'f', -1, 64) + " req/s"
	}
	b := lv.Burstiness
	if b == 0 {
		b = 1
	}
	conc := "none"
	if lv.MaxConcurrency > 0 {
		conc = strconv.Itoa(lv.MaxConcurrency)
	}
	if strings.HasPrefix(lv.Label, "sessions ") {
		return lv.Label // a session load says its own (sessions/s, not requests/s)
	}
	if lv.Label == runlog.LiveTraffic {
		// The proxy generated nothing: its clients set the load, which the
		// summary's rates measure. A "rate inf" here would read as a burst.
		return "live traffic, observed (not generated)"
	}
	if strings.HasPrefix(lv.Label, "trace") {
		// A trace's arrivals are its own: no rate, no burstiness.
		return lv.Label + ", max concurrency " + conc
	}
	s := fmt.Sprintf("rate %s, burstiness %s, max concurrency %s", rate, strconv.FormatFloat(b, 'f', -1, 64), conc)
	if lv.Label != "" {
		s = lv.Label + ": " + s
	}
	return s
}

func conditions(t *term, s *stats.Summary, meta *runlog.Meta, lv *runlog.Level) {
	if meta != nil {
		t.line("Model:", meta.Model)
		t.line("Target:", meta.Target)
		if meta.Backend != "" || meta.Endpoint != "" {
			t.line("Backend, endpoint:", strings.TrimSpace(meta.Backend+" "+meta.Endpoint))
		}
		if meta.Dataset != "" {
			t.line("Dataset:", meta.Dataset)
		}
		if meta.Tokenizer != "" {
			t.line("Prompt lengths:", meta.Tokenizer)
		}
	}
	if lv != nil {
		t.line("Load:", loadText(lv))
		if lv.DelayedArrivals > 0 {
			t.line("Delayed arrivals (in-flight cap full):", strconv.Itoa(lv.DelayedArrivals))
		}
	}
	three := func(m stats.MetricSummary, f func(float64) string, ps ...float64) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			v, _ := m.P(p)
			parts[i] = f(v)
		}
		return strings.Join(parts, " / ")
	}
	meanStd := func(m stats.MetricSummary) string {
		return fmt.Sprintf(" (mean %s, std %s)", tok(m.Mean), tok(m.Std))
	}
	if s.InputLen.N > 0 {
		t.line("Input length (tok) P50/P90/P99:", three(s.InputLen, tok, 50, 90, 99)+meanStd(s.InputLen))
	}
	if s.OutputLen.N > 0 {
		t.line("Output length (tok) P50/P90/P99:", three(s.OutputLen, tok, 50, 90, 99)+meanStd(s.OutputLen))
	}
	if s.SendLag.N > 0 {
		t.line("Send lag (ms) P50/P99/max:", three(s.SendLag, f2, 50, 99)+" / "+f2(s.SendLag.Max))
	}
	if s.Completed > 0 {
		src := fmt.Sprintf("%d usage, %d counted", s.TokenSources[runlog.TokensUsage], s.TokenSources[runlog.TokensCounted])
		if n := s.TokenSources[""]; n > 0 {
			src += fmt.Sprintf(", %d unknown", n)
		}
		t.line("Token counts from:", src)
	}
	if s.PromptMismatch.N > 0 {
		t.line("Prompt length mismatch (tok) P50/P99:", three(s.PromptMismatch, tok, 50, 99))
	}
	if s.CachedTokens > 0 {
		t.line("Cached prompt tokens:", fmt.Sprintf("%d (%s%%)", s.CachedTokens, f2(100*s.CachedShare)))
	}
	if s.ReasoningTokens > 0 {
		t.line("Reasoning tokens:", strconv.FormatInt(s.ReasoningTokens, 10))
	}
	if s.Warmups > 0 {
		t.line("Warm-up requests (excluded):", strconv.Itoa(s.Warmups))
	}
}
