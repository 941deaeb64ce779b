package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
)

// A llama.cpp answer times prefill and decode but not the queue: the
// split still carries the E2E lines, their rest counting the queue.
func TestTTFTSplitNoQueueKeepsE2E(t *testing.T) {
	var s ttftSplit
	for i := range 4 {
		r := &runlog.Record{Sent: 0, End: 900e6, Chunks: []runlog.Chunk{{T: 100e6, Tokens: 1}, {T: 900e6, Tokens: 1}},
			Server: &runlog.ServerTiming{PrefillNs: 60e6, DecodeNs: int64(700+i) * 1e6, QueueUnknown: true}}
		s.add(r)
	}
	sp := s.summary([]float64{50, 99})
	if sp == nil || sp.QueueKnown || sp.E2E.N != 4 || sp.Decode.N != 4 || sp.RestE2E.N != 4 {
		t.Fatalf("split = %+v; want 4 requests with E2E, decode and rest, queue unknown", sp)
	}
	if got, want := sp.RestE2E.Median, 900.0-60-701.5; got != want {
		t.Errorf("E2E rest median = %v; want %v (E2E − prefill − decode)", got, want)
	}
	var b bytes.Buffer
	if err := report.TTFTSplitTerminal(&b, sp); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Server decode (ms) P50/P99:", "E2E outside prefill+decode (ms) P50/P99:"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("split block lacks %q:\n%s", line, b.String())
		}
	}
	if m := report.TTFTSplitJSON(sp); m["server_decode_ms"] == nil || m["rest_e2e_ms"] == nil {
		t.Errorf("split JSON %v lacks server_decode_ms or rest_e2e_ms", m)
	}
}
