package costmodel

import (
	"math"
	"testing"
)

// TestCell checks the quarter-octave cell of x against the logarithm.
func TestCell(t *testing.T) {
	for _, x := range []float64{1, 1.1, 1.19, 1.1892, 1.19, 1.5, 1.6818, 1.7, 2, 3, 4, 1000, 1e6, 65535.9} {
		want := int(math.Floor(math.Log2(x) * gridRes * (1 + 1e-12)))
		if got := cell(x); got != want {
			t.Errorf("cell(%v) = %d; want %d", x, got, want)
		}
	}
}
