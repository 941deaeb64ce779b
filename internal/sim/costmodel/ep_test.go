package costmodel

import (
	"math"
	"testing"
)

// TestAllToAllSeconds works the formula by hand: nvlink4 (α 8 µs, β 300
// GB/s).
func TestAllToAllSeconds(t *testing.T) {
	f := AllReduceFigures{LatencyUs: 8, BusGBs: 300}
	tests := []struct {
		name  string
		bytes float64
		n     int
		want  float64
	}{
		{"one GPU", 1e9, 1, 0},
		// 8 µs + ½ × 30 MB / 300 GB/s = 8 + 50 µs.
		{"two GPUs", 30e6, 2, 58e-6},
		// 8 µs + ¾ × 40 MB / 300 GB/s = 8 + 100 µs.
		{"four GPUs", 40e6, 4, 108e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.AllToAllSeconds(tt.bytes, tt.n); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("AllToAllSeconds(%g, %d) = %g; want %g", tt.bytes, tt.n, got, tt.want)
			}
		})
	}
}

// TestEPCommSeconds works one step's expert-parallel communication by hand
// for qwen3-30b-a3b (48 MoE layers, hidden 2048, top-8) on H100 SXM
// (nvlink4: α 8 µs, β 300 GB/s), 1000 tokens on the busiest of 2 ranks:
// bytes = 1000 × 8 × 2048 × 2 = 32 768 000 each way; one all-to-all is
// 8 µs + ½ × 32 768 000 / 300e9 s = 62.613 µs; × 2 (dispatch, combine)
// × 48 layers = 6010.88 µs.
func TestEPCommSeconds(t *testing.T) {
	d := deployment(t, "qwen3-30b-a3b", "h100-sxm", 1, "bf16")
	if !d.MoE() {
		t.Fatal("qwen3-30b-a3b: MoE() = false; want true")
	}
	if got, want := d.EPAllToAllBytes(1000), 32768000.0; got != want {
		t.Errorf("EPAllToAllBytes(1000) = %g; want %g", got, want)
	}
	if got, want := d.EPCommSeconds(1000, 2), 6010.88e-6; math.Abs(got-want) > 1e-9 {
		t.Errorf("EPCommSeconds(1000, 2) = %g; want %g", got, want)
	}
	// An idle step (every rank's dummy forward) still pays the latencies:
	// 2 × 48 × 8 µs.
	if got, want := d.EPCommSeconds(0, 2), 768e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("EPCommSeconds(0, 2) = %g; want %g", got, want)
	}
	if got := d.EPCommSeconds(1000, 1); got != 0 {
		t.Errorf("EPCommSeconds(1000, 1) = %g; want 0 (one GPU, no all-to-all)", got)
	}
	dense := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	if dense.MoE() || dense.EPCommSeconds(1000, 2) != 0 {
		t.Errorf("llama-3.1-8b: MoE() = %v, EPCommSeconds = %g; want false, 0", dense.MoE(), dense.EPCommSeconds(1000, 2))
	}
}

// TestEPExpertDelta: on one GPU expert parallelism changes nothing (all
// experts, whole, the same tokens); over two GPUs a rank with all the
// tokens runs half the expert rows (the other half go to the other rank's
// experts), so its expert GEMMs get shorter.
func TestEPExpertDelta(t *testing.T) {
	d := deployment(t, "qwen3-30b-a3b", "h100-sxm", 1, "bf16")
	for _, tok := range []int{1, 64, 4000} {
		if got := d.EPExpertDeltaSeconds(tok, tok, 1); math.Abs(got) > 1e-15 {
			t.Errorf("EPExpertDeltaSeconds(%d, %d, 1) = %g; want 0", tok, tok, got)
		}
	}
	if got := d.EPExpertDeltaSeconds(4000, 4000, 2); got >= 0 {
		t.Errorf("EPExpertDeltaSeconds(4000, 4000, 2) = %g; want < 0", got)
	}
	// An idle rank (one dummy token) receives work from the other.
	if got := d.EPExpertDeltaSeconds(1, 4000, 2); got <= 0 {
		t.Errorf("EPExpertDeltaSeconds(1, 4000, 2) = %g; want > 0", got)
	}
}
