package costmodel

import (
	"math"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	// Two context levels; at ctx 0 time = 10 + 0.01·tokens ms, at ctx
	// 1000 time = 20 + 0.01·tokens ms.
	tab, err := ParseTable(strings.NewReader("tokens,context_tokens,time_ms\n1,0,10.01\n1001,0,20.01\n1,1000,20.01\n1001,1000,30.01\n1,1000,20.01\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tokens int
		ctx    int64
		wantMs float64
	}{
		{1, 0, 10.01},
		{501, 0, 15.01},     // midway in tokens
		{501, 500, 20.01},   // midway in both: (15.01 + 25.01) / 2
		{2001, 0, 30.01},    // extrapolated past the last point
		{1, 2000, 30.01},    // extrapolated past the last level
		{1001, 1000, 30.01}, // exact point
	}
	for _, tt := range tests {
		if got := tab.Lookup(tt.tokens, tt.ctx) * 1e3; math.Abs(got-tt.wantMs) > 1e-9 {
			t.Errorf("Lookup(%d, %d) = %.4f ms; want %.4f ms", tt.tokens, tt.ctx, got, tt.wantMs)
		}
	}
	bad := []struct{ name, csv string }{
		{"empty", ""},
		{"header", "a,b,c\n1,1,1\n"},
		{"no rows", "tokens,context_tokens,time_ms\n"},
		{"nan", "tokens,context_tokens,time_ms\nNaN,0,1\n"},
		{"zero time", "tokens,context_tokens,time_ms\n1,0,0\n"},
		{"fields", "tokens,context_tokens,time_ms\n1,0\n"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseTable(strings.NewReader(tt.csv)); err == nil {
				t.Errorf("ParseTable(%q) = nil error; want one", tt.csv)
			}
		})
	}
}

// TestTableOverridesFormula wires a table into a Deployment.
func TestTableOverridesFormula(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	d.Table, _ = ParseTable(strings.NewReader("tokens,context_tokens,time_ms\n1,0,5\n"))
	var b Batch
	b.Add(1, 100, false)
	if got := d.IterationNs(&b); got != 5_000_000 {
		t.Errorf("IterationNs with a constant 5 ms table = %d; want 5000000", got)
	}
}

func FuzzParseTable(f *testing.F) {
	f.Add("tokens,context_tokens,time_ms\n1,0,10\n100,0,20\n1,1000,30\n")
	f.Add("tokens,context_tokens,time_ms\n5,5,5\n")
	f.Fuzz(func(t *testing.T, s string) {
		tab, err := ParseTable(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, q := range [][2]int{{1, 0}, {1 << 20, 1 << 30}, {7, 3}} {
			v := tab.Lookup(q[0], int64(q[1]))
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 1e-6 {
				t.Fatalf("Lookup(%v) = %v on table %q", q, v, s)
			}
		}
	})
}
