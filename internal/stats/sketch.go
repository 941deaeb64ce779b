package stats

import (
	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// An Accumulator keeps every sample exactly until a series holds
// ExactRequests (per-request metrics and lengths) or ExactGaps (inter-token
// gaps) of them; past that, the series moves into a quantile sketch
// (DDSketch) and its percentiles carry a relative error of at most
// SketchRelErr. Summarize and NewExactAccumulator never switch.
const (
	// ExactRequests is the number of samples a per-request series (TTFT,
	// TPOT, E2E, TTP, response time, send lag, lengths, each per-bucket
	// copy) and the peak-concurrency sweep keep exactly: 262,144, ~2 MiB a
	// series.
	ExactRequests = 1 << 18
	// ExactGaps is the number of inter-token gaps each ITL series keeps
	// exactly: 16,777,216 float32, 64 MiB (e.g. 100,000 requests of 168
	// tokens).
	ExactGaps = 1 << 24
	// SketchRelErr is the bound on |sketch − exact| / |exact| of a
	// percentile taken from the sketch, exact meaning numpy's linear
	// interpolation over all samples: 0.1 %, i.e. ±1 ms at a 1 s TTFT.
	// (An ITL series adds float32's 6e-8 for the gaps kept before it
	// switched.) Mean, Std, Min, Max and N stay exact.
	SketchRelErr = 1e-3
)

// sketchMapping maps values to the sketch's logarithmic bins. It is
// immutable, so every sketch (in any goroutine) shares it; sketches can only
// be merged when their mappings are equal.
var sketchMapping = func() mapping.IndexMapping {
	m, err := mapping.NewCubicallyInterpolatedMapping(SketchRelErr)
	if err != nil {
		panic(err)
	}
	return m
}()

// sketchBins caps each of a sketch's two stores (positive and negative
// values) at 32,768 float64 bins, 256 KiB. The cap is never reached by
// values that come from int64 nanoseconds or token counts: 1 ns to 2^63 ns
// (or 1 to 2^63 tokens) spans ~22,000 bins at SketchRelErr, so the error
// bound holds for every input this package is given.
const sketchBins = 1 << 15

func newSketch() *ddsketch.DDSketch {
	return ddsketch.NewDDSketch(sketchMapping,
		store.NewCollapsingLowestDenseStore(sketchBins), store.NewCollapsingLowestDenseStore(sketchBins))
}

// sketchAt returns the sketch's estimate of the k-th smallest (0-based)
// value it holds, within SketchRelErr of the true one. (DDSketch's own
// GetValueAtQuantile takes a quantile, whose float rank can fall just short
// of k and name the value below.)
func sketchAt(sk *ddsketch.DDSketch, k int) float64 {
	neg, pos := sk.GetNegativeValueStore(), sk.GetPositiveValueStore()
	r, nn := float64(k), neg.TotalCount()
	switch {
	case r < nn:
		return -sk.Value(neg.KeyAtRank(nn - 1 - r))
	case r < nn+sk.GetZeroCount():
		return 0
	default:
		return sk.Value(pos.KeyAtRank(r - nn - sk.GetZeroCount()))
	}
}
