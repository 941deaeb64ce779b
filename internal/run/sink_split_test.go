package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
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

// The server's duration histograms are bounded by the longest request the
// client had in flight (failures included); token histograms are not.
func TestServerWindowsCappedByLongestRequest(t *testing.T) {
	c := newCollector(stats.Options{Percentiles: []float64{50, 99}}, true, nil, nil)
	for _, r := range []runlog.Record{
		{Sent: 1e9, End: 1e9 + 7477e6, Chunks: []runlog.Chunk{{T: 1e9 + 100e6, Tokens: 1}, {T: 1e9 + 7477e6, Tokens: 1}}},
		{Sent: 2e9, End: 2e9 + 500e6, ErrorClass: runlog.ErrTimeout},
	} {
		if err := c.Record(&r); err != nil {
			t.Fatal(err)
		}
	}
	d := c.data(0, runlog.Level{})
	if d.longest != 7477e6 {
		t.Fatalf("longest = %d ns; want 7477e6", d.longest)
	}
	b := servermetrics.NewHistogramBuilder(servermetrics.VLLMRequestLatencyBuckets)
	for _, v := range []float64{4, 4, 4, 7.4} {
		b.Observe(v)
	}
	snap := func(at int64, h servermetrics.Histogram) servermetrics.Snapshot {
		return servermetrics.Snapshot{TimeNS: at, Histograms: map[servermetrics.Name]servermetrics.Histogram{
			servermetrics.DecodeTime: h, servermetrics.RequestGenerationTokens: h}}
	}
	empty := servermetrics.NewHistogramBuilder(servermetrics.VLLMRequestLatencyBuckets).Histogram()
	ws := serverWindows([]string{"server"}, map[string][]servermetrics.Snapshot{"server": {snap(0, empty), snap(10e9, b.Histogram())}}, 1e9, 9e9)
	before := ws[0].Histograms[servermetrics.DecodeTime].P99Range
	capDurations(ws, d.longest)
	if got := ws[0].Histograms[servermetrics.DecodeTime]; got.P99Range.Hi != 7.477 || got.P99 > 7.477 {
		t.Errorf("decode P99 %g in %+v (uncapped %+v); want ≤ 7.477 s", got.P99, got.P99Range, before)
	}
	if got := ws[0].Histograms[servermetrics.RequestGenerationTokens].P99Range; got != before {
		t.Errorf("token histogram's P99 range = %+v; want %+v, not capped by a time", got, before)
	}
}
