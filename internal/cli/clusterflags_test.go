package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
)

// TestDataParallelIsDPBalance: --data-parallel-size N without expert
// parallelism is exactly --replicas N --router dp-balance.
func TestDataParallelIsDPBalance(t *testing.T) {
	engine := sim.DefaultConfig()
	engine.Model = "qwen3-30b-a3b"
	dp := clusterFlags{replicas: 1, dataParallel: 3}
	rep := clusterFlags{replicas: 3, router: "dp-balance", dataParallel: 1}
	got, err := dp.config(engine)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rep.config(engine)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--data-parallel-size 3 config differs from --replicas 3 --router dp-balance (-want +got):\n%s", diff)
	}
	ep := clusterFlags{replicas: 1, dataParallel: 2, expertParallel: true}
	if cfg, err := ep.config(engine); err != nil || !cfg.ExpertParallel || len(cfg.Replicas) != 2 {
		t.Errorf("--data-parallel-size 2 --enable-expert-parallel: config = %+v, %v; want 2 replicas, ExpertParallel", cfg, err)
	}
}
