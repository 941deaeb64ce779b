package costmodel

import (
	"math"
	"strings"
	"testing"
)

func deployment(t testing.TB, model, gpu string, tp int, dtype string) *Deployment {
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

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got/want-1) <= frac }

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

func TestGEMMEfficiency(t *testing.T) {
	// M/(M+64): half at one 64-row tile, 2/3 at 128, 0.985 at 4096 —
	// the DeepGEMM table's 43–63 % at M = 128 and 91–99.5 % at 4096.
	tests := []struct{ m, want float64 }{{0, 0}, {-3, 0}, {1, 1.0 / 65}, {64, 0.5}, {128, 2.0 / 3}, {1024, 1024.0 / 1088}, {4096, 4096.0 / 4160}}
	for _, tt := range tests {
		if got := GEMMEfficiency(tt.m, 64); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("GEMMEfficiency(%v, 64) = %v; want %v", tt.m, got, tt.want)
		}
	}
	prev := 0.0
	for m := 1.0; m <= 1<<16; m *= 2 {
		e := GEMMEfficiency(m, 64)
		if !(e > prev && e < 1) {
			t.Fatalf("GEMMEfficiency(%v) = %v after %v; want increasing in (0, 1)", m, e, prev)
		}
		prev = e
	}
}

// TestAllReduceByHand works the collective formula α + 2(n−1)/n·bytes/β.
func TestAllReduceByHand(t *testing.T) {
	f := AllReduceFigures{LatencyUs: 8, BusGBs: 300}
	// 4 GPUs, 16 MiB: 2·3/4 · 16,777,216 / 300e9 = 83.886 µs, + 8 µs.
	if got, want := f.AllReduceSeconds(16<<20, 4), 8e-6+1.5*16777216/300e9; math.Abs(got-want) > 1e-15 {
		t.Errorf("AllReduceSeconds(16 MiB, 4) = %v; want %v", got, want)
	}
	if got := f.AllReduceSeconds(1<<20, 1); got != 0 {
		t.Errorf("AllReduceSeconds(n=1) = %v; want 0", got)
	}
	// Gather: (n−1)/n of the bytes cross the link.
	if got, want := f.GatherSeconds(8e6, 2), 8e-6+0.5*8e6/300e9; math.Abs(got-want) > 1e-15 {
		t.Errorf("GatherSeconds(8 MB, 2) = %v; want %v", got, want)
	}
}

// TestAllReduceAgainstNCCLTests checks the PCIe link figures against the
// nccl-tests all_reduce_perf times they were read from
// (https://github.com/NVIDIA/nccl-tests/issues/287: 4× RTX 5090, PCIe 5,
// no P2P, NCCL 2.26; out-of-place µs).
func TestAllReduceAgainstNCCLTests(t *testing.T) {
	var l LinkKind
	for _, k := range Links() {
		if k.Name == "pcie5-nop2p" {
			l = k
		}
	}
	for _, c := range []struct {
		bytes float64
		us    float64
	}{{1 << 20, 93.45}, {4 << 20, 261.4}, {16 << 20, 935.7}, {32 << 20, 1860.0}} {
		got := l.AllReduceSeconds(c.bytes, 4) * 1e6
		t.Logf("all-reduce %.0f MiB on 4 GPUs: model %.1f µs, measured %.1f µs", c.bytes/(1<<20), got, c.us)
		if !within(got, c.us, 0.10) {
			t.Errorf("pcie5-nop2p all-reduce of %.0f MiB over 4 = %.1f µs; want within 10 %% of the measured %.1f µs", c.bytes/(1<<20), got, c.us)
		}
	}
}

// TestStepKindByHand works the fixed costs of each step kind on a
// deployment whose kernels cost (nearly) nothing, so the overhead is what
// is left.
func TestStepKindByHand(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	e := DefaultEfficiency()
	d.Eff.GraphMaxTokens = 512
	layers := 32.0
	var dec, mixed, eager Batch
	for range 8 {
		dec.Add(1, 100, false)
		mixed.Add(1, 100, false)
		eager.Add(1, 100, false)
	}
	mixed.Add(200, 0, true) // 208 tokens: within the largest CUDA graph
	eager.Add(600, 0, true) // 608 tokens: eager
	tests := []struct {
		name          string
		b             *Batch
		decode, eager bool
		wantUs        float64
	}{
		{"decode only: full CUDA graph", &dec, true, false, e.IterationUs + 8*e.RequestUs},
		{"with prefill: piecewise", &mixed, false, false, e.IterationUs + 9*e.RequestUs + layers*e.LayerUs},
		{"larger than any graph: eager", &eager, false, true, e.IterationUs + 9*e.RequestUs + layers*e.EagerLayerUs},
	}
	for _, tt := range tests {
		br := d.Breakdown(tt.b)
		if br.Decode != tt.decode || br.Eager != tt.eager || math.Abs(br.Overhead*1e6-tt.wantUs) > 1e-6 {
			t.Errorf("%s: decode %v eager %v overhead %.3f µs; want %v %v %.3f µs", tt.name, br.Decode, br.Eager, br.Overhead*1e6, tt.decode, tt.eager, tt.wantUs)
		}
		if sum := br.GEMM + br.Attn + br.Elementwise + br.Comm + br.Overhead; math.Abs(sum-br.Total) > 1e-15 {
			t.Errorf("%s: parts sum to %v; Total %v", tt.name, sum, br.Total)
		}
	}
	if got := GraphCaptureTokens(128); got != 256 {
		t.Errorf("GraphCaptureTokens(128) = %v; want 256 (2 × max_num_seqs)", got)
	}
	if got := GraphCaptureTokens(1024); got != 512 {
		t.Errorf("GraphCaptureTokens(1024) = %v; want 512 (vLLM's cap)", got)
	}
}

// TestDecodeA100 checks the seed's anchor: Llama-3-8B bf16 on A100-80GB at
// batch 1 is memory-bound, its floor the weight bytes at the datasheet
// bandwidth (≈ 7.4 ms; the "≈ 8 ms" of the issue counts the input
// embedding too, which a step does not read), and the step the weights at
// the sustained bandwidth plus the fixed costs.
func TestDecodeA100(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "a100-80gb", 1, "bf16")
	var b Batch
	b.Add(1, 512, false)
	br := d.Breakdown(&b)
	// Weights read per step: 32 layers × 218,103,808 params + LM head
	// 525,336,576 = 7,504,658,432 params × 2 B = 15,009,316,864 B.
	const weights = 15_009_316_864.0
	floor := weights / 2.039e12 // 7.361 ms at the datasheet
	if br.GEMMCompute >= br.GEMMMemory {
		t.Errorf("decode GEMMs compute %.3f ms ≥ memory %.3f ms; want memory-bound", br.GEMMCompute*1e3, br.GEMMMemory*1e3)
	}
	// At the sustained copy bandwidth (1550 GB/s) × the streaming
	// fraction; activations add 0.03 %.
	want := weights / (1550e9 * DefaultEfficiency().Memory)
	if !within(br.GEMMMemory, want, 0.005) {
		t.Errorf("GEMMMemory = %.3f ms; want %.3f ms", br.GEMMMemory*1e3, want*1e3)
	}
	if br.Total < floor || br.Total > 1.6*floor {
		t.Errorf("decode step = %.3f ms; want between the %.3f ms floor and 1.6× it", br.Total*1e3, floor*1e3)
	}
	t.Logf("A100-80GB Llama-3.1-8B decode batch 1: %.3f ms (floor %.3f ms at the datasheet, weights %.3f ms sustained, overhead %.3f ms)",
		br.Total*1e3, floor*1e3, br.GEMMMemory*1e3, br.Overhead*1e3)
}

func TestPrefillComputeBound(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "a100-80gb", 1, "bf16")
	var b Batch
	b.Add(1024, 0, true)
	br := d.Breakdown(&b)
	if br.GEMMCompute <= br.GEMMMemory {
		t.Errorf("1024-token prefill: compute %.3f ms ≤ memory %.3f ms; want compute-bound", br.GEMMCompute*1e3, br.GEMMMemory*1e3)
	}
	// 2 × 6,979,321,856 layer params × 1024 tokens at 271.2 TFLOP/s ×
	// 1024/1088, plus the LM head's one row at 1/65.
	want := 2*6_979_321_856.0*1024/(271.2e12*1024/1088) + 2*525_336_576.0/(271.2e12/65)
	if !within(br.GEMMCompute, want, 1e-9) {
		t.Errorf("GEMMCompute = %.4f ms; want %.4f ms", br.GEMMCompute*1e3, want*1e3)
	}
	t.Logf("A100-80GB Llama-3.1-8B 1024-token prefill: %.3f ms (GEMM compute %.3f, memory %.3f)", br.Total*1e3, br.GEMMCompute*1e3, br.GEMMMemory*1e3)
}

// layerGEMMUs is one layer's four weight GEMMs (qkv, o, gate_up, down) over
// m tokens, µs.
func layerGEMMUs(d *Deployment, m float64) float64 {
	var s float64
	for i := range d.dense {
		_, _, t := d.gemmSeconds(&d.dense[i], m, 1, d.dense[i].weights)
		s += t
	}
	return s * 1e6
}

// attnLayerUs is one layer's attention for batch b, µs.
func attnLayerUs(d *Deployment, b *Batch) float64 {
	return d.Breakdown(b).Attn / float64(d.Model.Layers) * 1e6
}

// vllmKernels are vLLM 0.19's own kernel times for Llama-3.1-8B bf16 as
// LLMServingSim's profiler measured them (CUDA events, one layer, eager),
// from its public bundles
// https://github.com/casys-kaist/LLMServingSim profiler/perf/<GPU>/
// meta-llama/Llama-3.1-8B/bf16/tp<N>/{dense,attention}.csv: the sum of the
// qkv, o, gate_up and down GEMMs of one layer by tokens, and attention of
// one layer by shape, µs.
var vllmKernels = []struct {
	gpu   string
	tp    int
	gemms map[float64]float64 // tokens → µs, one layer's four GEMMs
	attn  []struct {
		prefill, kvPrefill, decodes, kvDecode int
		us                                    float64
	}
}{
	{"rtx-pro-6000", 1,
		map[float64]float64{1: 306.5, 64: 331.7, 128: 349.5, 256: 416.6, 512: 671.0, 1024: 1187.4, 2048: 2257.7},
		[]struct {
			prefill, kvPrefill, decodes, kvDecode int
			us                                    float64
		}{{0, 0, 128, 1024, 404.9}, {0, 0, 128, 2048, 760.1}, {0, 0, 64, 1024, 221.2}, {2048, 0, 0, 0, 172.6}, {1024, 1024, 0, 0, 126.5}, {512, 0, 128, 1024, 735.1}, {1024, 0, 128, 1024, 824.6}}},
	{"rtx-4090", 1,
		map[float64]float64{1: 467.1, 64: 532.4, 128: 601.9, 256: 724.1, 512: 1387.1, 1024: 2723.0, 2048: 5406.9},
		[]struct {
			prefill, kvPrefill, decodes, kvDecode int
			us                                    float64
		}{{0, 0, 128, 1024, 606.2}, {0, 0, 128, 2048, 1180.0}, {0, 0, 64, 1024, 333.3}, {2048, 0, 0, 0, 336.1}, {1024, 1024, 0, 0, 246.5}, {512, 0, 128, 1024, 1544.9}, {1024, 0, 128, 1024, 1657.9}}},
	// TP2 shards on the RTX PRO 6000 (PCIe): half the heads and
	// intermediate per GPU.
	{"rtx-pro-6000", 2,
		map[float64]float64{1: 160.9, 64: 176.5, 128: 189.0, 256: 222.7, 512: 369.6, 1024: 644.3, 2048: 1175.0},
		[]struct {
			prefill, kvPrefill, decodes, kvDecode int
			us                                    float64
		}{{0, 0, 128, 1024, 225.2}, {0, 0, 128, 2048, 403.1}, {2048, 0, 0, 0, 106.8}, {1024, 0, 128, 1024, 432.5}}},
}

// TestKernelsAgainstVLLM compares the model's per-layer GEMM and attention
// times with vLLM's measured kernels on two GPUs and at TP2 over PCIe. The
// bounds are what a datasheet-free first-principles model holds to across
// the whole range (small-M GEMMs sit between the memory and the compute
// roofline, where max() is optimistic); the mean is tighter.
func TestKernelsAgainstVLLM(t *testing.T) {
	for _, k := range vllmKernels {
		d := deployment(t, "llama-3.1-8b", k.gpu, k.tp, "bf16")
		var sum float64
		for m, want := range k.gemms {
			got := layerGEMMUs(d, m)
			sum += math.Abs(got/want - 1)
			t.Logf("%s TP%d GEMMs M=%4.0f: model %7.1f µs, vLLM %7.1f µs (%+.0f%%)", k.gpu, k.tp, m, got, want, 100*(got/want-1))
			if !within(got, want, 0.25) {
				t.Errorf("%s TP%d one layer's GEMMs at M=%v = %.1f µs; want within 25 %% of vLLM's %.1f µs", k.gpu, k.tp, m, got, want)
			}
		}
		if mean := sum / float64(len(k.gemms)); mean > 0.15 {
			t.Errorf("%s TP%d GEMMs: mean |error| %.1f %%; want ≤ 15 %%", k.gpu, k.tp, 100*mean)
		}
		for _, a := range k.attn {
			var b Batch
			if a.prefill > 0 {
				b.Add(a.prefill, a.kvPrefill, true)
			}
			for range a.decodes {
				b.Add(1, a.kvDecode-1, false)
			}
			got := attnLayerUs(d, &b)
			t.Logf("%s TP%d attention prefill %d@%d + %d decodes@%d: model %.1f µs, vLLM %.1f µs (%+.0f%%)", k.gpu, k.tp, a.prefill, a.kvPrefill, a.decodes, a.kvDecode, got, a.us, 100*(got/a.us-1))
			if !within(got, a.us, 0.35) {
				t.Errorf("%s TP%d attention prefill %d@%d + %d decodes@%d = %.1f µs; want within 35 %% of vLLM's %.1f µs", k.gpu, k.tp, a.prefill, a.kvPrefill, a.decodes, a.kvDecode, got, a.us)
			}
		}
	}
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
	// A chunk against a long context costs more than the same chunk alone.
	var fresh, late Batch
	fresh.Add(512, 0, true)
	late.Add(512, 8192, true)
	if f, l := d.Breakdown(&fresh), d.Breakdown(&late); !(l.AttnCompute > 10*f.AttnCompute) {
		t.Errorf("512-token chunk after 8192 cached: attention %.3f ms; alone %.3f ms; want far more", l.AttnCompute*1e3, f.AttnCompute*1e3)
	}
	// Decodes cost more in a step that carries prefill (padded tiles).
	var dec, mix Batch
	for range 64 {
		dec.Add(1, 2000, false)
		mix.Add(1, 2000, false)
	}
	mix.Add(16, 0, true)
	if a, b := d.Breakdown(&dec).AttnCompute, d.Breakdown(&mix).AttnCompute; !(b > 30*a) {
		t.Errorf("64 decodes' attention compute %.3f ms alone, %.3f ms beside a prefill chunk; want the padded tiles to cost far more", a*1e3, b*1e3)
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
	// PCIe without P2P all-reduces far slower than NVLink.
	l := deployment(t, "llama-3.1-8b", "l40s", 2, "bf16")
	var big Batch
	big.Add(2048, 0, true)
	if lc, hc := l.Breakdown(&big).Comm, d2.Breakdown(&big).Comm; lc <= 5*hc {
		t.Errorf("PCIe comm %.3f ms ≤ 5 × NVLink %.3f ms", lc*1e3, hc*1e3)
	}
	// MoE decode reads only the touched experts: far fewer bytes than all.
	moe := deployment(t, "qwen3-30b-a3b", "h100-sxm", 1, "bf16")
	all := float64(moe.Model.Layers) * moe.layerWeights
	if got := moe.Breakdown(&b).GEMMMemory * moe.bw; got > all/4 {
		t.Errorf("MoE batch-1 decode reads %.1f GB; want < a quarter of the %.1f GB of weights", got/1e9, all/1e9)
	}
	// An MLA model's KV per token is its latent, replicated under TP.
	ds, err := LookupModel("testdata/hf/DeepSeek-V3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := LookupGPU("h200")
	dd, err := NewDeployment(ds, g, 8, "fp8", "auto")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dd.KVBytesPerTokenPerGPU(), 61.0*576*2; got != want {
		t.Errorf("DeepSeek-V3 TP8 KV bytes per token per GPU = %v; want %v (latent + rope, bf16, replicated)", got, want)
	}
}

// TestBreakdownAllocFree keeps the hot path allocation-free.
func TestBreakdownAllocFree(t *testing.T) {
	d := deployment(t, "qwen3-30b-a3b", "h100-sxm", 2, "bf16")
	var b Batch
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset()
		for i := range 64 {
			b.Add(1, 1000+i, false)
		}
		b.Add(512, 0, true)
		_ = d.IterationNs(&b)
	})
	if allocs != 0 {
		t.Errorf("IterationNs allocates %v times per step; want 0", allocs)
	}
}

func BenchmarkIterationNs(b *testing.B) {
	d := deployment(b, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	var batch Batch
	for i := range 64 {
		batch.Add(1, 1000+i, false)
	}
	batch.Add(256, 512, true)
	for b.Loop() {
		_ = d.IterationNs(&batch)
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
