package runlog

import (
	"math"
	"testing"
)

func TestSatAdd(t *testing.T) {
	tests := []struct{ a, b, want int }{
		{2, 3, 5},
		{math.MaxInt, 1, math.MaxInt},
		{math.MinInt, -1, math.MinInt},
		{math.MinInt, math.MaxInt, -1},
	}
	for _, tt := range tests {
		if got := satAdd(tt.a, tt.b); got != tt.want {
			t.Errorf("satAdd(%d, %d) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
