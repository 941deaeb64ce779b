package openai

import (
	"bytes"
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
		if rec.CompletionTokens < 0 || rec.PromptTokens < 0 || rec.CachedTokens < 0 {
			t.Fatalf("negative counts: %+v", rec)
		}
		if rec.OK() && rec.End == 0 {
			t.Fatal("a clean stream without an end time")
		}
	})
}
