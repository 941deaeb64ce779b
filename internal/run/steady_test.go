package run

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
)

// steadyRecords are 500 requests 100 ms apart whose first 100 waited 500
// ms for their first token and the rest 100 ms (±1).
func steadyRecords() []runlog.Record {
	recs := make([]runlog.Record, 500)
	for i := range recs {
		sent := int64(i) * 100e6
		ttft := int64(100+i%3-1) * 1e6
		if i < 100 {
			ttft = 500e6
		}
		recs[i] = runlog.Record{ID: strconv.Itoa(i), Sent: sent, Intended: sent, Status: 200, PromptTokens: 10, CompletionTokens: 2,
			Chunks: []runlog.Chunk{{T: sent + ttft, Tokens: 1, Visible: true}, {T: sent + ttft + 10e6, Tokens: 1, Visible: true}},
			End:    sent + ttft + 10e6}
	}
	return recs
}

// --steady-state auto leaves the transient out: the level's mean TTFT is
// then the settled requests' (100 ms), not the whole level's (100·0.8 +
// 500·0.2 = 180 ms); without it the figures keep every request and the
// steady-state line still says where the transient was.
func TestSteadyStateTrim(t *testing.T) {
	for _, trim := range []bool{false, true} {
		meta := &runlog.Meta{Command: "bench", Levels: []runlog.Level{{RequestRate: 10}}, Analysis: &runlog.Analysis{SteadyTrim: trim, Buckets: []int{}}}
		res, err := AnalyzeRecords(meta, steadyRecords(), AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l := res.Levels[0]
		m, _ := l.Summary.Metric("ttft")
		st := breakdown.Get[*breakdown.Steady](l.Breakdowns)
		if st == nil || st.TransientN != 100 || st.Trimmed != trim {
			t.Fatalf("trim %v: steady state %+v; want the 100-request transient, trimmed %v", trim, st, trim)
		}
		want, n := 180.0, 500
		if trim {
			want, n = 100.0, 400
		}
		if math.Abs(m.Mean-want) > 0.5 || m.N != n {
			t.Errorf("trim %v: mean TTFT %.2f ms over %d requests; want %.0f over %d", trim, m.Mean, m.N, want, n)
		}
		if trim != strings.Contains(strings.Join(l.Summary.Warnings, "\n"), "left out of these figures") {
			t.Errorf("trim %v: warnings %q", trim, l.Summary.Warnings)
		}
	}
}
