package sweep

import (
	"context"
	"fmt"
	"math"

	"github.com/goodput/goodput/internal/runlog"
)

// searchSteps is how many halvings the default precision allows:
// (Hi−Lo)/32, i.e. about five bisection runs after the two bounds.
const searchSteps = 32

// defaultMaxRuns bounds a search whatever the precision.
const defaultMaxRuns = 40

// SearchConfig says what to bisect.
type SearchConfig struct {
	// Axis is the dimension searched.
	Axis Axis
	// Template gives the other load settings of every run (e.g. the rate
	// when searching concurrency).
	Template runlog.Level
	// Lo and Hi bracket the search: Lo is expected to meet the criteria and
	// Hi to miss them. Both must be positive, Lo < Hi.
	Lo, Hi float64
	// Precision stops the bisection once Hi − Lo ≤ Precision, in the axis'
	// unit; 0 means (Hi − Lo)/32. A concurrency search never goes below 1.
	Precision float64
	// Criteria define "within SLO".
	Criteria Criteria
	// MaxRuns bounds the runs (0 means 40).
	MaxRuns int
	// FirstIndex is the level index of the first run; runs are numbered
	// from it.
	FirstIndex int
	// OnPoint, if set, receives each run as it finishes.
	OnPoint func(p Point, meets bool, why string)
}

// SearchResult is the highest load found within SLO.
type SearchResult struct {
	// Found is false when even Lo misses the criteria.
	Found bool
	// Capacity is the highest load run that met the criteria (Lo's final
	// value), in the axis' unit; 0 when not Found.
	Capacity float64
	// Lo and Hi are the final bracket: Lo met the criteria, Hi did not
	// (Hi is the initial upper bound if even that met them).
	Lo, Hi float64
	// Precision is the precision used.
	Precision float64
	// Converged is true when the bracket narrowed to Precision.
	Converged bool
	// Note explains an open-ended result (Lo fails, Hi passes, run cap).
	Note string
	// Points are the runs in order, with whether each met the criteria.
	Points []Point
	Meets  []bool
}

// Search bisects on cfg.Axis for the highest load meeting cfg.Criteria,
// assuming that meeting them is monotone in load (more load never helps).
// It runs Lo, then Hi, then midpoints, keeping Lo passing and Hi failing,
// until Hi − Lo ≤ Precision. If Lo fails there is no capacity in range; if
// Hi passes, Capacity is Hi and Note says to raise it. The capacity found
// lies within Precision of the true boundary of a monotone curve.
func Search(ctx context.Context, r Runner, cfg SearchConfig) (SearchResult, error) {
	if !(cfg.Lo > 0) || !(cfg.Hi > cfg.Lo) || math.IsInf(cfg.Hi, 0) {
		return SearchResult{}, fmt.Errorf("search bounds %g and %g: want 0 < low < high", cfg.Lo, cfg.Hi)
	}
	prec := cfg.Precision
	if prec <= 0 {
		prec = (cfg.Hi - cfg.Lo) / searchSteps
	}
	if cfg.Axis == AxisConcurrency {
		prec = max(prec, 1)
	}
	maxRuns := cfg.MaxRuns
	if maxRuns <= 0 {
		maxRuns = defaultMaxRuns
	}
	res := SearchResult{Lo: cfg.Lo, Hi: cfg.Hi, Precision: prec}
	run := func(x float64) (bool, error) {
		l := cfg.Axis.At(cfg.Template, x)
		idx := cfg.FirstIndex + len(res.Points)
		p, err := r.RunLevel(ctx, idx, l)
		if err != nil {
			return false, err
		}
		p.Index, p.Level = idx, l
		ok, why := cfg.Criteria.Meets(p)
		res.Points = append(res.Points, p)
		res.Meets = append(res.Meets, ok)
		if cfg.OnPoint != nil {
			cfg.OnPoint(p, ok, why)
		}
		return ok, nil
	}
	ok, err := run(cfg.Lo)
	if err != nil {
		return res, err
	}
	if !ok {
		res.Note = fmt.Sprintf("even the lowest load %g %s misses the SLO: lower the lowest level", cfg.Lo, cfg.Axis.Unit())
		return res, nil
	}
	res.Found, res.Capacity = true, cfg.Lo
	if ok, err = run(cfg.Hi); err != nil {
		return res, err
	}
	if ok {
		res.Capacity, res.Lo = cfg.Hi, cfg.Hi
		res.Note = fmt.Sprintf("the highest load %g %s meets the SLO: the capacity is at least that; raise the upper bound", cfg.Hi, cfg.Axis.Unit())
		return res, nil
	}
	lo, hi := cfg.Lo, cfg.Hi
	for hi-lo > prec {
		if len(res.Points) >= maxRuns {
			res.Note = fmt.Sprintf("stopped after %d runs before reaching precision %g", maxRuns, prec)
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		mid := (lo + hi) / 2
		if cfg.Axis == AxisConcurrency {
			mid = math.Floor(mid)
			if mid <= lo {
				break
			}
		}
		ok, err := run(mid)
		if err != nil {
			return res, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	res.Lo, res.Hi, res.Capacity = lo, hi, lo
	res.Converged = hi-lo <= prec || (cfg.Axis == AxisConcurrency && hi-lo <= 1)
	return res, nil
}
