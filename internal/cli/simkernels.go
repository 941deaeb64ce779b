package cli

import (
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/costmodel"
)

// kernelTablesLine says which parts of the engine's steps the GPU's
// measured kernel tables price and which the formula estimates; "" when
// the GPU has no tables (so runs without them print what they always did)
// or the setup does not resolve (the run itself reports that).
func kernelTablesLine(c sim.Config) string {
	m, err := costmodel.LookupModel(c.Model)
	if err != nil {
		return ""
	}
	g, err := costmodel.LookupGPU(c.GPU)
	if err != nil {
		return ""
	}
	d, err := costmodel.NewDeployment(m, g, max(c.TP, 1), c.DType, c.KVCacheDType)
	if err != nil {
		return ""
	}
	k := d.Kernels()
	if k.Source == "" {
		return ""
	}
	return "cost model " + k.String()
}
