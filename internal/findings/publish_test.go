package findings

import (
	"reflect"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// scripted is six requests sent at 0, each of 30 visible tokens that the
// server emitted one every 10 ms from 100 ms (its first token at 100 ms:
// arrival 0 + prefill 100 ms), delivered as the given chunks: (release
// time ms, tokens).
func scripted(chunks [][2]int64) Input {
	tr := NewTracker()
	for i := range 6 {
		r := &runlog.Record{ID: string(rune('a' + i)), Sent: 1, Server: &runlog.ServerTiming{ArrivalNs: 1, PrefillNs: 100e6 - 1}}
		for _, c := range chunks {
			r.Chunks = append(r.Chunks, runlog.Chunk{T: c[0] * 1e6, Tokens: int32(c[1]), Visible: true})
		}
		r.End = r.Chunks[len(r.Chunks)-1].T
		tr.Add(r)
	}
	return Input{Summary: &stats.Summary{Requests: 6}, Requests: tr}
}

// engine emits token k (from 1) at 90 + 10k ms.
func TestOutputBufferedByHand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks [][2]int64
		want   map[string]any
		says   string
	}{
		// Sentences of 12, 9 and 9 tokens, each released at its last
		// token: 210, 300, 390 ms. TTP 110 ms after the server's first;
		// 27 of 29 per-token gaps are inside bursts; bursts 90 ms apart.
		{"sentence", [][2]int64{{210, 12}, {300, 9}, {390, 9}}, map[string]any{
			"requests": 6, "tokens_per_burst": 10.0, "near_zero_token_gaps_pct": 93.1, "per_chunk_itl_p50_ms": 90.0, "per_token_itl_p50_ms": 0.0,
			"server_to_client_ttp_p50_ms": 110.0, "pattern": "sentences", "burst_min_tokens": 9, "burst_max_tokens": 12,
		}, "bursts of ~10: varying in size (9–12 tokens) as sentences do"},
		// The whole answer at its last token, 390 ms: 290 ms after.
		{"whole", [][2]int64{{390, 30}}, map[string]any{
			"requests": 6, "tokens_per_burst": 30.0, "near_zero_token_gaps_pct": 100.0, "per_chunk_itl_p50_ms": 0.0, "per_token_itl_p50_ms": 0.0,
			"server_to_client_ttp_p50_ms": 290.0, "pattern": "whole",
		}, "TTP is 290 ms after the server's first token"},
		// Blocks of 10 at tokens 10, 20, 30: 190, 290, 390 ms.
		{"blocks", [][2]int64{{190, 10}, {290, 10}, {390, 10}}, map[string]any{
			"requests": 6, "tokens_per_burst": 10.0, "near_zero_token_gaps_pct": 93.1, "per_chunk_itl_p50_ms": 100.0, "per_token_itl_p50_ms": 0.0,
			"server_to_client_ttp_p50_ms": 90.0, "pattern": "blocks", "block_tokens": int64(10),
		}, "blocks of 10 tokens"},
		// A gateway flushing sentence buffers as one-token SSE events in
		// one read: the same bursts.
		{"flushed events", flushed([][2]int64{{210, 12}, {300, 9}, {390, 9}}), nil, "bursts of ~10: varying in size (9–12 tokens)"},
	} {
		f, ok := outputBuffered(scripted(tc.chunks))
		if !ok {
			t.Errorf("%s: no finding", tc.name)
			continue
		}
		if tc.want != nil && !reflect.DeepEqual(f.Evidence, tc.want) {
			t.Errorf("%s: evidence %v, want %v", tc.name, f.Evidence, tc.want)
		}
		if !strings.Contains(f.Message, tc.says) {
			t.Errorf("%s: message %q lacks %q", tc.name, f.Message, tc.says)
		}
		if _, ok := multiTokenChunks(scripted(tc.chunks)); ok {
			t.Errorf("%s: called multi-token chunks", tc.name)
		}
	}
}

// flushed splits each release into one-token chunks 0.1 ms apart.
func flushed(releases [][2]int64) [][2]int64 {
	var out [][2]int64
	for _, r := range releases {
		for range r[1] {
			out = append(out, [2]int64{r[0], 1})
		}
	}
	// Times in ms cannot say 0.1 ms; the same ms is within burstGapNs.
	return out
}

// Speculative decoding: 3 and 2 tokens a step, a step every 10 ms from
// 100 ms, twelve chunks: bursty, yet not buffered — the multi-token-chunks
// note says which it is, with TTP at the server's first token.
func TestSpecDecIsNotBuffered(t *testing.T) {
	var chunks [][2]int64
	for i := range 12 {
		chunks = append(chunks, [2]int64{100 + 10*int64(i), 3 - int64(i%2)})
	}
	in := scripted(chunks)
	if f, ok := outputBuffered(in); ok {
		t.Fatalf("spec-dec called buffered: %s", f.Message)
	}
	f, ok := multiTokenChunks(in)
	if !ok {
		t.Fatal("no multi-token-chunks note")
	}
	if f.Evidence["tokens_per_burst"] != 2.5 || f.Evidence["per_chunk_itl_p50_ms"] != 10.0 || f.Evidence["server_to_client_ttp_p50_ms"] != 0.0 {
		t.Errorf("evidence %v", f.Evidence)
	}
	if !strings.Contains(f.Message, "speculative decoding") {
		t.Errorf("message %q", f.Message)
	}
	// One token a chunk: neither.
	var plain [][2]int64
	for k := range 30 {
		plain = append(plain, [2]int64{100 + 10*int64(k), 1})
	}
	if _, ok := outputBuffered(scripted(plain)); ok {
		t.Error("plain stream called buffered")
	}
	if _, ok := multiTokenChunks(scripted(plain)); ok {
		t.Error("plain stream called multi-token")
	}
}
