package openai

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

// FuzzStreamMeter feeds arbitrary event payloads (one per line) and checks
// what must hold of any record: no panic, chunks in arrival order carrying
// at least one token each, a failure stops the meaning of later events, and
// the counts are never negative.
func FuzzStreamMeter(f *testing.F) {
	f.Add([]byte(roleChunk + "\n" + content("a") + "\n" + reasoning("b") + "\n" + usageChunk + "\n[DONE]"))
	f.Add([]byte(`{"choices":[{"index":0,"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}` + "\n" +
		`{"choices":[{"index":0,"text":"yz"}],"usage":{"prompt_tokens":3,"completion_tokens":3}}`))
	f.Add([]byte(`{"error":{"message":"boom"}}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"<think>a</th"}}]}` + "\n" + `{"choices":[{"delta":{"content":"ink>b"}}]}`))
	f.Add([]byte("{\n[DONE]\n"))
	f.Add([]byte(`{"choices":[{"index":0,"text":"x"}],"usage":{"prompt_tokens":-50,"completion_tokens":1}}` + "\n" +
		`{"choices":[{"index":0,"text":"y"}],"usage":{"prompt_tokens":3,"completion_tokens":3000000000}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m StreamMeter
		var rec runlog.Record
		m.Reset(&rec)
		at := int64(0)
		for _, line := range bytes.Split(data, []byte("\n")) {
			at += 1000
			m.Event(line, at, false)
		}
		m.EOF(at + 1)
		m.Close(7)
		prev := int64(-1)
		for i, c := range rec.Chunks {
			if c.Tokens < 1 || c.T < prev {
				t.Fatalf("chunk %d = %+v after t=%d: want ≥ 1 token, in order", i, c, prev)
			}
			prev = c.T
		}
		if rec.CompletionTokens < 0 || rec.PromptTokens < 0 || rec.CachedTokens < 0 || rec.ReasoningTokens < 0 {
			t.Fatalf("negative counts: %+v", rec)
		}
		if rec.CompletionTokens > maxUsageTokens || rec.PromptTokens > maxUsageTokens || rec.ReasoningTokens > rec.CompletionTokens {
			t.Fatalf("unbelievable counts kept: %+v", rec)
		}
		// Whatever a server sends, the record stays readable.
		rec.ID = "x"
		if _, _, _, err := runlog.ReadAll(bytes.NewReader(runlog.AppendRecord(nil, &rec)), "fuzz"); err != nil {
			t.Fatalf("the record does not read back: %v", err)
		}
		if rec.OK() && rec.End == 0 {
			t.Fatal("a clean stream without an end time")
		}
	})
}

func TestUsageNotBelieved(t *testing.T) {
	chunk := func(text string, compl int) string {
		return `{"choices":[{"index":0,"text":"` + text + `"}],"usage":{"prompt_tokens":10,"completion_tokens":` + itoa(compl) + `}}`
	}
	final := func(prompt, compl, cached, reasoning int) string {
		return `{"choices":[],"usage":{"prompt_tokens":` + itoa(prompt) + `,"completion_tokens":` + itoa(compl) +
			`,"prompt_tokens_details":{"cached_tokens":` + itoa(cached) + `},"completion_tokens_details":{"reasoning_tokens":` + itoa(reasoning) + `}}}`
	}
	plain := func(text string) string { return `{"choices":[{"index":0,"text":"` + text + `"}]}` }
	for _, tc := range []struct {
		name           string
		events         []string
		maxTokens      int
		wantSource     runlog.TokenSource
		wantCompl      int
		wantPrompt     int
		wantChunkToks  []int32
		wantRejectPart string // "" = usage believed
	}{
		{"believable end usage", []string{plain("a"), plain("b"), final(10, 2, 0, 0)}, 0, runlog.TokensUsage, 2, 10, []int32{1, 1}, ""},
		{"negative prompt", []string{plain("a"), plain("b"), final(-50, 2, 0, 0)}, 0, runlog.TokensUsage, 2, 7, []int32{1, 1}, "prompt_tokens -50 is negative"},
		{"negative completion", []string{plain("a"), plain("b"), final(10, -3, 0, 0)}, 0, runlog.TokensCounted, 2, 10, []int32{1, 1}, "completion_tokens -3 is negative"},
		{"absurd completion", []string{plain("a"), plain("b"), final(10, 1_000_000_000_000, 0, 0)}, 0, runlog.TokensCounted, 2, 10, []int32{1, 1}, "beyond any model's"},
		{"far above the chunks", []string{plain("a"), final(10, 5_000_000, 0, 0)}, 0, runlog.TokensCounted, 1, 10, []int32{1}, "far above the 1 chunks"},
		{"far above max_tokens", []string{plain("a"), plain("b"), final(10, 5000, 0, 0)}, 16, runlog.TokensCounted, 2, 10, []int32{1, 1}, "far above the max_tokens 16"},
		{"cached above prompt", []string{plain("a"), plain("b"), final(10, 2, 50, 0)}, 0, runlog.TokensUsage, 2, 7, []int32{1, 1}, "cached_tokens 50"},
		{"reasoning above completion", []string{plain("a"), plain("b"), final(10, 2, 0, 9)}, 0, runlog.TokensCounted, 2, 10, []int32{1, 1}, "reasoning_tokens 9"},
		// Continuous usage: per-chunk counts come from the cumulative count,
		// until it jumps absurdly (past int32 once) or goes backwards.
		{"continuous believable", []string{chunk("a", 1), chunk("bc", 3), chunk("d", 4)}, 0, runlog.TokensUsage, 4, 10, []int32{1, 2, 1}, ""},
		{"continuous jump", []string{chunk("a", 1), chunk("b", 1+1<<31), chunk("c", 2+1<<31)}, 0, runlog.TokensCounted, 3, 10, []int32{1, 1, 1}, "jumped by 2147483648"},
		{"continuous decreasing", []string{chunk("a", 5), chunk("b", 3), chunk("c", 6)}, 0, runlog.TokensCounted, 7, 10, []int32{5, 1, 1}, "fell from 5 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m StreamMeter
			rec := runlog.Record{ID: "r", MaxTokens: tc.maxTokens}
			m.Reset(&rec)
			for i, e := range tc.events {
				m.Event([]byte(e), int64(i+1)*1000, false)
			}
			m.Event([]byte("[DONE]"), 99_000, false)
			m.Close(7)
			var toks []int32
			for _, c := range rec.Chunks {
				toks = append(toks, c.Tokens)
			}
			if rec.TokenSource != tc.wantSource || rec.CompletionTokens != tc.wantCompl || rec.PromptTokens != tc.wantPrompt || !slices.Equal(toks, tc.wantChunkToks) {
				t.Errorf("record: source %s, completion %d, prompt %d, chunk tokens %v; want %s, %d, %d, %v",
					rec.TokenSource, rec.CompletionTokens, rec.PromptTokens, toks, tc.wantSource, tc.wantCompl, tc.wantPrompt, tc.wantChunkToks)
			}
			if tc.wantRejectPart == "" && rec.UsageRejected != "" || !strings.Contains(rec.UsageRejected, tc.wantRejectPart) {
				t.Errorf("UsageRejected = %q; want it to say %q", rec.UsageRejected, tc.wantRejectPart)
			}
			if _, _, _, err := runlog.ReadAll(bytes.NewReader(runlog.AppendRecord(nil, &rec)), "r.jsonl"); err != nil {
				t.Errorf("the record does not read back: %v", err)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
