package report

import (
	"bytes"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
)

// The cost block, priced and with power, as a golden file; the JSON leaves
// out what was not given.
func TestCostGolden(t *testing.T) {
	// 2 GPUs at 2.50 an hour serving 1,000 output tokens/s: 5.00 an hour
	// buys 3,600,000 tokens, so 1M cost 1.39; 700 W over 1,000 tok/s is
	// 0.70 J a token.
	c := &breakdown.LevelCost{NumGPUs: 2, GoodputPerGPU: 4, OutputPerGPU: 500, CostPerHour: 2.5, CostPerMOutput: 5.0 / 3.6, PowerWatts: 700, JoulesPerOutput: 0.7}
	var b bytes.Buffer
	if err := CostTerminal(&b, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "cost.golden", b.Bytes())
	m := CostJSON(&breakdown.LevelCost{NumGPUs: 1, GoodputPerGPU: 3, OutputPerGPU: 100})
	if len(m) != 3 || m["num_gpus"] != 1 || m["goodput_per_gpu"] != 3.0 {
		t.Errorf("unpriced, unpowered cost JSON %v; want the per-GPU figures only", m)
	}
	if CostJSON(nil) != nil {
		t.Error("CostJSON(nil) is not nil")
	}
	b.Reset()
	if err := CostTerminal(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("CostTerminal(nil) wrote %q", b.String())
	}
}
