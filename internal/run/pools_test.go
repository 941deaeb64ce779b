package run

import (
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// A cluster of pools is described pool by pool, and its GPUs are counted
// over its pools' own tensor parallelism: one H100 pair at TP 2 and two
// L4s at TP 1 are 2 + 1 + 1 = 4 GPUs, not the first replica's TP 2 × 3
// replicas = 6.
func TestPoolsDescribedAndCounted(t *testing.T) {
	big := sim.DefaultConfig()
	big.TP = 2
	small := sim.DefaultConfig()
	small.GPU = "l4"
	cfg := &Config{Cluster: &cluster.Config{Replicas: []sim.Config{big, small, small}, Pools: []string{"big", "small", "small"}}}
	d, err := describeVirtual(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := "big: 1 × llama-3.1-8b on h100-sxm tp=2, small: 2 × llama-3.1-8b on l4 tp=1"; d["pools"] != want {
		t.Errorf("pools = %q; want %q", d["pools"], want)
	}
	if got := servingGPUs(&runlog.Meta{Simulated: d}); got != 4 {
		t.Errorf("servingGPUs = %d; want 4", got)
	}
	// As read back from a records file, a number is a float64.
	if got := servingGPUs(&runlog.Meta{Simulated: map[string]any{"gpus": 4.0, "tensor_parallel_size": 2.0, "replicas": 3.0}}); got != 4 {
		t.Errorf("servingGPUs of read-back meta = %d; want 4", got)
	}
	if got := DescribeEngine(d); got != "simulated pools "+d["pools"].(string) {
		t.Errorf("DescribeEngine = %q; want the pools", got)
	}
	// --replicas N: no pools, the meta as before.
	cfg.Cluster.Pools = nil
	if d, err = describeVirtual(cfg); err != nil || d["pools"] != nil || d["gpus"] != nil {
		t.Errorf("describeVirtual without pools = %v, %v; want no pools, no gpus", d, err)
	}
}
