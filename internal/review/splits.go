package review

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// SplitAttainment is the share of requests that must meet the SLO for a
// rate to count: the one default bench and sweep judge by
// (sweep.DefaultAttainment, 99 %), not DistServe's 90 %, so a split's
// verdict agrees with a sweep of the same fleet. SplitSearchSteps is the
// bisection's steps below the rate given (its resolution: the rate /
// 2^steps).
const (
	SplitAttainment  = sweep.DefaultAttainment
	SplitSearchSteps = 6
)

// CompareSplits runs cfg's fleet — cfg.Cluster, copies of one engine
// behind a router, colocated — and then the same replicas split each way
// of splits into prefill and decode pools (over the GPU's own link), each
// at cfg.Load's request rate top and then, unless the SLO (cfg.Stats.SLO)
// is met there for SplitAttainment of the requests, by bisection between
// 0 and top for the highest rate that meets it: DistServe's goodput, here
// per GPU. The best split is the one with the highest such rate. cfg's
// runs should write no files (each is a whole run); only cfg.Cluster's
// Disagg and the level's rate vary.
func CompareSplits(ctx context.Context, cfg run.Config, splits []cluster.Split, top float64) (*report.Splits, error) {
	c := cfg.Cluster
	switch {
	case len(splits) == 0:
		return nil, configErr("Cluster.Disagg", "no split to compare")
	case c == nil || len(c.Replicas) == 0:
		return nil, configErr("Cluster", "the splits need the colocated fleet to split")
	case c.Disagg != nil || c.Gateway != nil || c.Autoscale != nil || c.ExpertParallel:
		return nil, configErr("Cluster", "the splits compare a plain fleet: no split, gateway, autoscaler or expert parallelism of its own")
	case cfg.Sessions != nil || cfg.Sweep != nil:
		return nil, configErr("Sessions", "the splits compare one level of independent requests")
	case cfg.Stats.SLO.IsZero():
		return nil, configErr("SLO", "the splits compare goodput: give an SLO")
	case !(top > 0) || math.IsInf(top, 0):
		return nil, configErr("RequestRate", "the splits search request rates up to a finite one (it is %g)", top)
	}
	n := len(c.Replicas)
	for _, s := range splits {
		if s.Prefill < 1 || s.Decode < 1 || s.Prefill+s.Decode != n {
			return nil, configErr("Cluster.Disagg", "split %s: want pools ≥ 1 of the fleet's %d replicas", s, n)
		}
	}
	tp := max(cfg.Engine.TP, 1)
	gpus := float64(n * tp)
	out := &report.Splits{Replicas: n, TP: tp, SLO: cfg.Stats.SLO.String(), Attainment: SplitAttainment,
		Rate: top, SearchedTo: top / (1 << SplitSearchSteps), Fleets: make([]report.SplitFleet, 0, len(splits)+1), Best: -1}
	for i := -1; i < len(splits); i++ {
		fleet, name := *c, "colocated"
		if i >= 0 {
			fleet.Disagg, name = &cluster.Disaggregation{Prefill: splits[i].Prefill}, splits[i].String()
		}
		f, err := searchFleet(ctx, cfg, &fleet, top)
		if err != nil {
			return nil, err
		}
		f.Name, f.PerGPU = name, f.MaxRate/gpus
		out.Fleets = append(out.Fleets, f)
		if i >= 0 && (out.Best < 0 || f.MaxRate > out.Fleets[out.Best].MaxRate) {
			out.Best = len(out.Fleets) - 1
		}
	}
	b, col := out.Fleets[out.Best], out.Fleets[0]
	switch {
	case b.AtTop && col.AtTop:
		out.Verdict = report.SplitUntold
	case b.MaxRate < col.MaxRate:
		out.Verdict = report.SplitLoses
	case b.MaxRate == col.MaxRate:
		out.Verdict = report.SplitTies
	}
	return out, nil
}

// searchFleet runs cfg on fleet at top and, short of SplitAttainment
// there, bisects below it for the highest rate that reaches it.
func searchFleet(ctx context.Context, cfg run.Config, fleet *cluster.Config, top float64) (report.SplitFleet, error) {
	cfg.Cluster = fleet
	// at runs the fleet at rate: the share meeting the SLO, the goodput
	// and the KV transfer's P50 (-1 without a split).
	at := func(rate float64) (attain, goodput, transfer float64, err error) {
		cfg.Load.RequestRate = rate
		res, err := run.Run(ctx, cfg)
		if err != nil {
			return 0, 0, 0, err
		}
		if len(res.Levels) == 0 {
			return 0, 0, 0, fmt.Errorf("the run at %g req/s finished no level", rate)
		}
		l := res.Levels[0]
		transfer = -1
		if reps := l.Replicas(); reps != nil && reps.Transfer != nil {
			transfer = reps.Transfer.P50
		}
		return l.Summary.SLO.Attainment, l.Summary.SLO.Goodput, transfer, nil
	}
	var f report.SplitFleet
	var err error
	if f.Attainment, f.Goodput, f.TransferP50, err = at(top); err != nil {
		return f, err
	}
	if f.Attainment >= SplitAttainment {
		f.MaxRate, f.AtTop = top, true
		return f, nil
	}
	lo, hi := 0.0, top
	for range SplitSearchSteps {
		mid := (lo + hi) / 2
		a, _, _, err := at(mid)
		if err != nil {
			return f, err
		}
		if a >= SplitAttainment {
			lo = mid
		} else {
			hi = mid
		}
	}
	f.MaxRate = lo
	return f, nil
}

// SaveSplits writes the comparison's JSON (report.SplitsJSON) into out's
// directory, named out.ResultName or pd-ratios-DATE.json at now, and
// returns the path written.
func SaveSplits(out *run.Output, res *report.Splits, now time.Time) (string, error) {
	b, err := json.MarshalIndent(report.SplitsJSON(res), "", "  ")
	if err != nil {
		return "", err
	}
	name := cmp.Or(out.ResultName, "pd-ratios-"+now.Format("20060102-150405")+".json")
	return out.WriteResult(filepath.Join(out.Dir, name), append(b, '\n'))
}

// SplitsOf checks what a comparison of splits (cluster.Spec's Ratios)
// runs on and returns the rate it searches up to: a finite RequestRate, a
// Goodput SLO (so, the summary), no HTML report or records file — each
// split's runs are quiet and write nothing, so out is made so — and no
// sessions (dataset). save is whether the comparison itself is saved.
func SplitsOf(load runspec.LoadSpec, so stats.Options, out *runspec.OutputSpec, dataset string) (top float64, save bool, err error) {
	ratios := setting.Name("Ratios")
	top, err = load.Rate()
	switch {
	case err != nil:
		return 0, false, err
	case top == 0:
		return 0, false, setting.Errorf("", "", "%v searches request rates up to %v: give a finite rate (it is %s)", ratios, setting.Name("RequestRate"), load.RequestRate)
	case so.SLO.IsZero():
		return 0, false, setting.Errorf("", "", "%v compares goodput per GPU: give %v (e.g. ttft:1000 tpot:50)", ratios, setting.Name("Goodput"))
	case out.HTML != "":
		return 0, false, setting.Errorf("HTML", "", "%v writes no HTML report (the result saves the comparison as JSON)", ratios)
	case out.Records != "" && out.Records != "none":
		return 0, false, setting.Errorf("Records", "", "%v runs many fleets and keeps no records (run one split)", ratios)
	case runspec.IsSessionDataset(dataset):
		return 0, false, setting.Errorf("", "", "%v searches the request rate of independent requests: sessions (%v %s) keep their own", ratios, setting.Name("DatasetName"), dataset)
	}
	save = out.SaveResult
	out.Records, out.SaveResult, out.HTML = "none", false, ""
	return top, save, nil
}

// configErr is a refusal of cfg's field (its path in run.Config).
func configErr(field, format string, args ...any) error {
	return &run.ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
}
