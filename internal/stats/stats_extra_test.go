package stats

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

func TestCachedShareWarning(t *testing.T) {
	rec := func(prompt, cached int) runlog.Record {
		return runlog.Record{ID: "r", Sent: 0, End: 10, PromptTokens: prompt, CachedTokens: cached, CompletionTokens: 1,
			Status: 200, TokenSource: runlog.TokensUsage, Chunks: []runlog.Chunk{{T: 5, Tokens: 1, Visible: true}}}
	}
	for _, tc := range []struct {
		name   string
		cached int
		warn   bool
	}{
		// 300 of 1000 prompt tokens cached: 30 % ≥ 20 %.
		{"high", 300, true},
		// 100 of 1000: 10 %.
		{"low", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize([]runlog.Record{rec(500, tc.cached/2), rec(500, tc.cached/2)}, Options{})
			got := strings.Contains(strings.Join(s.Warnings, "\n"), "prefix cache")
			if got != tc.warn {
				t.Errorf("cached %d of 1000: warned = %v; want %v (warnings %q)", tc.cached, got, tc.warn, s.Warnings)
			}
		})
	}
}

func TestMetricPMedianFallback(t *testing.T) {
	// TTFTs 10, 20, 40 ms with only P99 asked: P50 is still the median, 20.
	var recs []runlog.Record
	for _, ms := range []int64{10, 20, 40} {
		recs = append(recs, runlog.Record{ID: "r", Status: 200, CompletionTokens: 1, End: ms * 1e6,
			Chunks: []runlog.Chunk{{T: ms * 1e6, Tokens: 1, Visible: true}}})
	}
	s := Summarize(recs, Options{Percentiles: []float64{99}})
	if v, ok := s.MetricP(MetricTTFT, 50); !ok || v != 20 {
		t.Errorf("MetricP(ttft, 50) = %v, %v; want 20, true", v, ok)
	}
	if _, ok := s.MetricP(MetricTTFT, 90); ok {
		t.Error("MetricP(ttft, 90) found a percentile that was not computed")
	}
	if _, ok := s.MetricP("bogus", 50); ok {
		t.Error("MetricP(bogus, 50) ok; want false")
	}
}

func TestUsageRejectedWarning(t *testing.T) {
	ok := func(src runlog.TokenSource, rejected string) runlog.Record {
		return runlog.Record{ID: "r", Status: 200, TokenSource: src, UsageRejected: rejected, CompletionTokens: 1,
			Chunks: []runlog.Chunk{{T: 5, Tokens: 1, Visible: true}}, End: 5}
	}
	recs := []runlog.Record{
		ok(runlog.TokensUsage, ""),
		ok(runlog.TokensCounted, ""),
		ok(runlog.TokensCounted, "completion_tokens -3 is negative"),
		ok(runlog.TokensCounted, "prompt_tokens -50 is negative"),
	}
	s := Summarize(recs, Options{})
	if s.UsageRejected != 2 || s.UsageRejectedExample != "completion_tokens -3 is negative" {
		t.Errorf("UsageRejected = %d, %q; want 2, the first reason", s.UsageRejected, s.UsageRejectedExample)
	}
	var noUsage, rejected bool
	for _, w := range s.Warnings {
		noUsage = noUsage || strings.HasPrefix(w, "1 of 4 requests had no usage report")
		rejected = rejected || strings.HasPrefix(w, "2 of 4 requests reported usage that did not fit their stream (completion_tokens -3 is negative)")
	}
	if !noUsage || !rejected {
		t.Errorf("warnings %q; want 1 without usage and 2 rejected", s.Warnings)
	}
}
