package costmodel

import (
	"encoding/csv"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/goodput/goodput/internal/shareddata"
)

// TestSplitwiseSanity compares the formula with Splitwise's measured
// Llama-2-70B iteration times on NVLink (DGX A100-80GB and H100, TP4 and
// TP8, batch 1; shared/data/splitwise-perf-model, from
// https://github.com/Mutinifni/splitwise-sim data/perf_model.csv).
//
// That 2023 stack is slower than the vLLM V1 this models, never faster:
// its decode steps take ~45 ms on A100 and ~30 ms on H100 whatever the TP
// degree (TP8 no faster than TP4), i.e. framework overhead without CUDA
// graphs, where the weights alone stream in 4–20 ms. So the bounds are
// one-sided and state that: a 2,048-token prefill (GEMM-bound: the part
// both stacks share) within [75 %, 105 %] of the measurement; an
// 8,192-token one, where its older attention kernels dominate, within
// [40 %, 100 %]; decode within [25 %, 100 %]. A sanity bound, not an
// accuracy figure: a 4× window says only that decode is not absurd.
func TestSplitwiseSanity(t *testing.T) {
	f, err := os.Open(shareddata.Path(t, "splitwise-perf-model/perf_model.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		hw     string
		tp     int
		prompt int
	}
	prefill := map[key][]float64{}
	decode := map[key][]float64{}
	for _, r := range rows[1:] {
		if r[0] != "llama2-70b" || r[3] != "1" {
			continue
		}
		p, _ := strconv.Atoi(r[2])
		tp, _ := strconv.Atoi(r[10])
		pt, _ := strconv.ParseFloat(r[7], 64)
		tt, _ := strconv.ParseFloat(r[8], 64)
		k := key{r[1], tp, p}
		prefill[k] = append(prefill[k], pt)
		decode[key{r[1], tp, 0}] = append(decode[key{r[1], tp, 0}], tt)
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	gpu := map[string]string{"a100-80gb": "a100-80gb", "h100-80gb": "h100-sxm"}
	for _, hw := range []string{"a100-80gb", "h100-80gb"} {
		for _, tp := range []int{4, 8} {
			d := deployment(t, "llama-2-70b", gpu[hw], tp, "bf16")
			for _, p := range []int{2048, 8192} {
				ms := prefill[key{hw, tp, p}]
				if len(ms) == 0 {
					t.Fatalf("no splitwise rows for %s TP%d prompt %d", hw, tp, p)
				}
				var b Batch
				b.Add(p, 0, true)
				got, want := d.Breakdown(&b).Total*1e3, median(ms)
				lo, hi := 0.75, 1.05
				if p == 8192 {
					lo, hi = 0.40, 1.00
				}
				t.Logf("%s TP%d prefill %d: sim %.1f ms, measured %.1f ms (%+.0f%%)", hw, tp, p, got, want, 100*(got/want-1))
				if got < lo*want || got > hi*want {
					t.Errorf("%s TP%d prefill %d = %.1f ms; want within [%.0f%%, %.0f%%] of %.1f ms", hw, tp, p, got, 100*lo, 100*hi, want)
				}
			}
			var b Batch
			b.Add(1, 600, false)
			got, want := d.Breakdown(&b).Total*1e3, median(decode[key{hw, tp, 0}])
			t.Logf("%s TP%d decode: sim %.1f ms, measured %.1f ms", hw, tp, got, want)
			if got < 0.25*want || got > want {
				t.Errorf("%s TP%d decode = %.1f ms; want within [25%%, 100%%] of %.1f ms", hw, tp, got, want)
			}
		}
	}
}
