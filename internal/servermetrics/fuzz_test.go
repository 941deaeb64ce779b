package servermetrics

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bodies through parse and map: it must never
// panic, and what it accepts must keep the histogram invariants windows
// rely on.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte(scrapeA))
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"1\"} 3\nx_count 2\n"))
	f.Add([]byte("vllm:num_requests_running NaN\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} +Inf\n"))
	f.Add([]byte("{\"__name__\"=\"vllm:x\"} 1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := Parse(bytes.NewReader(body), 0)
		if err != nil {
			return
		}
		for n, h := range s.Histograms {
			if len(h.Buckets) == 0 || !math.IsInf(h.Buckets[len(h.Buckets)-1].UpperBound, 1) {
				t.Fatalf("Histograms[%s] has no +Inf bucket: %+v", n, h.Buckets)
			}
			for i := 1; i < len(h.Buckets); i++ {
				if h.Buckets[i].UpperBound < h.Buckets[i-1].UpperBound {
					t.Fatalf("Histograms[%s] bounds not ascending: %+v", n, h.Buckets)
				}
			}
			_ = h.Quantile(0.99)
		}
		s2 := s
		s2.TimeNS = 1
		if _, err := Compute([]Snapshot{s, s2}); err != nil {
			t.Fatalf("Compute of two parsed snapshots: %v", err)
		}
	})
}
