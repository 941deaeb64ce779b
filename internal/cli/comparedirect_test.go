package cli

import (
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

// A hop worked by hand: three requests; direct, tokens come one a chunk
// from 100 ms after sending; through the hop, 20, 50 and 80 ms later and
// three tokens a chunk. The hop adds P50 50 ms to TTFT and TTP, and
// re-chunks (3 visible tokens a chunk against 1).
func TestCompareHopByHand(t *testing.T) {
	rec := func(id string, first int64, per int32) runlog.Record {
		r := runlog.Record{ID: id, Sent: 0}
		for k := int64(0); k < 6/int64(per); k++ {
			r.Chunks = append(r.Chunks, runlog.Chunk{T: (first + 10*k) * 1e6, Tokens: per, Visible: true})
		}
		r.End = r.Chunks[len(r.Chunks)-1].T
		return r
	}
	direct := []runlog.Record{rec("direct-0", 100, 1), rec("direct-1", 100, 1), rec("direct-2", 100, 1)}
	through := []runlog.Record{rec("goodput-x-0", 120, 3), rec("goodput-x-1", 150, 3), rec("goodput-x-2", 180, 3)}
	h := compareHop(through, direct)
	if h.Pairs != 3 || h.AddedTTFT[0] != 50 || h.AddedTTP[0] != 50 {
		t.Fatalf("hop %+v: want 3 pairs, TTFT and TTP P50 +50 ms", h)
	}
	if !h.Rechunked() || h.ThroughTPC != 3 || h.DirectTPC != 1 {
		t.Errorf("hop %+v: want re-chunked, 3 against 1 token a chunk", h)
	}
	if l := h.Lines("A", "B"); l[1] != "compare-direct: the hop adds to TTFT P50 50, P90 74, P99 79.4 ms" {
		t.Errorf("line %q", l[1])
	}
}
