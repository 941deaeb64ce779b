package report

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/sim/fit"
)

// TestFitTable: observed 20 ms, fitted 21 ms is +5.0 % (21/20 − 1); base
// 25 ms; RMS error 0.05 prints as 5.0 %. A prefill has no context ("-"),
// a decode its mean context rounded (1023.6 → 1024).
func TestFitTable(t *testing.T) {
	res := &fit.Result{
		Observations: []fit.Observation{
			{Kind: fit.Prefill, Batch: 1, Prompt: 4096, Seconds: 0.020, Requests: 4},
			{Kind: fit.Decode, Batch: 8, Prompt: 512, Context: 1023.6, Seconds: 0.010, Requests: 16},
		},
		Modelled: []float64{0.021, 0.0099}, BaseModelled: []float64{0.025, 0.012}, RMSRelErr: 0.05,
	}
	var b strings.Builder
	if err := FitTable(&b, res); err != nil {
		t.Fatal(err)
	}
	want := "\n# Observed vs modelled step times (fit RMS error 5.0 %)\n" +
		"# kind     batch  prompt  context  requests  observed ms  base ms  fitted ms  error\n" +
		"# prefill  1      4096    -        4         20.000       25.000   21.000     +5.0 %\n" +
		"# decode   8      512     1024     16        10.000       12.000   9.900      -1.0 %\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
