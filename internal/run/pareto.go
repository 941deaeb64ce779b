package run

import (
	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/workload"
)

// paretoPoints places each level of a Pareto sweep by interactivity (a
// request's output tokens/s, 1000 / median TPOT) and output per GPU, and
// marks the frontier among the levels whose SLO attainment reaches the
// sweep's target. gpus is the GPU count (the run's, else its engine's
// tensor parallelism, else 1).
func paretoPoints(levels []LevelResult, meta *runlog.Meta, attainment float64) ([]breakdown.ParetoPoint, int) {
	gpus := servingGPUs(meta)
	ps := make([]breakdown.ParetoPoint, len(levels))
	for i := range levels {
		l := &levels[i]
		ps[i] = breakdown.NewParetoPoint(l.Index, l.Level, &l.Summary, gpus, attainment)
	}
	breakdown.ParetoFrontier(ps)
	return ps, gpus
}

// servingGPUs is the GPUs that served the run: the count stored with it
// (--num-gpus), else the simulated engine's tensor parallelism, else 1.
func servingGPUs(meta *runlog.Meta) int {
	if meta == nil {
		return 1
	}
	if a := meta.Analysis; a != nil && a.NumGPUs > 0 {
		return a.NumGPUs
	}
	// A cluster of pools counts its GPUs over its pools' own.
	if n := meta.Simulated.GPUs; n != 0 {
		return atLeastOne(n)
	}
	// A simulated cluster's replicas each have their tensor parallelism.
	return atLeastOne(meta.Simulated.TensorParallelSize) * atLeastOne(meta.Simulated.Replicas)
}

// atLeastOne is a count of the simulated engine's description, 1 when it
// gives none.
func atLeastOne(n int) int { return max(n, 1) }

// lengthDatasets builds, once each, the datasets of levels with request
// lengths of their own (a Pareto sweep), by (input, output).
type lengthDatasets map[[2]int]workload.Dataset

// dataset is level lv's requests: def, or for a level with lengths of its
// own random prompts of those lengths from the run's options wo (its seed
// and, over HTTP, the calibration its prompts got).
func (b *lengthDatasets) dataset(cfg *Config, wo workload.Options, lv runlog.Level, def workload.Dataset) (workload.Dataset, error) {
	if lv.InputLen <= 0 && lv.OutputLen <= 0 {
		return def, nil
	}
	key := [2]int{lv.InputLen, lv.OutputLen}
	if ds, ok := (*b)[key]; ok {
		return ds, nil
	}
	wo.DatasetName, wo.DatasetPath, wo.InputLenDist, wo.OutputLenDist = "random", "", "", ""
	if lv.InputLen > 0 {
		wo.RandomInputLen = lv.InputLen
	}
	if lv.OutputLen > 0 {
		wo.RandomOutputLen = lv.OutputLen
	}
	ds, err := buildDataset(cfg, wo)
	if err != nil {
		return nil, err
	}
	if *b == nil {
		*b = lengthDatasets{}
	}
	(*b)[key] = ds
	return ds, nil
}
