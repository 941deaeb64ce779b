package runlog

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestKVTransferRoundTrip: a prefill/decode split's record keeps its KV
// transfer time and decode replica through a file, and a record without
// them has neither key, so files of other runs are unchanged.
func TestKVTransferRoundTrip(t *testing.T) {
	pd := Record{ID: "pd-1", Replica: 2, Sent: 1, End: 9, PromptTokens: 8000, CompletionTokens: 2, TokenSource: TokensUsage, Status: 200,
		Chunks: []Chunk{{T: 5, Tokens: 1, Visible: true}, {T: 9, Tokens: 1, Visible: true}},
		Server: &ServerTiming{ArrivalNs: 1, QueueNs: 1, PrefillNs: 3, DecodeNs: 4, KVTransferNs: 2_500_000, DecodeReplica: 5}}
	plain := Record{ID: "p-1", Sent: 1, End: 9, Status: 200, TokenSource: TokensUsage, Chunks: []Chunk{},
		Server: &ServerTiming{ArrivalNs: 1, QueueNs: 1, PrefillNs: 3, DecodeNs: 4}}
	line := string(AppendRecord(nil, &pd))
	if !strings.Contains(line, `"kv_transfer_ns":2500000`) || !strings.Contains(line, `"decode_replica":5`) {
		t.Errorf("AppendRecord = %s; want kv_transfer_ns 2500000 and decode_replica 5", line)
	}
	if l := string(AppendRecord(nil, &plain)); strings.Contains(l, "kv_transfer") || strings.Contains(l, "decode_replica") {
		t.Errorf("AppendRecord without a split = %s; want neither key", l)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteMeta(&Meta{Tool: "goodput", Command: "sim", Started: time.Unix(1700000000, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Record{&pd, &plain} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	_, got, _, err := ReadAll(&buf, "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Record{pd, plain}, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestDecodeReplicaRange: a decode replica beyond the records' bound is
// refused, as Replica is.
func TestDecodeReplicaRange(t *testing.T) {
	line := `{"id":"x","sent_ns":1,"end_ns":2,"status":200,"server":{"arrival_ns":0,"queue_ns":0,"prefill_ns":0,"decode_ns":0,"preemptions":0,"cached_tokens":0,"decode_replica":70000}}`
	_, _, warns, err := ReadAll(strings.NewReader(pdMetaLine(t)+line+"\n"), "r.jsonl")
	if err == nil && len(warns) == 0 {
		t.Errorf("a decode_replica of 70000 was read without complaint")
	}
}

func TestDecodeReplicaInRange(t *testing.T) {
	// The control of TestDecodeReplicaRange: the same line with a decode
	// replica in range reads cleanly.
	line := `{"id":"x","sent_ns":1,"end_ns":2,"status":200,"server":{"arrival_ns":0,"queue_ns":0,"prefill_ns":0,"decode_ns":0,"preemptions":0,"cached_tokens":0,"decode_replica":7}}`
	_, recs, warns, err := ReadAll(strings.NewReader(pdMetaLine(t)+line+"\n"), "r.jsonl")
	if err != nil || len(warns) != 0 || len(recs) != 1 || recs[0].Server.DecodeReplica != 7 {
		t.Errorf("ReadAll = %v, %v, %v; want one record of decode replica 7", recs, warns, err)
	}
}

// pdMetaLine is a run's first line.
func pdMetaLine(t *testing.T) string {
	t.Helper()
	b, err := AppendMeta(nil, &Meta{Tool: "goodput", Command: "sim", Started: time.Unix(1700000000, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
