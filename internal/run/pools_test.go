package run

import (
	"encoding/json"
	"slices"
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
	const text = "big: 1 × llama-3.1-8b on h100-sxm tp=2, small: 2 × llama-3.1-8b on l4 tp=1"
	// As read back from a records file.
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back runlog.Engine
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	for _, m := range []runlog.Engine{d, back} {
		if got := poolsText(metaPools(&m)); got != text {
			t.Errorf("pools = %q; want %q", got, text)
		}
		if got := replicaPools(metaPools(&m)); !slices.Equal(got, []string{"big", "small", "small"}) {
			t.Errorf("replica pools = %q; want big, small, small", got)
		}
		if got := servingGPUs(&runlog.Meta{Simulated: m}); got != 4 {
			t.Errorf("servingGPUs = %d; want 4", got)
		}
		if got := DescribeEngine(m); got != "simulated pools "+text {
			t.Errorf("DescribeEngine = %q; want the pools", got)
		}
	}
	for _, js := range []string{`{"pools":"not a list"}`, `{"pools":[1]}`} {
		var e runlog.Engine
		if err := json.Unmarshal([]byte(js), &e); err != nil || metaPools(&e) != nil {
			t.Errorf("metaPools of a shape not understood (%s) is not nil (err %v)", js, err)
		}
	}
	// --replicas N: no pools, the meta as before.
	cfg.Cluster.Pools = nil
	if d, err = describeVirtual(cfg); err != nil || d.Pools != nil || d.GPUs != 0 {
		t.Errorf("describeVirtual without pools = %v, %v; want no pools, no gpus", d, err)
	}
}
