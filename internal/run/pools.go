package run

import (
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// A cluster file's pools in the run's meta: Simulated.Pools lists them in
// replica order, each with its name, replicas, model, GPU and tensor
// parallelism, so that a report of the records names each replica's pool
// as the run did.

// describePools is the meta's pools of c's replicas, pools[i] naming
// replica i's pool (consecutive replicas of one name are one pool), and
// the GPUs of all (Σ tensor parallelism).
func describePools(c cluster.Fleet, pools []string) ([]runlog.EnginePool, int) {
	name := func(i int) string {
		if i < len(pools) {
			return pools[i]
		}
		return ""
	}
	var out []runlog.EnginePool
	gpus := 0
	for i, j := 0, 0; i < c.Len(); i = j {
		for j = i + 1; j < c.Len() && name(j) == name(i); j++ {
		}
		d := c.Describe(i)
		tp := max(d.TensorParallelSize, 1)
		gpus += (j - i) * tp
		out = append(out, runlog.EnginePool{Name: name(i), Replicas: j - i, Model: d.Model, GPU: d.GPU, TensorParallelSize: tp})
	}
	return out, gpus
}

// metaPools is the pools of an engine description, as a run made them or
// as read back from a records file, a count out of bounds (a doctored
// file) read as 0; nil for none.
func metaPools(d *runlog.Engine) []runlog.EnginePool {
	if len(d.Pools) == 0 {
		return nil
	}
	count := func(n int) int {
		if n >= 0 && n <= 1<<20 {
			return n
		}
		return 0
	}
	out := make([]runlog.EnginePool, len(d.Pools))
	for i, p := range d.Pools {
		p.Replicas, p.TensorParallelSize = count(p.Replicas), count(p.TensorParallelSize)
		out[i] = p
	}
	return out
}

// poolsText is the pools in a line: "fast: 1 × llama-3.1-8b on h100-sxm
// tp=1, slow: 2 × ..."; "" for none.
func poolsText(pools []runlog.EnginePool) string {
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = fmt.Sprintf("%s: %d × %s on %s tp=%d", p.Name, p.Replicas, p.Model, p.GPU, p.TensorParallelSize)
	}
	return strings.Join(parts, ", ")
}

// replicaPools is each replica's pool name, replica i's at i; nil for no
// pools. A meta naming more replicas than a records file can is cut at
// the bound (a report of a doctored file must not allocate without end).
func replicaPools(pools []runlog.EnginePool) []string {
	var out []string
	for _, p := range pools {
		for range p.Replicas {
			if len(out) >= 1<<16 {
				return out
			}
			out = append(out, p.Name)
		}
	}
	return out
}
