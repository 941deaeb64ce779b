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
