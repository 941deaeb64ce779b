package proxy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/goodput/goodput/internal/stats"
)

// TestMetricsLint runs promlint over everything the proxy exposes.
func TestMetricsLint(t *testing.T) {
	h := newHarness(t, &pieceWriter{status: 200, header: sseHeader(), pieces: [][]byte{events(
		`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[{"index":0,"delta":{"content":"b"}}]}`, "[DONE]")}},
		func(o *Options) { o.SLO = stats.SLO{TTFT: time.Second} })
	if _, _, err := h.post(t.Context(), "/v1/chat/completions", []byte(`{"model":"m","stream":true}`), nil); err != nil {
		t.Fatal(err)
	}
	h.waitRecords(1)
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 15 {
		t.Errorf("gathered %d families; want every metric (≥ 15)", len(mfs))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
