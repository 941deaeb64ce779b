package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValuesBounded checks that Values summarises as SummarizeValues below
// its bound and, past it, keeps no samples yet stays within SketchRelErr.
func TestValuesBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 5000)
	for i := range xs {
		xs[i] = math.Exp(4+r.NormFloat64()) - 20 // some negative, as a TTFT's unexplained rest can be
	}
	ps := []float64{0, 1, 50, 90, 99, 99.9, 100}
	want := SummarizeValues("x", ps, xs)

	var below Values
	for _, x := range xs {
		below.Add(x)
	}
	below.Add(math.NaN())
	if diff := cmp.Diff(want, below.Summarize("x", ps)); diff != "" {
		t.Errorf("Values below its bound differs from SummarizeValues (-want +got):\n%s", diff)
	}

	above := Values{limit: 100}
	for _, x := range xs {
		above.Add(x)
	}
	if above.s.vals != nil || above.Len() != len(xs) {
		t.Errorf("Values past its bound keeps %d samples, Len %d; want none kept, Len %d", len(above.s.vals), above.Len(), len(xs))
	}
	got := above.Summarize("x", ps)
	if !got.Approx || got.N != want.N || got.Mean != want.Mean && math.Abs(got.Mean-want.Mean) > 1e-9*math.Abs(want.Mean) {
		t.Errorf("Summarize = Approx %v N %d mean %v; want Approx, N %d, mean %v", got.Approx, got.N, got.Mean, want.N, want.Mean)
	}
	for i, p := range want.Percentiles {
		if g := got.Percentiles[i].Value; !within(g, p.Value) {
			t.Errorf("p%v = %v; want %v within %v", p.P, g, p.Value, SketchRelErr)
		}
	}
}

// TestValuesMerge checks Merge against adding the samples to one Values,
// below the bound (exact) and across it (within SketchRelErr).
func TestValuesMerge(t *testing.T) {
	ps := []float64{50, 99}
	for _, limit := range []int{0, 300} {
		var a, b, all Values
		a.limit, b.limit, all.limit = limit, limit, limit
		for i := range 500 {
			x := float64(i*37%500) + 0.5
			all.Add(x)
			if i%3 == 0 {
				a.Add(x)
			} else {
				b.Add(x)
			}
		}
		a.Merge(&b)
		want, got := all.Summarize("x", ps), a.Summarize("x", ps)
		if got.N != want.N || got.Approx != (limit > 0) {
			t.Errorf("limit %d: merged N %d Approx %v; want %d, %v", limit, got.N, got.Approx, want.N, limit > 0)
		}
		for i, p := range want.Percentiles {
			if g := got.Percentiles[i].Value; !within(g, p.Value) {
				t.Errorf("limit %d: merged p%v = %v; want %v", limit, p.P, g, p.Value)
			}
		}
	}
}
