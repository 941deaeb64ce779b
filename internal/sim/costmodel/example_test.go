package costmodel_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/sim/costmodel"
)

// The cost of one step: 32 decodes at 2,000 tokens of context beside a
// 480-token prefill chunk, Llama-3.1-8B on one H100.
func Example() {
	m, _ := costmodel.LookupModel("llama-3.1-8b")
	g, _ := costmodel.LookupGPU("h100-sxm")
	d, err := costmodel.NewDeployment(m, g, 1, "bf16", "auto")
	if err != nil {
		panic(err)
	}
	var b costmodel.Batch
	for range 32 {
		b.Add(1, 2000, false)
	}
	b.Add(480, 0, true)
	br := d.Breakdown(&b)
	fmt.Printf("step %.1f ms: GEMMs %.1f, attention %.1f, fixed %.1f; decode-only %v\n",
		br.Total*1e3, br.GEMM*1e3, br.Attn*1e3, br.Overhead*1e3, br.Decode)
	// Output:
	// step 18.7 ms: GEMMs 10.6, attention 5.6, fixed 1.3; decode-only false
}
