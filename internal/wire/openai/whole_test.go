package openai

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/runlog"
)

func TestMeasureWhole(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		body                 string
		maxTokens            int
		wantClass            runlog.ErrorClass
		wantSource           runlog.TokenSource
		wantCompl, wantPromp int
		wantRejected         string
	}{
		{"chat with usage", `{"choices":[{"message":{"content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":7}}`,
			0, "", runlog.TokensUsage, 7, 12, ""},
		{"completions without usage", `{"choices":[{"text":"hello","finish_reason":"length"}]}`, 0, "", runlog.TokensCounted, 1, 9, ""},
		{"negative prompt", `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":-50,"completion_tokens":3}}`, 0, "", runlog.TokensUsage, 3, 9, "prompt_tokens -50"},
		{"absurd completion", `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":5,"completion_tokens":1000000000000}}`, 0, "", runlog.TokensCounted, 1, 5, "beyond any model's"},
		{"far above max_tokens", `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":5,"completion_tokens":9000}}`, 16, "", runlog.TokensCounted, 1, 5, "max_tokens 16"},
		{"error object", `{"error":{"message":"model not loaded"}}`, 0, runlog.ErrStream, runlog.TokensCounted, 0, 9, ""},
		{"not JSON", `<html>`, 0, runlog.ErrMalformed, runlog.TokensCounted, 0, 9, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := runlog.Record{ID: "w", Sent: 10, Status: 200, MaxTokens: tc.maxTokens}
			wire.MeasureWhole(&ChunkDecoder{}, &rec, []byte(tc.body), 500, 9)
			if rec.ErrorClass != tc.wantClass || rec.TokenSource != tc.wantSource || rec.CompletionTokens != tc.wantCompl || rec.PromptTokens != tc.wantPromp {
				t.Errorf("class %q source %s completion %d prompt %d; want %q %s %d %d",
					rec.ErrorClass, rec.TokenSource, rec.CompletionTokens, rec.PromptTokens, tc.wantClass, tc.wantSource, tc.wantCompl, tc.wantPromp)
			}
			if !strings.Contains(rec.UsageRejected, tc.wantRejected) || (tc.wantRejected == "" && rec.UsageRejected != "") {
				t.Errorf("UsageRejected = %q; want %q", rec.UsageRejected, tc.wantRejected)
			}
			if !rec.WholeAnswer || rec.End != 500 {
				t.Errorf("WholeAnswer %v End %d; want true, 500", rec.WholeAnswer, rec.End)
			}
			if _, ok := rec.TTFT(); ok {
				t.Error("a whole answer has a TTFT")
			}
			if tc.wantClass == "" {
				if d, ok := rec.E2E(); !ok || d != 490 {
					t.Errorf("E2E = %v, %v; want 490ns", d, ok)
				}
			}
		})
	}
}
