package servermetrics

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// junk is n series of families no server of the vocabulary has: half
// each a family of its own, half one family's label values.
func junk(n int) []byte {
	var b bytes.Buffer
	for i := range n / 2 {
		fmt.Fprintf(&b, "j%d 1\n", i)
	}
	b.WriteString("# TYPE x gauge\n")
	for i := range n - n/2 {
		fmt.Fprintf(&b, "x{i=\"%d\"} 1\n", i)
	}
	return b.Bytes()
}

// A body under the byte cap with 500,000 series of unknown families costs
// a bounded parse: a few MiB allocated, not the gigabyte a label map per
// series takes; the vLLM families after them are all read, and the series
// cut are counted.
func TestParseBoundsSeries(t *testing.T) {
	vllm, err := os.ReadFile("testdata/vllm.txt")
	if err != nil {
		t.Fatal(err)
	}
	const n = 500_000
	body := append(junk(n), vllm...)
	if len(body) > MaxBodyBytes {
		t.Fatalf("body of %d bytes is over the cap: the test must stay under it", len(body))
	}
	want, err := ParseBytes(vllm, 0)
	if err != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := ParseBytes(body, 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("ParseBytes = %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("ParseBytes of %d series allocated %d bytes; want at most 8 MiB", n, alloc)
	}
	if got.Kind != KindVLLM {
		t.Errorf("Kind = %q; want vllm", got.Kind)
	}
	if diff := cmp.Diff(want.Values, got.Values); diff != "" {
		t.Errorf("known values mismatch (-alone +behind the junk):\n%s", diff)
	}
	if diff := cmp.Diff(want.Histograms, got.Histograms); diff != "" {
		t.Errorf("known histograms mismatch (-alone +behind the junk):\n%s", diff)
	}
	// Raw also holds known families left unmapped (a deprecated alias
	// beside its new name); those are not under MaxRawSeries.
	unknown := func(s Snapshot) int {
		k := 0
		for name, f := range s.Raw {
			if !knownFamilies()[name] {
				k += len(f.Samples)
			}
		}
		return k
	}
	// Dropped counts sample lines (a raw histogram's buckets each): at
	// least the junk past the cap, at most all of it and vLLM's lines.
	lines := bytes.Count(vllm, []byte("\n"))
	if kept := unknown(got); kept != MaxRawSeries || got.DroppedSeries < n-MaxRawSeries || got.DroppedSeries > n+lines {
		t.Errorf("raw series kept %d, dropped %d; want %d kept, %d to %d dropped", kept, got.DroppedSeries, MaxRawSeries, n-MaxRawSeries, n+lines)
	}
	// The count survives the stored form.
	b, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := back.UnmarshalJSON(b); err != nil || back.DroppedSeries != got.DroppedSeries {
		t.Errorf("stored form's dropped series = %d, %v; want %d", back.DroppedSeries, err, got.DroppedSeries)
	}
}

// Known families are read whole however many raw series came before, and
// past MaxKnownSeries their series are counted too.
func TestParseBoundsKnownSeries(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range MaxKnownSeries + 10 {
		fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"%d\"} 1\n", i)
	}
	s, err := ParseBytes(b.Bytes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Values[Running] != MaxKnownSeries || s.DroppedSeries != 10 {
		t.Errorf("running = %v, dropped %d; want %d read and 10 dropped", s.Values[Running], s.DroppedSeries, MaxKnownSeries)
	}
}

// A syntax error names the body's line even when lines before it were cut.
func TestParseErrorLineAfterCut(t *testing.T) {
	body := append(junk(2*MaxRawSeries), "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} notanumber\n"...)
	_, err := ParseBytes(body, 0)
	se, ok := err.(*SyntaxError)
	if want := bytes.Count(body, []byte("\n")); !ok || se.Line != want {
		t.Errorf("ParseBytes error = %v; want a *SyntaxError at line %d", err, want)
	}
}
