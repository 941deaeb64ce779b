package cli

import (
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// clusterFileUsage is --cluster's help.
const clusterFileUsage = "a cluster file (YAML, see docs/simulator.md): pools of replicas, each with its own engine settings (gpu, model, tensor_parallel_size, max_num_seqs, ...), " +
	"behind the file's router; the engine flags given are every pool's defaults (instead of --replicas, --data-parallel-size, --router)"

// fileConfig is the cluster of --cluster's file, its pools' engine
// settings over engine (the engine flags as given). The flags that copy
// the engine or route over the copies say what the file does: giving one
// with it is refused, so that no flag is silently ignored.
func (c *clusterFlags) fileConfig(engine sim.Config) (*cluster.Config, error) {
	for _, f := range []struct {
		name, key string
	}{
		{"replicas", "a pool's replicas:"},
		{"data-parallel-size", "a pool's replicas: and router: dp-balance"},
		{"router", "router:"},
		{"enable-expert-parallel", "enable_expert_parallel: true"},
	} {
		if c.fs != nil && c.fs.Changed(f.name) {
			return nil, usagef("--%s and --cluster: the cluster file says it (%s); give one", f.name, f.key)
		}
	}
	cfg, err := cluster.ParseFile(c.file, engine)
	if err != nil {
		// The error names the file, the line, the pool and the key.
		return nil, usageError{err}
	}
	return &cfg, nil
}

// onlySim refuses the cluster flags where the run is not a virtual-time
// one (sweep without --sim): only the virtual-time driver runs a cluster.
func (c *clusterFlags) onlySim() error {
	if c.fs == nil {
		return nil
	}
	for _, f := range []string{"cluster", "replicas", "router", "data-parallel-size", "enable-expert-parallel"} {
		if c.fs.Changed(f) {
			return usagef("--%s simulates a cluster in virtual time: give --sim", f)
		}
	}
	return nil
}
