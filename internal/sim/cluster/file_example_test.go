package cluster_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// A cluster file of two pools over the command line's engine: the pools
// set what differs, the rest is base's.
func ExampleParse() {
	base := sim.DefaultConfig()
	base.MaxNumSeqs = 64 // --max-num-seqs 64
	cfg, err := cluster.Parse([]byte(`
router: least-outstanding
pools:
  - name: fast
    gpu: h100-sxm
  - name: slow
    replicas: 2
    gpu: l4
`), "pools.yaml", base)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Router)
	for i, rc := range cfg.Replicas {
		fmt.Printf("replica %d: pool %s, %s on %s, max_num_seqs %d\n", i+1, cfg.Pools[i], rc.Model, rc.GPU, rc.MaxNumSeqs)
	}
	_, err = cluster.Parse([]byte("pools:\n  - name: big\n    replicas: 0\n"), "pools.yaml", base)
	fmt.Println(err)
	// Output:
	// least-outstanding
	// replica 1: pool fast, llama-3.1-8b on h100-sxm, max_num_seqs 64
	// replica 2: pool slow, llama-3.1-8b on l4, max_num_seqs 64
	// replica 3: pool slow, llama-3.1-8b on l4, max_num_seqs 64
	// pools.yaml:3: pool "big": replicas: 0: want ≥ 1
}
