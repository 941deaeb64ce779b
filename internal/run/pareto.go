package run

import (
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// paretoPoints places each level of a Pareto sweep by interactivity (a
// request's output tokens/s, 1000 / median TPOT) and output per GPU, and
// marks the frontier among the levels whose SLO attainment reaches the
// sweep's target. gpus is the GPU count (the run's, else its engine's
// tensor parallelism, else 1).
func paretoPoints(levels []LevelResult, meta *runlog.Meta, attainment float64) ([]report.ParetoPoint, int) {
	gpus := 1
	if meta != nil && meta.Analysis != nil && meta.Analysis.NumGPUs > 0 {
		gpus = meta.Analysis.NumGPUs
	} else if meta != nil {
		if tp, ok := meta.Simulated["tensor_parallel_size"].(float64); ok && tp >= 1 {
			gpus = int(tp)
		} else if tp, ok := meta.Simulated["tensor_parallel_size"].(int); ok && tp >= 1 {
			gpus = tp
		}
	}
	ps := make([]report.ParetoPoint, len(levels))
	for i, l := range levels {
		s := &l.Summary
		p := report.ParetoPoint{Index: l.Index, Concurrency: l.Level.MaxConcurrency, InputLen: l.Level.InputLen, OutputLen: l.Level.OutputLen,
			ThroughputPerGPU: s.OutputThroughput / float64(gpus), SLOSet: s.SLO.Set}
		if tpot, ok := s.MetricP(stats.MetricTPOT, 50); ok && tpot > 0 {
			p.Interactivity, p.TPOTP50Ms = 1000/tpot, tpot
		}
		if v, ok := s.MetricP(stats.MetricTTFT, 99); ok {
			p.TTFTP99Ms = v
		}
		good := s.RequestThroughput
		p.WithinSLO = s.Completed > 0
		if s.SLO.Set {
			good, p.Attainment = s.SLO.Goodput, s.SLO.Attainment
			p.WithinSLO = s.SLO.Attainment >= attainment
		}
		p.GoodputPerGPU = good / float64(gpus)
		ps[i] = p
	}
	report.ParetoFrontier(ps)
	return ps, gpus
}
