package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// DateFormat is the layout of the result's "date" key, as vLLM writes it.
const DateFormat = "20060102-150405"

// vllmMetrics are the metrics whose keys vLLM writes, in its order; ours
// follow them.
var vllmMetrics = []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricITL, stats.MetricE2E}

// metricKeys adds {mean,median,std,pNN}_<name>_ms keys for m to o, in
// vLLM's order (mean, median, std, then the percentiles as asked). With
// intervals asked for (level > 0) each mean, median and percentile key is
// followed by its interval, "<key>_ci": [lo, hi], or null where the sample
// cannot support one.
func metricKeys(o *object, m stats.MetricSummary, level float64) {
	o.set("mean_"+m.Name+"_ms", pyFloat(m.Mean))
	ciKey(o, "mean_"+m.Name+"_ms_ci", m.MeanCI, level)
	o.set("median_"+m.Name+"_ms", pyFloat(m.Median))
	ciKey(o, "median_"+m.Name+"_ms_ci", m.MedianCI, level)
	o.set("std_"+m.Name+"_ms", pyFloat(m.Std))
	for _, p := range m.Percentiles {
		k := "p" + stats.PercentileName(p.P) + "_" + m.Name + "_ms"
		o.set(k, pyFloat(p.Value))
		ciKey(o, k+"_ci", p.CI, level)
	}
}

// ciKey sets key to iv as [lo, hi], or null when there is none, but only
// when intervals were asked for (level > 0): a run without them keeps
// vLLM's keys alone.
func ciKey(o *object, key string, iv stats.Interval, level float64) {
	if level <= 0 {
		return
	}
	if !iv.OK() {
		o.set(key, nil)
		return
	}
	o.set(key, []pyFloat{pyFloat(iv.Lo), pyFloat(iv.Hi)})
}

// ResultJSON renders the --save-result file: vLLM's keys with vLLM's types
// (date, endpoint_type, backend, label, model_id, tokenizer_id, num_prompts,
// request_rate as a number or "inf", burstiness, max_concurrency or null,
// duration, completed, failed, total_input_tokens, total_output_tokens,
// request_throughput, request_goodput or null without an SLO,
// output_throughput, total_token_throughput, max_output_tokens_per_s,
// max_concurrent_requests, {mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms)
// followed by ours: the same four keys for itl_token, ttp and response,
// slo_attainment (0–1, null without an SLO), slo, buckets, failures,
// conditions and warnings.
//
// date is meta.Started (vLLM writes its finish time); tokenizer_id defaults
// to the model and label to null, as vLLM's do. meta.Metadata pairs become
// top-level keys as vLLM's --metadata does, without replacing ours. extra
// keys are written last, in sorted order, replacing a same-named key in
// place. meta may be nil.
func ResultJSON(s *stats.Summary, meta *runlog.Meta, extra map[string]any) ([]byte, error) {
	if meta == nil {
		meta = &runlog.Meta{}
	}
	lv := levelOf(s, meta)
	if lv == nil {
		lv = &runlog.Level{}
	}
	o := newObject()
	o.set("date", meta.Started.Format(DateFormat))
	o.set("endpoint_type", meta.Backend) // vLLM keeps it for backward compatibility
	o.set("backend", meta.Backend)
	o.set("label", nil)
	o.set("model_id", meta.Model)
	o.set("tokenizer_id", meta.Model)
	numPrompts := lv.NumPrompts
	if numPrompts == 0 {
		numPrompts = s.Requests
	}
	o.set("num_prompts", numPrompts)
	mdKeys := make([]string, 0, len(meta.Metadata))
	for k := range meta.Metadata {
		mdKeys = append(mdKeys, k)
	}
	slices.Sort(mdKeys)
	for _, k := range mdKeys {
		o.set(k, meta.Metadata[k])
	}

	var rate any = "inf"
	if lv.RequestRate > 0 {
		rate = pyFloat(lv.RequestRate)
	}
	o.set("request_rate", rate)
	burst := lv.Burstiness
	if burst == 0 {
		burst = 1
	}
	o.set("burstiness", pyFloat(burst))
	var conc any
	if lv.MaxConcurrency > 0 {
		conc = lv.MaxConcurrency
	}
	o.set("max_concurrency", conc)
	if lv.Precision != "" {
		o.set("target_precision", lv.Precision)
	}

	o.set("duration", pyFloat(s.DurationS))
	o.set("completed", s.Completed)
	o.set("failed", s.Failed)
	o.set("total_input_tokens", s.InputTokens)
	o.set("total_output_tokens", s.OutputTokens)
	lvl := s.Options.Confidence
	o.set("request_throughput", pyFloat(s.RequestThroughput))
	ciKey(o, "request_throughput_ci", s.RequestThroughputCI, lvl)
	var goodput, attain any
	if s.SLO.Set {
		goodput, attain = pyFloat(s.SLO.Goodput), pyFloat(s.SLO.Attainment)
	}
	o.set("request_goodput", goodput)
	if s.SLO.Set {
		ciKey(o, "request_goodput_ci", s.SLO.GoodputCI, lvl)
	}
	o.set("output_throughput", pyFloat(s.OutputThroughput))
	ciKey(o, "output_throughput_ci", s.OutputThroughputCI, lvl)
	o.set("total_token_throughput", pyFloat(s.TotalTokenThroughput))
	o.set("max_output_tokens_per_s", pyFloat(s.PeakOutputTokensPerS))
	o.set("max_concurrent_requests", s.PeakConcurrency)

	for _, name := range vllmMetrics {
		if m, ok := s.Metric(name); ok {
			metricKeys(o, m, lvl)
		}
	}
	for _, m := range s.Metrics {
		if !slices.Contains(vllmMetrics, m.Name) {
			metricKeys(o, m, lvl)
		}
	}

	o.set("slo_attainment", attain)
	if s.SLO.Set {
		ciKey(o, "slo_attainment_ci", s.SLO.AttainmentCI, lvl)
	}
	if lvl > 0 {
		o.set("confidence_level", pyFloat(lvl))
	}
	if s.SLO.Set {
		cs := make([]any, len(s.SLO.Constraints))
		for i, c := range s.SLO.Constraints {
			co := newObject().set("name", c.Name).set("limit_ms", pyFloat(c.LimitMs)).
				set("met", c.Met).set("attainment", pyFloat(c.Attainment))
			ciKey(co, "attainment_ci", c.AttainmentCI, lvl)
			cs[i] = co
		}
		o.set("slo", newObject().set("spec", s.Options.SLO.String()).set("good", s.SLO.Good).set("constraints", cs))
	}
	buckets := make([]any, len(s.Buckets))
	for i, b := range s.Buckets {
		bo := newObject().set("label", b.Label).set("lo", b.Lo)
		if b.Hi > 0 {
			bo.set("hi", b.Hi)
		} else {
			bo.set("hi", nil)
		}
		bo.set("requests", b.Requests).set("completed", b.Completed).set("failed", b.Failed)
		if s.SLO.Set {
			bo.set("good", b.Good).set("slo_attainment", pyFloat(b.Attainment))
			ciKey(bo, "slo_attainment_ci", b.AttainmentCI, lvl)
		}
		for _, m := range b.Metrics {
			metricKeys(bo, m, lvl)
		}
		buckets[i] = bo
	}
	o.set("buckets", buckets)
	// Every known class, 0 included, so a gate on one (failures.http_429>5)
	// reads a count, not a missing key, when it never happened.
	fails := newObject()
	for _, c := range runlog.ErrorClasses {
		fails.set(string(c), s.Failures[c])
	}
	for _, c := range failureClasses(s.Failures) {
		if !slices.Contains(runlog.ErrorClasses, c) {
			fails.set(string(c), s.Failures[c])
		}
	}
	o.set("failures", fails)
	o.set("conditions", conditionsJSON(s, meta, lv))
	o.set("warnings", append([]string{}, s.Warnings...))

	exKeys := make([]string, 0, len(extra))
	for k := range extra {
		exKeys = append(exKeys, k)
	}
	slices.Sort(exKeys)
	for _, k := range exKeys {
		o.set(k, extra[k])
	}
	b, err := marshalIndent(o)
	if err != nil {
		return nil, fmt.Errorf("result json: %w", err)
	}
	return b, nil
}

// distJSON renders a length or lag distribution's key figures.
func distJSON(m stats.MetricSummary) *object {
	o := newObject().set("n", m.N).set("mean", pyFloat(m.Mean)).set("std", pyFloat(m.Std)).set("min", pyFloat(m.Min)).set("max", pyFloat(m.Max))
	for _, p := range m.Percentiles {
		o.set("p"+stats.PercentileName(p.P), pyFloat(p.Value))
	}
	return o
}

func conditionsJSON(s *stats.Summary, meta *runlog.Meta, lv *runlog.Level) *object {
	o := newObject()
	o.set("command", meta.Command)
	o.set("target", meta.Target)
	o.set("endpoint", meta.Endpoint)
	o.set("model", meta.Model)
	o.set("dataset", meta.Dataset)
	o.set("seed", meta.Seed)
	if !meta.Started.IsZero() {
		o.set("started", meta.Started.Format(time.RFC3339Nano))
	}
	o.set("level", s.Level)
	o.set("level_label", lv.Label)
	o.set("delayed_arrivals", lv.DelayedArrivals)
	o.set("percentiles", floats(s.Options.Percentiles))
	o.set("requests", s.Requests)
	o.set("warmups", s.Warmups)
	o.set("empty_responses", s.Empty)
	o.set("first_send_s", pyFloat(float64(s.FirstSendNs)/1e9))
	o.set("last_end_s", pyFloat(float64(s.LastEndNs)/1e9))
	o.set("input_throughput", pyFloat(s.InputThroughput))
	if s.RetriedAttempts > 0 {
		o.set("retried_attempts", s.RetriedAttempts)
		by := map[string]int{}
		for c, n := range s.RetriedBy {
			by[string(c)] = n
		}
		o.set("retried_by_class", by)
		o.set("attempt_rate", pyFloat(s.AttemptRate))
		o.set("original_request_rate", pyFloat(s.OriginalRate))
		o.set("retry_amplification", pyFloat(s.RetryAmplification))
	}
	if s.Embeddings > 0 {
		o.set("total_embeddings", s.Embeddings)
		o.set("embedding_throughput", pyFloat(s.EmbeddingThroughput))
	}
	o.set("reasoning_tokens", s.ReasoningTokens)
	o.set("cached_tokens", s.CachedTokens)
	o.set("cached_share", pyFloat(s.CachedShare))
	o.set("multi_token_records", s.MultiTokenRecords)
	o.set("input_len", distJSON(s.InputLen))
	o.set("output_len", distJSON(s.OutputLen))
	o.set("send_lag_ms", distJSON(s.SendLag))
	o.set("prompt_mismatch_tokens", distJSON(s.PromptMismatch))
	o.set("token_sources", newObject().
		set("usage", s.TokenSources[runlog.TokensUsage]).
		set("counted", s.TokenSources[runlog.TokensCounted]).
		set("unknown", s.TokenSources[""]))
	if !meta.Simulated.IsZero() {
		o.set("simulated", meta.Simulated)
	}
	return o
}

func floats(fs []float64) []pyFloat {
	out := make([]pyFloat, len(fs))
	for i, f := range fs {
		out[i] = pyFloat(f)
	}
	return out
}

// Result is a parsed result file: ours or vLLM's own --save-result output.
// Absent keys leave their zero value.
type Result struct {
	Date        string // "20060102-150405"
	Backend     string
	Label       string
	ModelID     string
	TokenizerID string
	NumPrompts  int
	// RequestRate is in requests/s, +Inf for "inf".
	RequestRate float64
	Burstiness  float64
	// MaxConcurrency is 0 when the file has null (no cap).
	MaxConcurrency int
	// Duration is in seconds.
	Duration          float64
	Completed, Failed int
	TotalInputTokens  int64
	TotalOutputTokens int64
	// Throughputs are per second.
	RequestThroughput    float64
	OutputThroughput     float64
	TotalTokenThroughput float64
	// RequestGoodput is nil when the run had no SLO (null in the file).
	RequestGoodput        *float64
	MaxOutputTokensPerS   float64
	MaxConcurrentRequests int
	// Metrics holds every {mean,median,std,pNN}_<name>_ms group, by name
	// (ttft, tpot, itl, e2el, ttp, response, …), in milliseconds.
	Metrics map[string]MetricStats
	// SLOAttainment is 0–1, nil without an SLO.
	SLOAttainment *float64
	// SLOSpec is the SLO the run was judged by, as stats.ParseSLO reads it
	// ("" without one), so two results can be checked for comparability.
	SLOSpec    string
	Buckets    []ResultBucket
	Failures   map[string]int
	Conditions map[string]any
	Warnings   []string
	// Extra holds every other top-level key (e.g. --metadata pairs, vLLM's
	// per-request arrays), undecoded.
	Extra map[string]json.RawMessage
}

// MetricStats is one metric's figures from a result file, milliseconds.
type MetricStats struct {
	Mean, Median, Std float64
	// Percentiles are in ascending order of P.
	Percentiles []stats.PercentileValue
}

// P returns the p-th percentile if the file has it.
func (m MetricStats) P(p float64) (float64, bool) {
	for _, pv := range m.Percentiles {
		if pv.P == p {
			return pv.Value, true
		}
	}
	return 0, false
}

// ResultBucket is one per-input-length bucket of a result file.
type ResultBucket struct {
	Label                       string
	Lo, Hi                      int // tokens; Hi 0 for the open-ended bucket
	Requests, Completed, Failed int
	Good                        int
	SLOAttainment               *float64
	Metrics                     map[string]MetricStats
}

// errType reports a key holding the wrong JSON type.
var errType = errors.New("wrong type")

// fields decodes a JSON object leniently: each getter records the first
// error, naming the key.
type fields struct {
	m    map[string]json.RawMessage
	path string
	err  error
	used map[string]bool
}

func (f *fields) raw(k string) (json.RawMessage, bool) {
	v, ok := f.m[k]
	f.used[k] = true
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func (f *fields) fail(k, want string) {
	if f.err == nil {
		f.err = fmt.Errorf("key %q%s: want %s: %w", k, f.path, want, errType)
	}
}

func (f *fields) str(k string) string {
	v, ok := f.raw(k)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		f.fail(k, "a string")
	}
	return s
}

func (f *fields) num(k string) float64 {
	v, ok := f.raw(k)
	if !ok {
		return 0
	}
	var x float64
	if json.Unmarshal(v, &x) != nil {
		f.fail(k, "a number")
	}
	return x
}

func (f *fields) optNum(k string) *float64 {
	if _, ok := f.raw(k); !ok {
		return nil
	}
	x := f.num(k)
	return &x
}

func (f *fields) int(k string) int64 {
	x := f.num(k)
	if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		f.fail(k, "an integer")
		return 0
	}
	return int64(x)
}

// rate reads a number or the string "inf".
func (f *fields) rate(k string) float64 {
	v, ok := f.raw(k)
	if !ok {
		return 0
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.EqualFold(s, "inf") {
			return math.Inf(1)
		}
		f.fail(k, `a number or "inf"`)
		return 0
	}
	return f.num(k)
}

// metrics collects the {mean,median,std,pNN}_<name>_ms keys of f's object.
func (f *fields) metrics() map[string]MetricStats {
	out := map[string]MetricStats{}
	for k := range f.m {
		stat, name, ok := metricKey(k)
		if !ok {
			continue
		}
		x := f.num(k)
		ms := out[name]
		switch stat {
		case "mean":
			ms.Mean = x
		case "median":
			ms.Median = x
		case "std":
			ms.Std = x
		default:
			p, _ := strconv.ParseFloat(stat[1:], 64)
			ms.Percentiles = append(ms.Percentiles, stats.PercentileValue{P: p, Value: x})
		}
		out[name] = ms
	}
	for name, ms := range out {
		slices.SortFunc(ms.Percentiles, func(a, b stats.PercentileValue) int {
			switch {
			case a.P < b.P:
				return -1
			case a.P > b.P:
				return 1
			}
			return 0
		})
		out[name] = ms
	}
	return out
}

// metricKey splits "p99.9_ttft_ms" into ("p99.9", "ttft"); ok is false for
// any other kind of key.
func metricKey(k string) (stat, name string, ok bool) {
	rest, ok := strings.CutSuffix(k, "_ms")
	if !ok {
		return "", "", false
	}
	stat, name, ok = strings.Cut(rest, "_")
	if !ok || name == "" {
		return "", "", false
	}
	switch {
	case stat == "mean" || stat == "median" || stat == "std":
		return stat, name, true
	case len(stat) > 1 && stat[0] == 'p':
		p, err := strconv.ParseFloat(stat[1:], 64)
		// Only plain decimals, as vLLM writes them ("p99", "p99.9").
		if err != nil || strings.ContainsAny(stat[1:], "eEnNxX+-_") || p < 0 || p > 100 {
			return "", "", false
		}
		return stat, name, true
	}
	return "", "", false
}

func newFields(raw json.RawMessage, path string) (*fields, error) {
	f := &fields{path: path, used: map[string]bool{}}
	if err := json.Unmarshal(raw, &f.m); err != nil || f.m == nil {
		return nil, fmt.Errorf("result json%s: want an object", path)
	}
	return f, nil
}

// ParseResultJSON reads a result file written by ResultJSON or by vLLM's
// `vllm bench serve --save-result`. Unknown keys go to Result.Extra; a known
// key of the wrong type is an error naming it.
func ParseResultJSON(data []byte) (*Result, error) {
	f, err := newFields(data, "")
	if err != nil {
		return nil, err
	}
	r := &Result{
		Date:                  f.str("date"),
		Backend:               f.str("backend"),
		Label:                 f.str("label"),
		ModelID:               f.str("model_id"),
		TokenizerID:           f.str("tokenizer_id"),
		NumPrompts:            int(f.int("num_prompts")),
		RequestRate:           f.rate("request_rate"),
		Burstiness:            f.num("burstiness"),
		MaxConcurrency:        int(f.int("max_concurrency")),
		Duration:              f.num("duration"),
		Completed:             int(f.int("completed")),
		Failed:                int(f.int("failed")),
		TotalInputTokens:      f.int("total_input_tokens"),
		TotalOutputTokens:     f.int("total_output_tokens"),
		RequestThroughput:     f.num("request_throughput"),
		RequestGoodput:        f.optNum("request_goodput"),
		OutputThroughput:      f.num("output_throughput"),
		TotalTokenThroughput:  f.num("total_token_throughput"),
		MaxOutputTokensPerS:   f.num("max_output_tokens_per_s"),
		MaxConcurrentRequests: int(f.int("max_concurrent_requests")),
		SLOAttainment:         f.optNum("slo_attainment"),
		Metrics:               f.metrics(),
	}
	f.raw("endpoint_type") // vLLM's duplicate of backend
	if v, ok := f.raw("slo"); ok {
		sf, err := newFields(v, " in slo")
		if err != nil {
			return nil, err
		}
		r.SLOSpec = sf.str("spec")
		if sf.err != nil {
			return nil, fmt.Errorf("result json: %w", sf.err)
		}
	}
	if v, ok := f.raw("buckets"); ok {
		var bs []json.RawMessage
		if json.Unmarshal(v, &bs) != nil {
			f.fail("buckets", "an array")
		}
		for i, braw := range bs {
			bf, err := newFields(braw, fmt.Sprintf(" in buckets[%d]", i))
			if err != nil {
				return nil, err
			}
			b := ResultBucket{
				Label: bf.str("label"), Lo: int(bf.int("lo")), Hi: int(bf.int("hi")),
				Requests: int(bf.int("requests")), Completed: int(bf.int("completed")), Failed: int(bf.int("failed")),
				Good: int(bf.int("good")), SLOAttainment: bf.optNum("slo_attainment"), Metrics: bf.metrics(),
			}
			if bf.err != nil {
				return nil, fmt.Errorf("result json: %w", bf.err)
			}
			r.Buckets = append(r.Buckets, b)
		}
	}
	if v, ok := f.raw("failures"); ok && json.Unmarshal(v, &r.Failures) != nil {
		f.fail("failures", "an object of counts")
	}
	// The classes that never happened are written as 0: keep those that did.
	maps.DeleteFunc(r.Failures, func(_ string, n int) bool { return n == 0 })
	if v, ok := f.raw("conditions"); ok && json.Unmarshal(v, &r.Conditions) != nil {
		f.fail("conditions", "an object")
	}
	if v, ok := f.raw("warnings"); ok && json.Unmarshal(v, &r.Warnings) != nil {
		f.fail("warnings", "an array of strings")
	}
	if f.err != nil {
		return nil, fmt.Errorf("result json: %w", f.err)
	}
	for k, v := range f.m {
		if _, _, isMetric := metricKey(k); !f.used[k] && !isMetric {
			if r.Extra == nil {
				r.Extra = map[string]json.RawMessage{}
			}
			r.Extra[k] = v
		}
	}
	return r, nil
}
