package run

import (
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/sim/cluster"
)

// A cluster file's pools in the run's meta: Simulated["pools"] lists
// them in replica order, each {"name", "replicas", "model", "gpu",
// "tensor_parallel_size"}, so that a report of the records names each
// replica's pool as the run did.

// poolDesc is one pool of the meta.
type poolDesc struct {
	name, model, gpu string
	replicas, tp     int
}

// describePools is the meta's "pools" of c's replicas, pools[i] naming
// replica i's pool (consecutive replicas of one name are one pool), and
// the GPUs of all (Σ tensor parallelism).
func describePools(c cluster.Fleet, pools []string) ([]map[string]any, int) {
	name := func(i int) string {
		if i < len(pools) {
			return pools[i]
		}
		return ""
	}
	var out []map[string]any
	gpus := 0
	for i, j := 0, 0; i < c.Len(); i = j {
		for j = i + 1; j < c.Len() && name(j) == name(i); j++ {
		}
		d := c.Describe(i)
		tp, _ := d["tensor_parallel_size"].(int)
		tp = max(tp, 1)
		gpus += (j - i) * tp
		out = append(out, map[string]any{"name": name(i), "replicas": j - i, "model": d["model"], "gpu": d["gpu"], "tensor_parallel_size": tp})
	}
	return out, gpus
}

// metaPools reads the pools of an engine description: as a run made them
// or as read back from a records file (JSON's []any and float64); nil for
// none or a shape not understood.
func metaPools(d map[string]any) []poolDesc {
	var list []map[string]any
	switch v := d["pools"].(type) {
	case []map[string]any:
		list = v
	case []any:
		for _, x := range v {
			m, ok := x.(map[string]any)
			if !ok {
				return nil
			}
			list = append(list, m)
		}
	default:
		return nil
	}
	count := func(v any) int {
		switch n := v.(type) {
		case int:
			return n
		case float64:
			if n >= 0 && n <= 1<<20 {
				return int(n)
			}
		}
		return 0
	}
	out := make([]poolDesc, len(list))
	for i, m := range list {
		out[i] = poolDesc{replicas: count(m["replicas"]), tp: count(m["tensor_parallel_size"])}
		out[i].name, _ = m["name"].(string)
		out[i].model, _ = m["model"].(string)
		out[i].gpu, _ = m["gpu"].(string)
	}
	return out
}

// poolsText is the pools in a line: "fast: 1 × llama-3.1-8b on h100-sxm
// tp=1, slow: 2 × ..."; "" for none.
func poolsText(pools []poolDesc) string {
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = fmt.Sprintf("%s: %d × %s on %s tp=%d", p.name, p.replicas, p.model, p.gpu, p.tp)
	}
	return strings.Join(parts, ", ")
}

// replicaPools is each replica's pool name, replica i's at i; nil for no
// pools. A meta naming more replicas than a records file can is cut at
// the bound (a report of a doctored file must not allocate without end).
func replicaPools(pools []poolDesc) []string {
	var out []string
	for _, p := range pools {
		for range p.replicas {
			if len(out) >= 1<<16 {
				return out
			}
			out = append(out, p.name)
		}
	}
	return out
}
