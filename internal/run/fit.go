package run

import (
	"errors"
	"fmt"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/costmodel"
	"github.com/goodput/goodput/internal/sim/fit"
)

// ErrNoFitData says the records hold no successful streamed request to
// fit a GPU profile to.
var ErrNoFitData = errors.New("no successful streamed request to fit to")

// ErrNothingIdentified says the records pinned down none of the profile's
// figures, so there is no fitted profile to write.
var ErrNothingIdentified = errors.New("nothing to fit")

// FitSetup is the deployment engine describes, resolved as the simulator
// would (its defaults for the step budget and the CUDA-graph size), so a
// fit models the engine the records came from. A setting the engine
// refuses, its model or GPU included, is a *sim.ConfigError.
func FitSetup(engine sim.Config) (fit.Setup, error) {
	eng, err := sim.New(engine)
	if err != nil {
		return fit.Setup{}, err
	}
	m, err := costmodel.LookupModel(engine.Model)
	if err != nil {
		return fit.Setup{}, &sim.ConfigError{Field: "Model", Err: err}
	}
	g, err := costmodel.LookupGPU(engine.GPU)
	if err != nil {
		return fit.Setup{}, &sim.ConfigError{Field: "GPU", Err: err}
	}
	d := eng.Describe()
	seqs, budget := d.MaxNumSeqs, d.MaxNumBatchedTokens
	graph := costmodel.GraphCaptureTokens(seqs)
	if g.Efficiency != nil && g.Efficiency.GraphMaxTokens > 0 {
		graph = g.Efficiency.GraphMaxTokens
	}
	return fit.Setup{Model: m, GPU: g, TP: max(engine.TP, 1), DType: engine.DType, KVCacheDType: engine.KVCacheDType,
		MaxBatchedTokens: budget, GraphMaxTokens: graph}, nil
}

// FitFiles fits setup's GPU to what the records files observed, each file
// on its own clock; network is the share of a client-measured TTFT spent
// on the network, taken off where the server reported no timing. Records
// with nothing to fit to give an error wrapping ErrNoFitData.
func FitFiles(setup fit.Setup, files []runlog.RecordsFile, network time.Duration) (*fit.Result, error) {
	var obs []fit.Observation
	n := 0
	for _, f := range files {
		n += len(f.Records)
		got, err := fit.Observe(f.Records, fit.ObserveOptions{NetworkNs: network.Nanoseconds()})
		if err != nil {
			continue
		}
		obs = append(obs, got...)
	}
	if len(obs) == 0 {
		return nil, fmt.Errorf("%d records in %d file(s) hold %w", n, len(files), ErrNoFitData)
	}
	return fit.Fit(setup, obs)
}
