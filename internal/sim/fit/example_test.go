package fit_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim/fit"
)

// Observe turns a lone request into a prefill observation (send to first
// token) and a decode one (the median gap between its tokens, one step of
// a batch of one).
func ExampleObserve() {
	const ms = 1_000_000
	r := runlog.Record{ID: "a", Sent: 0, PromptTokens: 1024, CompletionTokens: 5, Status: 200, End: 68 * ms}
	for _, t := range []int64{40, 47, 54, 61, 68} {
		r.Chunks = append(r.Chunks, runlog.Chunk{T: t * ms, Tokens: 1, Visible: true})
	}
	obs, err := fit.Observe([]runlog.Record{r}, fit.ObserveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range obs {
		fmt.Printf("%s: batch %d, prompt %.0f, %.1f ms\n", o.Kind, o.Batch, o.Prompt, o.Seconds*1e3)
	}
	// Output:
	// prefill: batch 1, prompt 1024, 40.0 ms
	// decode: batch 1, prompt 1024, 7.0 ms
}
