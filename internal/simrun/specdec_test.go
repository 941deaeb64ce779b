package simrun

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// specRun runs n requests of one shape in a closed loop at concurrency
// conc, with k drafts at acceptance alpha (k = 0: off), and returns the
// records, the mean TPOT and the output throughput, tokens/s.
func specRun(t *testing.T, conc, n, k int, alpha float64) (recs []*runlog.Record, tpot time.Duration, tput float64) {
	t.Helper()
	eng := newEngine(t, func(c *sim.Config) { c.SpecTokens, c.SpecAcceptance = k, alpha })
	ds := shapes{{PromptTokens: 1024, OutputTokens: 256}}
	recs, res := collect(t, eng, ds, Load{Level: runlog.Level{MaxConcurrency: conc, NumPrompts: n}})
	var sum time.Duration
	tokens := 0
	for _, r := range recs {
		d, ok := r.TPOT()
		if !ok || r.CompletionTokens != 256 {
			t.Fatalf("record %s: TPOT ok %v, %d tokens; want a TPOT and 256 tokens", r.ID, ok, r.CompletionTokens)
		}
		sum += d
		tokens += r.CompletionTokens
	}
	return recs, sum / time.Duration(len(recs)), float64(tokens) / res.Duration().Seconds()
}

// TestSpecSpeedupShrinksWithBatch runs the same closed-loop load with and
// without speculative decoding (k = 4, α = 0.7) at concurrency 1, 16, 64
// and 256: the TPOT speedup falls as the batch grows, since the k+1 query
// rows per sequence turn the memory-bound decode step compute-bound. With
// more, likelier rejected drafts (k = 8, α = 0.5) a batch of 64 is already
// slower than without.
func TestSpecSpeedupShrinksWithBatch(t *testing.T) {
	speedup := func(conc, k int, alpha float64) float64 {
		n := max(4*conc, 8)
		_, base, baseTput := specRun(t, conc, n, 0, 0)
		_, spec, specTput := specRun(t, conc, n, k, alpha)
		s := float64(base) / float64(spec)
		t.Logf("k=%d α=%v concurrency %3d: TPOT %.2f → %.2f ms (%.2f×), output %.0f → %.0f tok/s (%.2f×)",
			k, alpha, conc, base.Seconds()*1e3, spec.Seconds()*1e3, s, baseTput, specTput, specTput/baseTput)
		return s
	}
	prev := 0.0
	for i, conc := range []int{1, 16, 64, 256} {
		s := speedup(conc, 4, 0.7)
		if i > 0 && s >= prev {
			t.Errorf("concurrency %d: speedup %.2f×; want below the %.2f× of the smaller batch", conc, s, prev)
		}
		if i == 0 && s < 2 {
			t.Errorf("concurrency 1: speedup %.2f×; want ≥ 2 (E = 2.77 at a nearly free step)", s)
		}
		prev = s
	}
	if s := speedup(64, 8, 0.5); s >= 1 {
		t.Errorf("k=8 α=0.5 concurrency 64: speedup %.2f×; want < 1 (compute-bound, drafts wasted)", s)
	}
}

// TestSpecRecordsDeterministic checks that the same load gives the same
// records, chunk for chunk, and that chunks carry several tokens.
func TestSpecRecordsDeterministic(t *testing.T) {
	a, _, _ := specRun(t, 8, 24, 4, 0.7)
	b, _, _ := specRun(t, 8, 24, 4, 0.7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	multi := 0
	for _, c := range a[0].Chunks {
		if c.Tokens > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Errorf("record %s: no chunk carries more than one token", a[0].ID)
	}
}
