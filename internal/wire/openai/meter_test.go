package openai

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/wire"

	"github.com/google/go-cmp/cmp"

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
	f.Add([]byte(content("a") + "\n" + `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1},"metrics":{"queue_time_ms":1.5,"time_to_first_token_ms":-2}}` +
		"\n" + `{"choices":[],"timings":{"prompt_ms":1e308,"predicted_ms":3,"cache_n":-4}}` + "\n[DONE]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m wire.StreamMeter
		m.SetDecoder(&ChunkDecoder{})
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
		if rec.CompletionTokens > wire.MaxUsageTokens || rec.PromptTokens > wire.MaxUsageTokens || rec.ReasoningTokens > rec.CompletionTokens {
			t.Fatalf("unbelievable counts kept: %+v", rec)
		}
		if s := rec.Server; s != nil && (s.QueueNs < 0 || s.PrefillNs < 0 || s.DecodeNs < 0 || s.CachedTokens < 0 || s.ArrivalNs != 0) {
			t.Fatalf("impossible server timing kept: %+v", *s)
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
		{"below the token chunks", []string{plain("a"), plain("b"), plain("c"), final(10, 2, 0, 0)}, 0, runlog.TokensCounted, 3, 10, []int32{1, 1, 1}, "completion_tokens 2 is below the 3 token-carrying chunks"},
		{"usage-only count decreasing", []string{plain("a"), plain("b"), final(10, 50, 0, 0), final(10, 2, 0, 0)}, 0, runlog.TokensCounted, 2, 10, []int32{1, 1}, "fell from 50 to 2"},
		{"continuous decreasing", []string{chunk("a", 5), chunk("b", 3), chunk("c", 6)}, 0, runlog.TokensCounted, 7, 10, []int32{5, 1, 1}, "fell from 5 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m wire.StreamMeter
			m.SetDecoder(&ChunkDecoder{})
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

// TestServerTiming checks that the timing a server reports about a request
// (vLLM's "metrics", llama.cpp's "timings") becomes rec.Server, streamed
// and whole, with the counts the server gave and nothing invented.
func TestServerTiming(t *testing.T) {
	const (
		vllmUsage = `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}},` +
			`"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":620.25,"tokens_per_second":2.3}}`
		llamaFinal = `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"usage":{"completion_tokens":3,"prompt_tokens":12,"total_tokens":15},` +
			`"timings":{"cache_n":4,"prompt_n":8,"prompt_ms":31.5,"prompt_per_token_ms":3.9375,"prompt_per_second":253.9,"predicted_n":3,"predicted_ms":40.25,"predicted_per_token_ms":13.4,"predicted_per_second":74.5}}`
		// llama.cpp with timings_per_token: running timings in every chunk.
		llamaRunning = `{"choices":[{"index":0,"delta":{"content":"b"}}],"timings":{"cache_n":4,"prompt_n":8,"prompt_ms":31.5,"predicted_n":2,"predicted_ms":20}}`
	)
	vllmWant := &runlog.ServerTiming{QueueNs: 12_300_000, PrefillNs: 85_200_000, DecodeNs: 1_240_500_000, CachedTokens: 8}
	llamaWant := &runlog.ServerTiming{PrefillNs: 31_500_000, DecodeNs: 40_250_000, CachedTokens: 4, QueueUnknown: true} // llama.cpp reports no queue
	for _, tc := range []struct {
		name   string
		events []string
		want   *runlog.ServerTiming
	}{
		{"vLLM metrics in the usage chunk", []string{roleChunk, content("a"), content("b"), content("c"), vllmUsage}, vllmWant},
		{"llama.cpp timings in the last chunk", []string{content("a"), content("b"), content("c"), llamaFinal}, llamaWant},
		{"llama.cpp running timings: the last counts", []string{content("a"), llamaRunning, content("c"), llamaFinal}, llamaWant},
		{"no timing", []string{roleChunk, content("a"), usageChunk}, nil},
		{"null metrics", []string{content("a"), `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1},"metrics":null}`}, nil},
		{"queue only", []string{content("a"), `{"choices":[],"metrics":{"queue_time_ms":2,"time_to_first_token_ms":null}}`},
			&runlog.ServerTiming{QueueNs: 2_000_000}},
		// The cache count of vLLM's timing is the usage's, so usage not
		// believed leaves it 0.
		{"vLLM metrics, usage cached not believed", []string{content("a"),
			`{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":50}},"metrics":{"queue_time_ms":0,"time_to_first_token_ms":1,"generation_time_ms":0}}`},
			&runlog.ServerTiming{PrefillNs: 1_000_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m wire.StreamMeter
			m.SetDecoder(&ChunkDecoder{})
			rec := runlog.Record{ID: "r"}
			m.Reset(&rec)
			for i, e := range tc.events {
				m.Event([]byte(e), int64(i+1)*1000, false)
			}
			m.Event([]byte("[DONE]"), 99_000, false)
			m.Close(7)
			if diff := cmp.Diff(tc.want, rec.Server); diff != "" {
				t.Errorf("rec.Server mismatch (-want +got):\n%s", diff)
			}
		})
	}

	whole := []struct {
		name, body string
		want       *runlog.ServerTiming
	}{
		{"vLLM whole", `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"abc"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}},` +
			`"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":620.25,"tokens_per_second":2.3}}`, vllmWant},
		{"llama.cpp whole", `{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"abc"}}],"usage":{"completion_tokens":3,"prompt_tokens":12,"total_tokens":15},` +
			`"timings":{"cache_n":4,"prompt_n":8,"prompt_ms":31.5,"predicted_n":3,"predicted_ms":40.25}}`, llamaWant},
		{"no timing", `{"choices":[{"message":{"content":"abc"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3}}`, nil},
	}
	for _, tc := range whole {
		t.Run(tc.name, func(t *testing.T) {
			rec := runlog.Record{ID: "w", Status: 200}
			wire.MeasureWhole(&ChunkDecoder{}, &rec, []byte(tc.body), 500, 9)
			if diff := cmp.Diff(tc.want, rec.Server); diff != "" {
				t.Errorf("wire.MeasureWhole: rec.Server mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLlamaCachedTokens: llama.cpp's usage has no cached_tokens; its
// timings say them, as cache_n or as prompt_tokens − prompt_n, and the
// record's CachedTokens (what a run's cache share sums) reads them.
func TestLlamaCachedTokens(t *testing.T) {
	final := func(usage, timings string) string {
		return `{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"usage":` + usage + `,"timings":` + timings + `}`
	}
	for _, tc := range []struct {
		name, event string
		want        int
	}{
		{"cache_n", final(`{"prompt_tokens":12,"completion_tokens":1}`, `{"cache_n":4,"prompt_n":8,"predicted_n":1}`), 4},
		{"prompt_tokens − prompt_n", final(`{"prompt_tokens":12,"completion_tokens":1}`, `{"prompt_n":3,"predicted_n":1}`), 9},
		{"nothing cached", final(`{"prompt_tokens":12,"completion_tokens":1}`, `{"prompt_n":12,"predicted_n":1}`), 0},
		{"usage's count wins", final(`{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":5}}`, `{"prompt_n":3}`), 5},
		{"prompt_n beyond the prompt", final(`{"prompt_tokens":12,"completion_tokens":1}`, `{"prompt_n":40}`), 0},
		{"cache_n beyond the prompt", final(`{"prompt_tokens":12,"completion_tokens":1}`, `{"cache_n":40,"prompt_n":1}`), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m wire.StreamMeter
			m.SetDecoder(&ChunkDecoder{})
			rec := runlog.Record{ID: "r"}
			m.Reset(&rec)
			m.Event([]byte(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`), 1000, false)
			m.Event([]byte(tc.event), 2000, false)
			m.Event([]byte("[DONE]"), 3000, false)
			m.Close(7)
			if rec.CachedTokens != tc.want {
				t.Errorf("CachedTokens = %d; want %d", rec.CachedTokens, tc.want)
			}
			if tc.want > 0 && (rec.Server == nil || rec.Server.CachedTokens != tc.want) {
				t.Errorf("Server = %+v; want its CachedTokens %d", rec.Server, tc.want)
			}
		})
	}
}
