package simserve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	wirepkg "github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestUsageChunkMetrics pins the per-request timing the usage chunk
// carries to vLLM's "metrics" shape (PerRequestMetrics, field order as vLLM
// writes it) and checks that goodput's decoder reads the engine's ns back.
func TestUsageChunkMetrics(t *testing.T) {
	head := chunkHead(true, "chatcmpl-1", "m", 1)
	u := makeUsage(42, 5, 16, 0)
	timing := &runlog.ServerTiming{QueueNs: 12_345_678, PrefillNs: 85_200_001, DecodeNs: 40_000_000, CachedTokens: 16}
	got := string(appendUsageChunk(nil, head, u, makeMetrics(timing, 5)))
	// mean ITL: 40 ms / 4; tokens/s: 5 / (85.200001 ms + 40 ms).
	want := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],` +
		`"usage":{"prompt_tokens":42,"total_tokens":47,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":16},"completion_tokens_details":{"reasoning_tokens":0}},` +
		`"metrics":{"time_to_first_token_ms":85.200001,"generation_time_ms":40,"queue_time_ms":12.345678,"mean_itl_ms":10,"tokens_per_second":39.936101917443274}}`
	if got != want {
		t.Errorf("usage chunk =\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatalf("usage chunk is not JSON: %s", got)
	}
	var d openai.ChunkDecoder
	var c wirepkg.Chunk
	if err := d.Decode([]byte(got), &c); err != nil {
		t.Fatal(err)
	}
	wantTiming := wirepkg.Timing{Present: true, QueueNs: 12_345_678, PrefillNs: 85_200_001, DecodeNs: 40_000_000, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}
	if diff := cmp.Diff(wantTiming, c.Timing); diff != "" {
		t.Errorf("decoded timing (-want +got):\n%s", diff)
	}
	// A prefill/decode split adds the KV transfer and the decode engine,
	// which the decoder reads back (replica 3, on the record as on the wire).
	split := *timing
	split.KVTransferNs, split.DecodeReplica = 1_798_000, 3
	got = string(appendUsageChunk(nil, head, u, makeMetrics(&split, 5)))
	if !strings.HasSuffix(got, `"tokens_per_second":39.936101917443274,"kv_transfer_time_ms":1.798,"decode_engine":3}}`) || !json.Valid([]byte(got)) {
		t.Errorf("split's usage chunk = %s; want the transfer and the engine after tokens_per_second", got)
	}
	if err := d.Decode([]byte(got), &c); err != nil {
		t.Fatal(err)
	}
	if c.Timing.KVTransferNs != 1_798_000 || c.Timing.DecodeEngine != 3 {
		t.Errorf("decoded split timing: transfer %d ns, engine %d; want 1,798,000 and 3", c.Timing.KVTransferNs, c.Timing.DecodeEngine)
	}

	// One token: no inter-token latency (null, as vLLM); no timing: no
	// metrics member at all.
	one := string(appendMetrics(nil, makeMetrics(&runlog.ServerTiming{PrefillNs: 1_000_000}, 1)))
	if want := `{"time_to_first_token_ms":1,"generation_time_ms":0,"queue_time_ms":0,"mean_itl_ms":null,"tokens_per_second":1000}`; one != want {
		t.Errorf("one-token metrics = %s; want %s", one, want)
	}
	if m := makeMetrics(nil, 3); m != nil {
		t.Errorf("makeMetrics(nil) = %+v; want nil", m)
	}
}
