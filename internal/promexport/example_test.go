package promexport_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/runlog"
)

// Records observed as they finish become counters and histograms on the
// caller's registry.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := promexport.NewMetrics(promexport.MetricsOptions{
		Registerer: reg, Model: "demo", Route: promexport.RouteOf("/v1/chat/completions"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	m.Observe(&runlog.Record{Status: 200, PromptTokens: 12, CompletionTokens: 2, Chunks: []runlog.Chunk{
		{T: 40e6, Tokens: 1, Visible: true}, {T: 60e6, Tokens: 1, Visible: true}}})

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "goodput_output_tokens_total" {
			for _, s := range mf.GetMetric() {
				fmt.Println(mf.GetName(), s.GetLabel()[0].GetValue(), s.GetLabel()[1].GetValue(), s.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// goodput_output_tokens_total demo /v1/chat/completions 2
}
