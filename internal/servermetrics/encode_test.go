package servermetrics

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A snapshot stored and read back keeps its values, histograms (the +Inf
// bucket restored from the count) and GPUs; raw families are not stored.
func TestSnapshotJSONRoundTrip(t *testing.T) {
	for _, name := range []string{"vllm.txt", "dcgm.txt"} {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(f, 5e9)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Snapshot
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		back.TimeNS = s.TimeNS
		// Raw histograms and summaries are not stored; plain series are.
		for n, f := range s.Raw {
			var plain []Sample
			for _, smp := range f.Samples {
				if smp.Histogram == nil {
					plain = append(plain, smp)
				}
			}
			if len(plain) == 0 {
				delete(s.Raw, n)
				continue
			}
			f.Samples = plain
			s.Raw[n] = f
		}
		if diff := cmp.Diff(s, back, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", name, diff)
		}
	}
	var s Snapshot
	for _, bad := range []string{`{"histograms":{"ttft":{"le":[1,2],"counts":[1]}}}`, `{"histograms":{"ttft":{"le":[2,1],"counts":[1,1]}}}`, `{"gpus":[{}]}`, `[`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) = nil; want an error", bad)
		}
	}
}

// A built histogram by hand: bounds 1, 2; observations 0.5, 1, 1.5, 3 give
// cumulative counts 2, 3, then 4 at +Inf, sum 6.
func TestHistogramBuilder(t *testing.T) {
	b := NewHistogramBuilder([]float64{1, 2})
	for _, v := range []float64{0.5, 1, 1.5, 3} {
		b.Observe(v)
	}
	h := b.Histogram()
	if len(h.Buckets) != 3 || h.Buckets[0].Count != 2 || h.Buckets[1].Count != 3 || h.Buckets[2].Count != 4 || h.Count != 4 || h.Sum != 6 {
		t.Errorf("histogram %+v", h)
	}
}
