package report

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/breakdown"
)

// TestSectionExamples: every built-in section has an example that renders
// a terminal block and its key of a level's result JSON, in rank order.
func TestSectionExamples(t *testing.T) {
	ss := Sections(SectionExamples(breakdown.Options{Percentiles: []float64{50, 99}}))
	level := map[string]any{}
	for i, s := range ss {
		var b bytes.Buffer
		if err := s.Terminal(&b); err != nil || b.Len() == 0 {
			t.Errorf("section %d's example wrote %q, %v; want its block", i, b.String(), err)
		}
		s.JSON(level)
	}
	want := []string{"cost", "gateway", "jobs", "replicas", "steady_state", "ttft_split"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(level))); diff != "" {
		t.Errorf("examples' keys (-want +got):\n%s", diff)
	}
	if len(ss) != len(want) {
		t.Errorf("%d sections; want %d", len(ss), len(want))
	}
}

// TestSectionsSkipUnrendered: a breakdown no section renders has none.
func TestSectionsSkipUnrendered(t *testing.T) {
	if ss := Sections(breakdown.Level{unrendered{}}); len(ss) != 0 {
		t.Errorf("Sections(unrendered) = %d sections; want none", len(ss))
	}
}

type unrendered struct{}

func (unrendered) Rank() int { return 0 }
