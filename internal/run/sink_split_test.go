package run

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/scrape"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
)

// A llama.cpp answer times prefill and decode but not the queue: the
// split still carries the E2E lines, their rest counting the queue.
func TestTTFTSplitNoQueueKeepsE2E(t *testing.T) {
	s := breakdown.NewTTFTSplitter([]float64{50, 99})
	for i := range 4 {
		r := &runlog.Record{Sent: 0, End: 900e6, Chunks: []runlog.Chunk{{T: 100e6, Tokens: 1}, {T: 900e6, Tokens: 1}},
			Server: &runlog.ServerTiming{PrefillNs: 60e6, DecodeNs: int64(700+i) * 1e6, QueueUnknown: true}}
		s.Add(r)
	}
	sp := s.Summary()
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
	if d.longest != 7477e6 || d.longestTTFT != 100e6 {
		t.Fatalf("longest = %d ns, TTFT %d ns; want 7477e6 and 100e6", d.longest, d.longestTTFT)
	}
	b := servermetrics.NewHistogramBuilder(servermetrics.VLLMRequestLatencyBuckets)
	for _, v := range []float64{4, 4, 4, 7.4} {
		b.Observe(v)
	}
	ttft := servermetrics.NewHistogramBuilder(servermetrics.VLLMRequestLatencyBuckets)
	for _, v := range []float64{0.05, 0.05, 0.05, 0.09} {
		ttft.Observe(v)
	}
	snap := func(at int64, h, t servermetrics.Histogram) servermetrics.Snapshot {
		return servermetrics.Snapshot{TimeNS: at, Histograms: map[servermetrics.Name]servermetrics.Histogram{
			servermetrics.DecodeTime: h, servermetrics.RequestGenerationTokens: h, servermetrics.TTFT: t}}
	}
	empty := servermetrics.NewHistogramBuilder(servermetrics.VLLMRequestLatencyBuckets).Histogram()
	ws := serverWindows([]string{"server"}, map[string][]servermetrics.Snapshot{"server": {snap(0, empty, empty), snap(10e9, b.Histogram(), ttft.Histogram())}}, 1e9, 9e9)
	before := ws[0].Histograms[servermetrics.DecodeTime].P99Range
	capDurations(ws, d.longest, d.longestTTFT)
	if got := ws[0].Histograms[servermetrics.DecodeTime]; got.P99Range.Hi != 7.477 || got.P99 > 7.477 {
		t.Errorf("decode P99 %g in %+v (uncapped %+v); want ≤ 7.477 s", got.P99, got.P99Range, before)
	}
	// The server's TTFT, all in the first 0.3 s bucket, is bounded by the
	// client's longest TTFT, 100 ms, not only by the longest request.
	if got := ws[0].Histograms[servermetrics.TTFT].P99Range; got.Hi != 0.1 {
		t.Errorf("TTFT P99 range = %+v; want at most 0.1 s", got)
	}
	if got := ws[0].Histograms[servermetrics.RequestGenerationTokens].P99Range; got != before {
		t.Errorf("token histogram's P99 range = %+v; want %+v, not capped by a time", got, before)
	}
}

// A scrape of too many series is kept with its known figures, its count of
// series cut in the line written, a note said once, and no raw series
// held in memory.
func TestScrapeCrowdedBody(t *testing.T) {
	var body strings.Builder
	body.WriteString("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
	for i := range 1000 {
		fmt.Fprintf(&body, "junk_%d 1\n", i)
	}
	var lines []runlog.Scrape
	var notes []string
	s := newServerStore(func(l *runlog.Scrape) error { lines = append(lines, *l); return nil })
	s.note = func(n string) { notes = append(notes, n) }
	for at := range int64(2) {
		s.add(scrape.Sample{Target: "server", At: at, Body: []byte(body.String())})
	}
	_, snaps := s.snapshots()
	if got := snaps["server"]; len(got) != 2 || got[0].Values[servermetrics.Running] != 3 || got[0].Raw != nil {
		t.Fatalf("kept %+v; want two snapshots with running 3 and no raw series", got)
	}
	if len(lines) != 2 || !strings.Contains(string(lines[0].Sample), fmt.Sprintf(`"dropped_series":%d`, 1000-servermetrics.MaxRawSeries)) {
		t.Errorf("scrape line %s; want dropped_series %d", lines[0].Sample, 1000-servermetrics.MaxRawSeries)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "744 series past the parse's bounds") {
		t.Errorf("notes = %q; want one saying 744 series were cut", notes)
	}
}

// A run in virtual time sends its first requests at 0 ns: they bound the
// server's durations too (they once counted as never sent, leaving a
// rate-inf simulation's server TTFT uncapped, 500–750 ms beside a client
// that waited 551 ms at most).
func TestLongestFromTimeZero(t *testing.T) {
	c := newCollector(stats.Options{Percentiles: []float64{50, 99}}, true, nil, nil)
	r := runlog.Record{Sent: 0, End: 1575e6, Chunks: []runlog.Chunk{{T: 551e6, Tokens: 1}, {T: 1575e6, Tokens: 1}}}
	if err := c.Record(&r); err != nil {
		t.Fatal(err)
	}
	if d := c.data(0, runlog.Level{}); d.longest != 1575e6 || d.longestTTFT != 551e6 {
		t.Errorf("longest = %d ns, TTFT %d ns; want 1575e6 and 551e6", d.longest, d.longestTTFT)
	}
}
