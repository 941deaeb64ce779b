package sweep

import "fmt"

// Knee defaults.
const (
	// DefaultKneeK is how many times the low-load slope a segment's slope
	// must exceed to be the knee.
	DefaultKneeK = 3.0
	// DefaultKneeMinRise is how far above the lowest load's P99 TTFT the
	// knee's must be (0.5 = 50 % higher), so noise on a flat curve is no
	// knee.
	DefaultKneeMinRise = 0.5
	// kneeFloorFrac floors the low-load slope at this fraction of the
	// lowest point's latency per unit load, so a flat or falling start does
	// not make every later rise a knee.
	kneeFloorFrac = 0.05
)

// KneeConfig tunes FindKnee; zero fields take the defaults.
type KneeConfig struct {
	// K is the slope multiple (DefaultKneeK).
	K float64
	// MinRise is the relative rise over the lowest load's P99 TTFT the
	// knee needs (DefaultKneeMinRise).
	MinRise float64
}

func (c KneeConfig) norm() KneeConfig {
	if c.K <= 0 {
		c.K = DefaultKneeK
	}
	if c.MinRise <= 0 {
		c.MinRise = DefaultKneeMinRise
	}
	return c
}

// Method states how the knee is found, for output and docs.
func (c KneeConfig) Method() string {
	c = c.norm()
	return fmt.Sprintf("knee = first level whose P99 TTFT rises per unit load more than %g× the low-load slope (first two levels) and sits %g %% above the lowest level's",
		c.K, 100*c.MinRise)
}

// Knee is where P99 TTFT starts rising non-linearly with load.
type Knee struct {
	// Index is the knee's position in the loads given to FindKnee.
	Index int
	// Load is the knee's load (requests/s or concurrency).
	Load float64
	// P99TTFTMs is the knee's P99 TTFT, ms.
	P99TTFTMs float64
	// Slope is the P99 TTFT increase per unit load into the knee, ms per
	// unit load.
	Slope float64
	// BaseSlope is the low-load slope it was compared with (floored), ms
	// per unit load.
	BaseSlope float64
	// K is the multiple used.
	K float64
	// Range, when the levels' P99 TTFTs have intervals, is where the knee
	// could lie given them (KneeRange); nil without.
	Range *KneeRange
}

// KneeRange is the span of loads a knee could lie at given each level's
// P99 TTFT interval.
type KneeRange struct {
	// First is the lowest load at which some curve within the intervals
	// turns, Last the lowest at which every one has turned; Beyond says no
	// level makes every curve turn, so the knee could lie above the levels
	// (Last is then the highest load tested).
	First, Last float64
	Beyond      bool
}

// FindKneeRange bounds FindKnee's knee given each level's P99 TTFT
// interval [lo[i], hi[i]] (loads ascending and distinct): a level can be
// the knee when its conditions hold for the steepest curve within the
// intervals (its own P99 at hi, the level before at lo, the low-load slope
// at its least) and must be when they hold for the flattest; the knee is
// the first that qualifies, so it lies from the first level that can to
// the first that must. ok is false with fewer than three levels, an
// interval missing (lo > hi, or not a number), or no level that can.
func FindKneeRange(loads, lo, hi []float64, cfg KneeConfig) (r KneeRange, ok bool) {
	cfg = cfg.norm()
	n := min(len(loads), len(lo), len(hi))
	if n < 3 {
		return KneeRange{}, false
	}
	for i := range n {
		if !(lo[i] <= hi[i]) || (i > 0 && !(loads[i] > loads[i-1])) {
			return KneeRange{}, false
		}
	}
	// The low-load slope at its least and most: the first segment's, and
	// the floor, which scales with the lowest level's P99.
	d0 := loads[1] - loads[0]
	baseMin, baseMax := (lo[1]-hi[0])/d0, (hi[1]-lo[0])/d0
	if loads[0] > 0 {
		baseMin = max(baseMin, kneeFloorFrac*lo[0]/loads[0])
		baseMax = max(baseMax, kneeFloorFrac*hi[0]/loads[0])
	}
	first := -1
	for i := 2; i < n; i++ {
		dl := loads[i] - loads[i-1]
		can := (hi[i]-lo[i-1])/dl > cfg.K*baseMin && hi[i] > (1+cfg.MinRise)*lo[0]
		must := (lo[i]-hi[i-1])/dl > cfg.K*baseMax && lo[i] > (1+cfg.MinRise)*hi[0]
		if can && first < 0 {
			first = i
		}
		if must {
			if first < 0 {
				first = i
			}
			return KneeRange{First: loads[first], Last: loads[i]}, true
		}
	}
	if first < 0 {
		return KneeRange{}, false
	}
	return KneeRange{First: loads[first], Last: loads[n-1], Beyond: true}, true
}

// FindKnee finds the knee of a P99-TTFT-versus-load curve. loads must be
// ascending and distinct. The low-load slope b is that of the first segment,
// floored at 5 % of p99[0]/loads[0]; the knee is the first point i ≥ 2 whose
// segment slope (p99[i]−p99[i−1])/(loads[i]−loads[i−1]) exceeds K·b and
// whose p99[i] exceeds (1+MinRise)·p99[0]. ok is false, with why, when there
// are fewer than three points or no point qualifies; why then names the
// condition that failed (no segment steep enough, or the steep ones too
// close to the lowest level's latency).
func FindKnee(loads, p99 []float64, cfg KneeConfig) (k Knee, ok bool, why string) {
	cfg = cfg.norm()
	n := min(len(loads), len(p99))
	if n < 3 {
		return Knee{}, false, fmt.Sprintf("a knee needs at least 3 levels with TTFT figures, got %d", n)
	}
	for i := 1; i < n; i++ {
		if !(loads[i] > loads[i-1]) {
			return Knee{}, false, "loads must be ascending and distinct"
		}
	}
	base := (p99[1] - p99[0]) / (loads[1] - loads[0])
	if loads[0] > 0 {
		base = max(base, kneeFloorFrac*p99[0]/loads[0])
	}
	if !(base > 0) {
		return Knee{}, false, "the lowest level has no latency to compare with"
	}
	// Track each condition apart, so a miss names the one that decided.
	steepest, highest, steepHigh := 0.0, p99[2], 0.0
	anySteep, anyHigh := false, false
	for i := 2; i < n; i++ {
		slope := (p99[i] - p99[i-1]) / (loads[i] - loads[i-1])
		steep, high := slope > cfg.K*base, p99[i] > (1+cfg.MinRise)*p99[0]
		if steep && high {
			return Knee{Index: i, Load: loads[i], P99TTFTMs: p99[i], Slope: slope, BaseSlope: base, K: cfg.K}, true, ""
		}
		steepest, highest = max(steepest, slope), max(highest, p99[i])
		if steep {
			anySteep, steepHigh = true, max(steepHigh, p99[i])
		}
		anyHigh = anyHigh || high
	}
	rise := func(v float64) string { return fmt.Sprintf("%.2f×", v/p99[0]) }
	switch {
	case anySteep && !anyHigh:
		return Knee{}, false, fmt.Sprintf("no knee within the levels: P99 TTFT rose steeply (up to %.1f× the low-load slope) but never above %g× the lowest level's (%.0f ms; at most %s, %.0f ms), so the rise is noise on a flat curve",
			steepest/base, 1+cfg.MinRise, p99[0], rise(highest), highest)
	case anySteep:
		return Knee{}, false, fmt.Sprintf("no knee within the levels: the steep segments (up to %.1f× the low-load slope) stayed within %g× the lowest level's P99 TTFT (at most %s), and the levels above it rose no faster than %g× the low-load slope",
			steepest/base, 1+cfg.MinRise, rise(steepHigh), cfg.K)
	}
	return Knee{}, false, fmt.Sprintf("no knee within the levels: P99 TTFT rose at most %.1f× the low-load slope (threshold %g×)",
		steepest/base, cfg.K)
}
