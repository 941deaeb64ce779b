package report

import (
	"bytes"
	"testing"
)

// TestSplitsTerminal: 2 replicas at TP 2 are 4 GPUs; the search's
// resolution is 8 / 2^6 = 0.125 req/s; per GPU is the max rate over 4
// (colocated 3 → 0.75, 1:1 ≥ 8 → ≥ 2); a fleet without a split has no
// transfer ("-").
func TestSplitsTerminal(t *testing.T) {
	s := &Splits{Replicas: 2, TP: 2, SLO: "ttft:1000", Attainment: 0.9, Rate: 8, SearchedTo: 0.125, Best: 1, Verdict: SplitBeats,
		Fleets: []SplitFleet{
			{Name: "colocated", Goodput: 2.5, Attainment: 0.3125, TransferP50: -1, MaxRate: 3, PerGPU: 0.75},
			{Name: "1:1", Goodput: 7.96, Attainment: 0.995, TransferP50: 1.25, MaxRate: 8, PerGPU: 2, AtTop: true},
		}}
	var b bytes.Buffer
	if err := SplitsTerminal(&b, s); err != nil {
		t.Fatal(err)
	}
	want := `============= Prefill/decode splits ==============
Replicas:                                2 × TP 2 = 4 GPUs
SLO:                                     ttft:1000, for 90 % of requests
Request rate (req/s):                    8 (searched below it to 0.125)
Split      Goodput at rate  SLO met (%)  Max rate (req/s)  Per GPU  KV transfer P50 (ms)
colocated  2.50             31.2         3                 0.75     -
1:1        7.96             99.5         ≥ 8               ≥ 2      1.250
Best split:                              1:1 (≥ 2 req/s per GPU; beats colocated, 0.75)
==================================================
`
	if b.String() != want {
		t.Errorf("SplitsTerminal:\n%s\nwant:\n%s", b.String(), want)
	}
	j := SplitsJSON(s)
	fleets := j["fleets"].([]map[string]any)
	if j["gpus"] != 4 || j["best"] != "1:1" || j["verdict"] != "beats" || len(fleets) != 2 ||
		fleets[0]["kv_transfer_p50_ms"] != nil || fleets[1]["kv_transfer_p50_ms"] != 1.25 || fleets[1]["max_rate_per_gpu"] != 2.0 {
		t.Errorf("SplitsJSON = %v", j)
	}
}

// TestSplitVerdict: each verdict's words, the untold one asking for a
// higher rate.
func TestSplitVerdict(t *testing.T) {
	for v, want := range map[SplitVerdict]string{SplitBeats: "beats", SplitLoses: "loses to", SplitTies: "ties",
		SplitUntold: "cannot be told from (both meet the SLO at the rate given: raise it)"} {
		if v.String() != want {
			t.Errorf("%d: %q; want %q", v, v.String(), want)
		}
	}
}
