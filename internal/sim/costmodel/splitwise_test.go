package costmodel

import (
	"encoding/csv"
	"os"
	"slices"
	"strconv"
	"testing"
)

// TestSplitwiseSanity compares the formula with Splitwise's measured
// Llama-2-70B iteration times (A100-80GB and H100, TP4 and TP8, batch 1).
//
// Prefill at 2048 and 8192 tokens is compute-bound. A100 TP4 at 2048
// tokens agrees within 3 %; the rest of that 2023 stack runs slower than a
// current engine the more GPUs and the longer the prompt (its H100 TP8
// 8192-token prefill reaches only ~17 % of peak), so the stated tolerance
// is: the formula lies within [40 %, 140 %] of the measured median. Decode steps there run on a 2023
// engine without CUDA graphs: TP8 is no faster than TP4 on A100, i.e. the
// ~45 ms steps are mostly framework overhead, so for decode we only check
// that the prediction lies between 25 % and 100 % of the measurement
// (bandwidth-bound, never slower than that engine).
func TestSplitwiseSanity(t *testing.T) {
	f, err := os.Open("../../../../shared/data/splitwise-perf-model/perf_model.csv")
	if err != nil {
		t.Skip("splitwise-perf-model absent: ", err)
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
				t.Logf("%s TP%d prefill %d: sim %.1f ms, measured %.1f ms (%+.0f%%)", hw, tp, p, got, want, 100*(got/want-1))
				if got < 0.4*want || got > 1.4*want {
					t.Errorf("%s TP%d prefill %d = %.1f ms; want within [40%%, 140%%] of %.1f ms", hw, tp, p, got, want)
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
