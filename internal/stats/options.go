package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Metric names, as vLLM's --percentile-metrics spells them plus ours.
const (
	MetricTTFT     = "ttft"      // time to first token
	MetricTPOT     = "tpot"      // time per output token, excluding the first
	MetricITL      = "itl"       // gap between consecutive token-carrying chunks
	MetricITLToken = "itl_token" // per-token gap: chunk gap / tokens in the chunk; selected with "itl"
	MetricE2E      = "e2el"      // end-to-end latency
	MetricTTP      = "ttp"       // time to publish (first visible token)
	MetricResponse = "response"  // E2E from the intended send time
)

// AllMetrics lists the selectable metric names in report order. Selecting
// MetricITL also summarises MetricITLToken.
var AllMetrics = []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2E, MetricTTP, MetricResponse}

// DefaultPercentiles are the percentiles summarised when Options leaves them
// unset.
var DefaultPercentiles = []float64{50, 90, 95, 99}

// DefaultBuckets are the input-length bucket edges in tokens used when
// Options leaves them nil: <1K, 1K-8K, >=8K.
var DefaultBuckets = []int{1024, 8192}

// Options says what a Summary contains.
type Options struct {
	// Percentiles to report for every metric, each in [0, 100] (vLLM's
	// --metric-percentiles); nil means DefaultPercentiles. Invalid values are
	// dropped (ParsePercentiles rejects them with an error).
	Percentiles []float64
	// Metrics is the subset of AllMetrics to summarise (vLLM's
	// --percentile-metrics); nil means all. Unknown names are dropped.
	// Unselected metrics keep no samples, which saves memory (ITL above all).
	Metrics []string
	// SLO defines goodput; the zero SLO means no goodput is computed.
	SLO SLO
	// Buckets are the input-length edges in tokens splitting the per-bucket
	// summaries; nil means DefaultBuckets, an empty non-nil slice means no
	// per-bucket summaries. Non-positive edges are dropped, the rest sorted.
	Buckets []int
	// Confidence is the level, in (0, 1), of the confidence intervals a
	// Summary gives its means, percentiles, throughputs, goodput and
	// attainment (DefaultConfidence is 0.95); 0, or any value outside
	// (0, 1), means none, and then nothing is spent on them.
	Confidence float64
}

// normalized returns o with defaults filled in and invalid entries dropped.
func (o Options) normalized() Options {
	n := Options{SLO: o.SLO}
	if o.Confidence > 0 && o.Confidence < 1 {
		n.Confidence = o.Confidence
	}
	ps := o.Percentiles
	if ps == nil {
		ps = DefaultPercentiles
	}
	n.Percentiles = []float64{}
	for _, p := range ps {
		if p >= 0 && p <= 100 && !slices.Contains(n.Percentiles, p) {
			n.Percentiles = append(n.Percentiles, p)
		}
	}
	if o.Metrics == nil {
		n.Metrics = slices.Clone(AllMetrics)
	} else {
		n.Metrics = []string{}
		for _, m := range AllMetrics {
			if slices.Contains(o.Metrics, m) {
				n.Metrics = append(n.Metrics, m)
			}
		}
	}
	bs := o.Buckets
	if bs == nil {
		bs = DefaultBuckets
	}
	n.Buckets = []int{}
	for _, b := range bs {
		if b > 0 {
			n.Buckets = append(n.Buckets, b)
		}
	}
	slices.Sort(n.Buckets)
	n.Buckets = slices.Compact(n.Buckets)
	return n
}

// splitList splits a comma- or space-separated flag value.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// ParsePercentiles reads a comma-separated percentile list such as
// "50,90,99,99.9" (vLLM's --metric-percentiles). Each must be a number in
// [0, 100]; duplicates are an error. The empty string returns nil (defaults).
func ParsePercentiles(s string) ([]float64, error) {
	var ps []float64
	for _, f := range splitList(s) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(p) || p < 0 || p > 100 {
			return nil, fmt.Errorf("percentile %q: want a number from 0 to 100", f)
		}
		if slices.Contains(ps, p) {
			return nil, fmt.Errorf("percentile %q given twice", f)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// ParseMetrics reads a comma-separated metric list such as "ttft,tpot,itl"
// (vLLM's --percentile-metrics); names are those of AllMetrics, case
// sensitive, or "all". The empty string returns nil (all metrics).
func ParseMetrics(s string) ([]string, error) {
	var ms []string
	for _, f := range splitList(s) {
		if f == "all" {
			ms = append(ms, AllMetrics...)
			continue
		}
		if !slices.Contains(AllMetrics, f) {
			return nil, fmt.Errorf("metric %q: want one of %s", f, strings.Join(AllMetrics, ", "))
		}
		ms = append(ms, f)
	}
	return ms, nil
}

// ParseBuckets reads input-length bucket edges in tokens, comma-separated,
// each a positive integer optionally suffixed K (×1024), e.g. "1K,8K" or
// "512,2048,32K". "none" means no buckets (an empty non-nil slice); the
// empty string returns nil (defaults). Edges must be distinct.
func ParseBuckets(s string) ([]int, error) {
	if strings.TrimSpace(s) == "none" {
		return []int{}, nil
	}
	var bs []int
	for _, f := range splitList(s) {
		num, mul := f, 1
		if n, ok := strings.CutSuffix(strings.ToUpper(f), "K"); ok {
			num, mul = n, 1024
		}
		v, err := strconv.Atoi(num)
		// 1<<40 tokens is beyond any context window and keeps v·mul in range.
		if err != nil || v <= 0 || v > 1<<40/mul {
			return nil, fmt.Errorf("bucket edge %q: want a positive token count such as 1024 or 8K", f)
		}
		if slices.Contains(bs, v*mul) {
			return nil, fmt.Errorf("bucket edge %q given twice", f)
		}
		bs = append(bs, v*mul)
	}
	slices.Sort(bs)
	return bs, nil
}

// BucketLabels names the input-length buckets cut by ascending edges
// (tokens): "<1K", "1K-8K", ">=8K". An edge divisible by 1024 is written in
// K, any other in tokens; no edges gives nil.
func BucketLabels(edges []int) []string {
	if len(edges) == 0 {
		return nil
	}
	tok := func(n int) string {
		if n%1024 == 0 {
			return strconv.Itoa(n/1024) + "K"
		}
		return strconv.Itoa(n)
	}
	ls := make([]string, 0, len(edges)+1)
	ls = append(ls, "<"+tok(edges[0]))
	for i := 1; i < len(edges); i++ {
		ls = append(ls, tok(edges[i-1])+"-"+tok(edges[i]))
	}
	return append(ls, ">="+tok(edges[len(edges)-1]))
}
