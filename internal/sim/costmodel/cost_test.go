package costmodel

import (
	"math"
	"strings"
	"testing"
)

func deployment(t *testing.T, model, gpu string, tp int, dtype string) *Deployment {
	t.Helper()
	m, err := LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDeployment(m, g, tp, dtype, "auto")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParams(t *testing.T) {
	// Worked from each config.json (norms and biases ignored):
	// Llama-3.1-8B: per layer attention 4096·4096·2 + 2·4096·1024 =
	// 41,943,040; MLP 3·4096·14336 = 176,160,768; × 32 layers =
	// 6,979,321,856; embeddings 2·128256·4096 = 1,050,673,152; total
	// 8,029,995,008 (the published 8.03 B).
	// Qwen3-30B-A3B: attention 2048·32·128·2 + 2·2048·4·128 = 18,874,368;
	// experts 128·3·2048·768 + router 2048·128 = 604,241,920; layer
	// 623,116,288 × 48 = 29,909,581,824; embeddings 2·151936·2048 =
	// 622,329,856; total 30,531,911,680 (the published 30.5 B). Active: 8
	// experts 8·3·2048·768 + 262,144 = 38,010,880; (18,874,368 +
	// 38,010,880)·48 + 622,329,856 = 3,352,821,760 (the published 3.3 B).
	// Qwen3-32B with its declared head_dim 128 (hidden/heads would be 80):
	// attention 5120·8192·2 + 2·5120·1024 = 94,371,840; MLP 3·5120·25600 =
	// 393,216,000; × 64 = 31,205,621,760; + 2·151936·5120 = 1,555,824,640
	// → 32,761,446,400 (the published 32.8 B).
	tests := []struct {
		model          string
		params, active int64
	}{
		{"llama-3.1-8b", 8_029_995_008, 8_029_995_008},
		{"qwen3-30b-a3b", 30_531_911_680, 3_352_821_760},
		{"qwen3-32b", 32_761_446_400, 32_761_446_400},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			m, err := LookupModel(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Params(); got != tt.params {
				t.Errorf("Params(%s) = %d; want %d", tt.model, got, tt.params)
			}
			if got := m.ActiveParams(); got != tt.active {
				t.Errorf("ActiveParams(%s) = %d; want %d", tt.model, got, tt.active)
			}
		})
	}
}

// TestDecodeA100 checks the anchor: Llama-3-8B bf16 on A100-80GB at
// batch 1 is memory-bound, and the step is the weight bytes over bandwidth
// divided by the memory efficiency, plus the fixed overheads.
func TestDecodeA100(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "a100-80gb", 1, "bf16")
	var b Batch
	b.Add(1, 512, false)
	br := d.Breakdown(&b)
	// Weights read per step: 32 layers × 218,103,808 params + LM head
	// 525,336,576 = 7,504,658,432 params × 2 B = 15,009,316,864 B;
	// / 2.039e12 B/s = 7.361 ms at 100 % (the "≈ 8 ms" counts the
	// input embedding too, which a decode step does not read).
	ideal := 15_009_316_864.0 / 2.039e12
	if br.GEMMCompute >= br.GEMMMemory {
		t.Errorf("decode GEMMs compute %.3f ms ≥ memory %.3f ms; want memory-bound", br.GEMMCompute*1e3, br.GEMMMemory*1e3)
	}
	// Activations add 4.5 MB (0.03 %), so compare within 0.5 %.
	want := ideal / DefaultEfficiency().Memory
	if math.Abs(br.GEMMMemory/want-1) > 0.005 {
		t.Errorf("GEMMMemory = %.3f ms; want %.3f ms (%.3f ms / %.2f)", br.GEMMMemory*1e3, want*1e3, ideal*1e3, DefaultEfficiency().Memory)
	}
	if br.Total < 7.3e-3 || br.Total > 11e-3 {
		t.Errorf("decode step = %.3f ms; want 7.3–11 ms", br.Total*1e3)
	}
	t.Logf("A100-80GB Llama-3.1-8B decode batch 1: %.3f ms (weights %.3f ms at 100%%, %.3f at %.0f%%, overhead %.3f ms)",
		br.Total*1e3, ideal*1e3, br.GEMMMemory*1e3, DefaultEfficiency().Memory*100, br.Overhead*1e3)
}

func TestPrefillComputeBound(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "a100-80gb", 1, "bf16")
	var b Batch
	b.Add(1024, 0, true)
	br := d.Breakdown(&b)
	if br.GEMMCompute <= br.GEMMMemory {
		t.Errorf("1024-token prefill: compute %.3f ms ≤ memory %.3f ms; want compute-bound", br.GEMMCompute*1e3, br.GEMMMemory*1e3)
	}
	// 2 × 6,979,321,856 layer params × 1024 tokens + 2 × 525,336,576 × 1
	// logit row = 1.4294e13 + 1.0507e9 FLOPs; / (312e12 × 0.6) = 76.36 ms.
	want := (2*6_979_321_856.0*1024 + 2*525_336_576.0) / (312e12 * DefaultEfficiency().PrefillCompute)
	if math.Abs(br.GEMMCompute/want-1) > 1e-9 {
		t.Errorf("GEMMCompute = %.4f ms; want %.4f ms", br.GEMMCompute*1e3, want*1e3)
	}
	t.Logf("A100-80GB Llama-3.1-8B 1024-token prefill: %.3f ms (GEMM compute %.3f, memory %.3f)", br.Total*1e3, br.GEMMCompute*1e3, br.GEMMMemory*1e3)
}

// TestShape checks directions the roofline must get right.
func TestShape(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	step := func(seqs, ctx int) float64 {
		var b Batch
		for range seqs {
			b.Add(1, ctx, false)
		}
		return d.Breakdown(&b).Total
	}
	if a, b := step(1, 1000), step(64, 1000); !(b > a && b < 4*a) {
		t.Errorf("decode 1 seq = %.2f ms, 64 seqs = %.2f ms; want slower but far less than 64×", a*1e3, b*1e3)
	}
	if a, b := step(32, 100), step(32, 8000); b <= a {
		t.Errorf("decode at 8000 ctx = %.2f ms ≤ at 100 ctx %.2f ms; want longer context slower", b*1e3, a*1e3)
	}
	// TP2 halves weights per GPU but adds an all-reduce.
	d2 := deployment(t, "llama-3.1-8b", "h100-sxm", 2, "bf16")
	var b Batch
	b.Add(1, 100, false)
	if one, two := d.Breakdown(&b), d2.Breakdown(&b); !(two.Total < one.Total && two.Comm > 0) {
		t.Errorf("TP2 decode %.3f ms (comm %.3f); TP1 %.3f ms; want faster with comm > 0", two.Total*1e3, two.Comm*1e3, one.Total*1e3)
	}
	// fp8 weights halve the bytes of a memory-bound step.
	d8 := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "fp8")
	if bf, f8 := d.Breakdown(&b).GEMMMemory, d8.Breakdown(&b).GEMMMemory; math.Abs(f8/bf-0.5) > 0.05 {
		t.Errorf("fp8/bf16 GEMM memory = %.3f; want ≈ 0.5 (lm head stays 16-bit)", f8/bf)
	}
	// PCIe all-reduce costs more than NVLink.
	l := deployment(t, "llama-3.1-8b", "l40s", 2, "bf16")
	var big Batch
	big.Add(2048, 0, true)
	if lc, hc := l.Breakdown(&big).Comm, d2.Breakdown(&big).Comm; lc <= hc {
		t.Errorf("PCIe comm %.3f ms ≤ NVLink %.3f ms", lc*1e3, hc*1e3)
	}
	// MoE decode reads only the touched experts: far fewer bytes than all.
	moe := deployment(t, "qwen3-30b-a3b", "h100-sxm", 1, "bf16")
	all := float64(moe.Model.Layers) * moe.layerWeights
	if got := moe.Breakdown(&b).GEMMMemory * moe.bw * moe.Eff.Memory; got > all/4 {
		t.Errorf("MoE batch-1 decode reads %.1f GB; want < a quarter of the %.1f GB of weights", got/1e9, all/1e9)
	}
}

func TestNewDeploymentErrors(t *testing.T) {
	m, _ := LookupModel("llama-3.1-8b")
	g, _ := LookupGPU("h100-sxm")
	tests := []struct {
		name, want string
		tp         int
		dtype, kv  string
	}{
		{"tp zero", "tensor_parallel_size 0", 0, "bf16", "auto"},
		{"tp not dividing heads", "must divide", 3, "bf16", "auto"},
		{"bad dtype", "dtype", 1, "fp3", "auto"},
		{"int4 kv", "int4 KV", 1, "bf16", "int4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDeployment(m, g, tt.tp, tt.dtype, tt.kv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewDeployment(tp=%d, %s, %s) = %v; want error containing %q", tt.tp, tt.dtype, tt.kv, err, tt.want)
			}
		})
	}
}
