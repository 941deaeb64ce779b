package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
)

// Spec is a sweep as a user writes it: the levels (Concurrency, or
// TargetRate × Levels, or the load's request rates, or none for an
// automatic sweep) and how to judge them. Errors name its fields and
// the load's RequestRate and MaxConcurrency.
type Spec struct {
	// Concurrency lists the concurrencies to sweep (ParseList).
	Concurrency string
	// TargetRate is the rate, requests/s, that Levels' multiples scale
	// (default DefaultMultiples).
	TargetRate float64
	Levels     string
	// Pareto crosses the concurrencies with input:output length pairs
	// ("1024:128,4096:512") and judges their Pareto frontier.
	Pareto string
	// KneeK, SLOAttainment, MaxMedianQueueMs and MaxErrorRate judge the
	// curve (KneeConfig.K, Criteria, Saturation); SaturationStop ends it at
	// a saturated level.
	KneeK, SLOAttainment, MaxMedianQueueMs, MaxErrorRate float64
	SaturationStop                                       bool
	// Search bisects for the highest load within SLO, to Precision.
	Search    bool
	Precision float64
}

// DefaultSLO is the SLO a sweep ranks goodput by when none is given: a
// goodput peak needs one.
const DefaultSLO = "ttft:2000 tpot:50"

// DefaultMultiples are the multiples of TargetRate swept when Levels is
// not given.
const DefaultMultiples = "0.25x,0.5x,0.75x,1x,1.25x,1.5x,2x"

// Plan is a checked Spec: the levels to run and how to judge them.
type Plan struct {
	Axis   Axis
	Levels []runlog.Level
	// Auto: no levels were given; a capacity probe measures what they are
	// fractions of.
	Auto       bool
	KneeK      float64
	Criteria   Criteria
	Saturation Saturation
	Search     bool
	Precision  float64
	Pareto     bool
}

// Plan places base (the load every level starts from) at the levels the
// spec names; rates is the load's RequestRate (a list of rates; with
// Concurrency one rate or inf). given tells whether the load's
// MaxConcurrency was given, which a concurrency sweep replaces.
func (s Spec) Plan(base runlog.Level, rates string, given setting.Given) (Plan, error) {
	p, err := s.levels(base, rates, given)
	if err != nil {
		return Plan{}, err
	}
	switch {
	case !(s.SLOAttainment > 0 && s.SLOAttainment <= 1):
		return Plan{}, setting.Errorf("SLOAttainment", fmt.Sprint(s.SLOAttainment), "want a share in (0, 1]")
	case !(s.KneeK > 0):
		return Plan{}, setting.Errorf("KneeK", fmt.Sprint(s.KneeK), "want > 0")
	case s.Precision < 0 || s.MaxMedianQueueMs < 0:
		return Plan{}, setting.Errorf("", "", "%v and %v: want ≥ 0", setting.Name("Precision"), setting.Name("MaxMedianQueueMs"))
	case !(s.MaxErrorRate > 0 && s.MaxErrorRate <= 1):
		return Plan{}, setting.Errorf("MaxErrorRate", fmt.Sprint(s.MaxErrorRate), "want a share in (0, 1]")
	}
	p.KneeK, p.Search, p.Precision, p.Pareto = s.KneeK, s.Search, s.Precision, s.Pareto != ""
	p.Criteria = Criteria{Attainment: s.SLOAttainment, MaxMedianQueueMs: s.MaxMedianQueueMs}
	p.Saturation = Saturation{MaxErrorRate: s.MaxErrorRate, Off: !s.SaturationStop}
	if p.Pareto {
		switch {
		case s.Concurrency == "":
			return Plan{}, setting.Errorf("", "", "%v crosses %v levels with length pairs: give %v", setting.Name("Pareto"), setting.Name("Concurrency"), setting.Name("Concurrency"))
		case s.Search:
			return Plan{}, setting.Errorf("", "", "%v and %v: a frontier has no one load to bisect for; give one", setting.Name("Pareto"), setting.Name("Search"))
		}
		p.Saturation.Off = true // a saturated pair must not end the other pairs' levels
	}
	return p, nil
}

// levels reads the level settings.
func (s Spec) levels(base runlog.Level, rates string, given setting.Given) (Plan, error) {
	rates = strings.TrimSpace(rates)
	rateSet := rates != "" && !strings.EqualFold(rates, "inf")
	switch {
	case s.Concurrency != "":
		if given.Has("MaxConcurrency") {
			return Plan{}, setting.Errorf("", "", "%v and %v: give one (%v is the swept list)", setting.Name("MaxConcurrency"), setting.Name("Concurrency"), setting.Name("Concurrency"))
		}
		cs, err := ParseList(s.Concurrency)
		if err != nil {
			return Plan{}, setting.Errorf("Concurrency", "", "%v", err)
		}
		for _, c := range cs {
			if c != float64(int(c)) || c > 1<<20 {
				return Plan{}, setting.Errorf("Concurrency", fmt.Sprint(c), "want whole numbers of requests")
			}
		}
		if s.TargetRate > 0 {
			return Plan{}, setting.Errorf("", "", "%v sweeps rates: not with %v", setting.Name("TargetRate"), setting.Name("Concurrency"))
		}
		r, err := strconv.ParseFloat(rates, 64)
		switch {
		case !rateSet:
			r = 0
		case err != nil || !(r > 0):
			return Plan{}, setting.Errorf("RequestRate", strconv.Quote(rates), "with %v give one rate (or inf)", setting.Name("Concurrency"))
		case math.IsInf(r, 1):
			r = 0
		}
		base.RequestRate = r
		levels := Levels(AxisConcurrency, cs, base)
		if s.Pareto != "" {
			if levels, err = paretoLevels(s.Pareto, levels); err != nil {
				return Plan{}, err
			}
		}
		return Plan{Axis: AxisConcurrency, Levels: levels}, nil
	case s.TargetRate > 0:
		if rateSet {
			return Plan{}, setting.Errorf("", "", "%v and %v: give one", setting.Name("TargetRate"), setting.Name("RequestRate"))
		}
		spec := s.Levels
		if spec == "" {
			spec = DefaultMultiples
		}
		ms, err := ParseMultiples(spec)
		if err != nil {
			return Plan{}, setting.Errorf("Levels", "", "%v", err)
		}
		for i := range ms {
			ms[i] *= s.TargetRate
		}
		return Plan{Axis: AxisRate, Levels: Levels(AxisRate, ms, base)}, nil
	case s.Levels != "":
		return Plan{}, setting.Errorf("", "", "%v needs %v", setting.Name("Levels"), setting.Name("TargetRate"))
	case rateSet:
		rs, err := ParseList(rates)
		if err != nil {
			return Plan{}, setting.Errorf("RequestRate", "", "%v", err)
		}
		return Plan{Axis: AxisRate, Levels: Levels(AxisRate, rs, base)}, nil
	}
	return Plan{Axis: AxisRate, Auto: true}, nil
}

// paretoLevels crosses the concurrency levels with the length pairs of
// spec, pair by pair.
func paretoLevels(spec string, levels []runlog.Level) ([]runlog.Level, error) {
	var out []runlog.Level
	for _, pair := range strings.Split(spec, ",") {
		in, outLen, ok := strings.Cut(strings.TrimSpace(pair), ":")
		i, err1 := strconv.Atoi(in)
		o, err2 := strconv.Atoi(outLen)
		if !ok || err1 != nil || err2 != nil || i < 1 || o < 1 || i > 1<<24 || o > 1<<24 {
			return nil, setting.Errorf("Pareto", strconv.Quote(pair), "want input:output token pairs, e.g. 1024:128,4096:512")
		}
		for _, l := range levels {
			l.InputLen, l.OutputLen = i, o
			l.Label = fmt.Sprintf("%s in=%d out=%d", l.Label, i, o)
			out = append(out, l)
		}
	}
	return out, nil
}
