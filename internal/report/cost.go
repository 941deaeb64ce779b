package report

import (
	"fmt"
	"io"

	"github.com/goodput/goodput/internal/breakdown"
)

func init() { RegisterSection("cost", CostTerminal, CostJSON, exampleCost) }

// exampleCost is a level's cost with every figure known.
func exampleCost(breakdown.Options) *breakdown.LevelCost {
	return &breakdown.LevelCost{NumGPUs: 1, GoodputPerGPU: 1, OutputPerGPU: 1, CostPerHour: 1, CostPerMOutput: 1, PowerWatts: 1, JoulesPerOutput: 1}
}

// CostTerminal writes the level's cost lines; nothing for nil.
func CostTerminal(w io.Writer, c *breakdown.LevelCost) error {
	if c == nil {
		return nil
	}
	t := &term{}
	t.header(" Per GPU and cost ", '=')
	t.line("GPUs:", fmt.Sprint(c.NumGPUs))
	t.line("Goodput per GPU (req/s):", f2(c.GoodputPerGPU))
	t.line("Output throughput per GPU (tok/s):", f2(c.OutputPerGPU))
	if c.CostPerHour > 0 {
		t.line("Cost per 1M output tokens:", f2(c.CostPerMOutput)+fmt.Sprintf(" (at %s per GPU-hour)", f2(c.CostPerHour)))
	}
	if c.PowerWatts > 0 {
		t.line("GPU power, mean total (W):", f2(c.PowerWatts))
		t.line("Energy per output token (J):", f2(c.JoulesPerOutput))
	}
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// CostJSON is the level's cost for the result JSON; nil for nil. Absent
// figures (no price, no power) are left out.
func CostJSON(c *breakdown.LevelCost) map[string]any {
	if c == nil {
		return nil
	}
	m := map[string]any{"num_gpus": c.NumGPUs, "goodput_per_gpu": c.GoodputPerGPU, "output_throughput_per_gpu": c.OutputPerGPU}
	if c.CostPerHour > 0 {
		m["gpu_cost_per_hour"], m["cost_per_1m_output_tokens"] = c.CostPerHour, c.CostPerMOutput
	}
	if c.PowerWatts > 0 {
		m["gpu_power_watts_mean"], m["joules_per_output_token"] = c.PowerWatts, c.JoulesPerOutput
	}
	return m
}
