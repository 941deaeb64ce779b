package breakdown

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// ParetoPoint is one level of a Pareto sweep: a concurrency and a length
// pair, placed by what a user of it feels (interactivity: output tokens/s
// of one request, 1000 / median TPOT) against what a GPU of it yields
// (output tokens/s and goodput per GPU), as capacity planners compare
// configurations.
type ParetoPoint struct {
	Index                int
	Concurrency          int
	InputLen, OutputLen  int
	Interactivity        float64 // tokens/s per request
	ThroughputPerGPU     float64 // output tokens/s per GPU
	GoodputPerGPU        float64 // requests/s meeting the SLO, per GPU
	Attainment           float64 // share of requests meeting the SLO
	WithinSLO            bool    // attainment at least the sweep's target
	Frontier             bool    // no other point within SLO beats it on both axes
	TTFTP99Ms, TPOTP50Ms float64
	SLOSet               bool
}

// ParetoFrontier marks, for each length pair (one workload), the points
// within SLO that no other point of the pair within SLO dominates (at
// least as interactive and as much goodput per GPU, and better in one);
// points outside the SLO are never on it. Pairs are not compared: a long
// prompt is another workload, not a worse configuration.
func ParetoFrontier(ps []ParetoPoint) {
	for i := range ps {
		ps[i].Frontier = false
		if !ps[i].WithinSLO {
			continue
		}
		dominated := false
		for j := range ps {
			if i == j || !ps[j].WithinSLO || ps[j].InputLen != ps[i].InputLen || ps[j].OutputLen != ps[i].OutputLen {
				continue
			}
			a, b := ps[j], ps[i]
			if a.Interactivity >= b.Interactivity && a.GoodputPerGPU >= b.GoodputPerGPU &&
				(a.Interactivity > b.Interactivity || a.GoodputPerGPU > b.GoodputPerGPU) {
				dominated = true
				break
			}
		}
		ps[i].Frontier = !dominated
	}
}

// NewParetoPoint places level index, run at lv with summary s, over gpus
// GPUs (at least 1): within SLO when its attainment reaches attainment
// (with an SLO; else when anything completed). Its Frontier is left to
// ParetoFrontier.
func NewParetoPoint(index int, lv runlog.Level, s *stats.Summary, gpus int, attainment float64) ParetoPoint {
	p := ParetoPoint{Index: index, Concurrency: lv.MaxConcurrency, InputLen: lv.InputLen, OutputLen: lv.OutputLen,
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
	return p
}
