package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
)

// TestDetailed: handRecords' level 0 (times in ms, see handRecords) plus
// a whole answer listed last but sent at 30 (intended 20, its body at
// 80), and a request of another level, left out.
func TestDetailed(t *testing.T) {
	recs := handRecords()
	recs[1].GeneratedText = "hello"
	recs = append(recs,
		runlog.Record{ID: "whole", Intended: 20 * ms, Sent: 30 * ms, End: 90 * ms, Chunks: []runlog.Chunk{chunk(80, 3, true)},
			PromptTokens: 5, CompletionTokens: 3, Status: 200, WholeAnswer: true, GeneratedText: "abc"},
		runlog.Record{ID: "other level", Level: 1, Sent: 10 * ms, End: 20 * ms, Chunks: []runlog.Chunk{chunk(20, 1, true)}, PromptTokens: 9, Status: 200},
	)
	before := handRecords()
	got := Detailed(recs, 0)
	// In send order: r1 (0), whole (30), r2 (60), r3 (100), r4 (150).
	want := map[string]any{
		"input_lens":  []int{100, 5, 2000, 10000, 0},
		"output_lens": []int{4, 3, 4, 1, 0}, // r4 failed
		// r1: 100 − 0; whole: not measured; r2: 260 (hidden) − 60; r3: 1100 − 100.
		"ttfts": []float64{0.1, 0, 0.2, 1, 0},
		"itls":  [][]float64{{0.01, 0.01, 0.01}, {}, {0.02, 0.02}, {}, {}},
		// E2E: 130 − 0, 80 − 30, 300 − 60, 1100 − 100; r4 failed.
		"latencies":       []float64{0.13, 0.05, 0.24, 1, 0},
		"start_times":     []float64{0, 0.03, 0.06, 0.1, 0.15},
		"queue_times":     []float64{0, 0.01, 0.01, 0, 0},
		"generated_texts": []string{"hello", "abc", "", "", ""},
		"errors":          []string{"", "", "", "", "boom"},
		"rtfx":            json.RawMessage("0.0"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Detailed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before[2:], recs[2:5]); diff != "" {
		t.Errorf("Detailed modified its records (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rtfx":0.0`) {
		t.Errorf("Detailed as JSON = %s; want rtfx written 0.0", b)
	}

	empty := Detailed(nil, 0)
	for k, v := range empty {
		if k != "rtfx" && string(must(json.Marshal(v))) != "[]" {
			t.Errorf("Detailed(no records)[%q] = %v; want an empty list", k, v)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
