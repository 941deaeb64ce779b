package costmodel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/shareddata"
)

// tabled is a deployment of the built-in GPU gpu with its built-in kernel
// table switched on (whether or not its profile turns it on).
func tabled(t *testing.T, model, gpu string, tp int) *Deployment {
	t.Helper()
	m, err := LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	g.Kernels = g.Name + ".csv"
	d, err := NewDeployment(m, g, tp, "bf16", "auto")
	if err != nil {
		t.Fatal(err)
	}
	if d.plan == nil || d.plan.prefill == nil || d.plan.dense == nil {
		t.Fatalf("%s on %s TP%d: kernel tables do not cover it", model, gpu, tp)
	}
	return d
}

// TestKernelTablesAgainstMeasured checks, for each GPU with a built-in
// table, that the compact table as the step cost looks it up reproduces
// every measured kernel time of the full shared tables at the shapes of
// Llama-3.1-8B and Qwen3-32B (TP1 and TP2) within 10 %, over the tables'
// range: the GEMMs at their exact weights, prefill and decode attention
// at every measured batch and length, the all-reduce at every size. The
// compact table keeps these points; what is checked is the lookup the step
// cost makes (resampled per deployment on quarter-octave grids) and the
// generator's selection.
func TestKernelTablesAgainstMeasured(t *testing.T) {
	dir := shareddata.Path(t, aicSet)
	for gpu, prefix := range builtinKernelGPUs {
		rows, err := ReadAICRows(dir, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, model := range []string{"llama-3.1-8b", "qwen3-32b"} {
			for _, tp := range []int{1, 2} {
				d := tabled(t, model, gpu, tp)
				kt, _ := d.GPU.kernelTables()
				m := &d.Model
				heads, kvHeads := m.Heads/tp, max(1, m.KVHeads/tp)
				var n, bad int
				worst := 0.0
				check := func(what string, got, want float64) {
					n++
					e := got/want - 1
					worst = math.Max(worst, math.Abs(e))
					if math.Abs(e) > 0.10 {
						bad++
						t.Errorf("%s %s TP%d %s = %.2f µs; measured %.2f µs (%+.0f %%)", gpu, model, tp, what, got*1e6, want*1e6, 100*e)
					}
				}
				shapes := map[[2]float64]bool{}
				for _, g := range d.dense {
					shapes[[2]float64{g.n, g.k}] = true
				}
				for _, r := range rows {
					want := r.TimeUs * 1e-6
					switch r.Kernel {
					case KernelGEMM:
						if r.DType != "bf16" || !shapes[[2]float64{r.N, r.K}] {
							continue
						}
						got, _ := kt.GEMMSeconds("bf16", r.M, r.N, r.K)
						check(fmt.Sprintf("GEMM %vx%vx%v", r.M, r.N, r.K), got, want)
					case KernelPrefillAttn, KernelDecodeAttn:
						if r.DType != "bf16" || r.Heads != heads || r.KVHeads != kvHeads {
							continue
						}
						if r.Kernel == KernelPrefillAttn {
							// Rows faster than the sustained tensor rate
							// (the H200's) are held to that roofline.
							want = math.Max(want, r.Batch*r.Len*(r.Len+1)/2*d.attnFlops/float64(m.Layers)/(d.Sustained.BF16TFLOPS*1e12))
							check(fmt.Sprintf("prefill attention b=%v l=%v", r.Batch, r.Len), d.plan.prefill.at(r.Batch, r.Len), want)
						} else {
							check(fmt.Sprintf("decode attention b=%v l=%v", r.Batch, r.Len), d.plan.decode.at(r.Batch, r.Len), want)
						}
					case KernelAllReduce:
						if r.GPUs != tp {
							continue
						}
						got, _ := kt.AllReduceSeconds(r.Bytes, tp, false)
						check("all-reduce", got, want)
					}
				}
				t.Logf("%s %s TP%d: %d measured kernels, %d off by > 10 %%, worst %.1f %%", gpu, model, tp, n, bad, 100*worst)
				if n < 100 {
					t.Errorf("%s %s TP%d: only %d measured kernels compared", gpu, model, tp, n)
				}
			}
		}
	}
}

// TestKernelTablesShowFloorsAndLength checks what the tables teach the
// formula: a kernel costs several µs however little it does, and
// attention's rate rises with the length it runs over.
func TestKernelTablesShowFloorsAndLength(t *testing.T) {
	for gpu := range builtinKernelGPUs {
		d := tabled(t, "llama-3.1-8b", gpu, 1)
		p := d.plan
		// Decode attention of one sequence over one token, and over 64.
		one, short := p.decode.at(1, 1), p.decode.at(1, 64)
		if one < 5e-6 || short > 1.5*one {
			t.Errorf("%s decode attention: 1 token %.1f µs, 64 tokens %.1f µs; want a floor of ≥ 5 µs that 64 tokens barely move", gpu, one*1e6, short*1e6)
		}
		// The smallest tabled weight (Llama-3.1-70B's q/k/v at TP8 lies
		// above it): one row, and sixteen, cost the same several µs.
		if g, _ := d.GPU.kernelTables(); g != nil {
			one, ok := g.GEMMSeconds("bf16", 1, 1024, 8192)
			sixteen, _ := g.GEMMSeconds("bf16", 16, 1024, 8192)
			if !ok || one < 3e-6 || sixteen > 1.25*one {
				t.Errorf("%s GEMM 1024×8192: 1 row %.1f µs, 16 rows %.1f µs; want a floor of ≥ 3 µs that 16 rows barely move", gpu, one*1e6, sixteen*1e6)
			}
		}
		// Prefill attention's pairs per second at 8,192 tokens against 512.
		rate := func(l float64) float64 { return l * (l + 1) / 2 / p.prefill.at(1, l) }
		if r := rate(8192) / rate(512); r < 2.5 {
			t.Errorf("%s prefill attention rate at 8192 tokens / at 512 = %.1f; want ≥ 2.5 (efficiency rises with length)", gpu, r)
		}
		t.Logf("%s: decode attention floor %.1f µs; prefill attention %.0f G pairs/s at 512 tokens, %.0f at 8192", gpu, one*1e6, rate(512)/1e9, rate(8192)/1e9)
	}
}

// h200Part is one line of ../shared/data/h200-kernels/parts.jsonl.
type h200Part struct {
	Kind, Model, Shape, How string
	M, N, K, B, L           float64
	MS                      float64
}

func h200Parts(t *testing.T) []h200Part {
	f, err := os.Open(shareddata.Path(t, "h200-kernels/parts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []h200Part
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p h200Part
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestWholeStepAgainstH200Parts checks a whole decode step and a whole
// prefill of Llama-3.1-8B on the H200, GEMMs and attention of every
// layer, against the sum of the parts an independent H200 measured
// (../shared/data/h200-kernels: CUDA-graph replays; attention as cuDNN,
// which vLLM's FlashAttention-3 on Hopper
// is close to, and FlashAttention-2, which it beats: vLLM's kernel lies
// between them). The LM head, norms and sampler are not among those parts
// and not compared.
func TestWholeStepAgainstH200Parts(t *testing.T) {
	parts := h200Parts(t)
	d := tabled(t, "llama-3.1-8b", "h200", 1)
	layers := float64(d.Model.Layers)
	gemms := func(m float64) float64 { // Σ of the four GEMMs at M = m, one layer, s
		s, k := 0.0, 0
		for _, p := range parts {
			if p.Kind == "gemm" && strings.HasPrefix(p.Shape, "llama8b.") && p.M == m {
				s += p.MS * 1e-3
				k++
			}
		}
		if k != 4 {
			t.Fatalf("h200-kernels: %d llama8b GEMMs at M=%v; want 4", k, m)
		}
		return s
	}
	attn := func(kind, how string, b, l float64) float64 {
		for _, p := range parts {
			if p.Kind == kind && p.Model == "llama-3.1-8b" && p.How == how && (kind == "pattn" && p.N == l || kind == "dattn" && p.B == b && p.L == l) {
				return p.MS * 1e-3
			}
		}
		t.Fatalf("h200-kernels: no %s B=%v L=%v", kind, b, l)
		return 0
	}
	for _, c := range []struct {
		name         string
		decodes, ctx int
		prefill      int
	}{
		{"decode 1 × 2048", 1, 2048, 0},
		{"decode 64 × 2048", 64, 2048, 0},
		{"decode 128 × 2048", 128, 2048, 0},
		{"decode 256 × 2048", 256, 2048, 0},
		{"decode 64 × 512", 64, 512, 0},
		{"decode 256 × 512", 256, 512, 0},
		{"prefill 512", 0, 0, 512},
		{"prefill 2048", 0, 0, 2048},
		{"prefill 4096", 0, 0, 4096},
		{"prefill 8192", 0, 0, 8192},
	} {
		var b Batch
		var lo, hi float64
		if c.decodes > 0 {
			for range c.decodes {
				b.Add(1, c.ctx-1, false)
			}
			g := gemms(float64(c.decodes)) * layers
			lo, hi = g+attn("dattn", "cudnn", float64(c.decodes), float64(c.ctx)), g+attn("dattn", "flash", float64(c.decodes), float64(c.ctx))
		} else {
			b.Add(c.prefill, 0, true)
			g := gemms(float64(c.prefill)) * layers
			lo, hi = g+attn("pattn", "cudnn", 1, float64(c.prefill)), g+attn("pattn", "flash", 1, float64(c.prefill))
		}
		br := d.Breakdown(&b)
		got := d.plan.dense.at(float64(b.Tokens)) + br.Attn
		t.Logf("H200 Llama-3.1-8B %s: GEMMs + attention %.3f ms; measured parts %.3f (cuDNN attention) … %.3f ms (FlashAttention-2)", c.name, got*1e3, lo*1e3, hi*1e3)
		if got < 0.9*lo || got > 1.1*hi {
			t.Errorf("H200 Llama-3.1-8B %s = %.3f ms; want within 10 %% of the measured parts' %.3f … %.3f ms", c.name, got*1e3, lo*1e3, hi*1e3)
		}
	}
}

// BenchmarkBreakdown prices a decode step and a mixed step of
// Llama-3.1-8B on the H200 by the formula and by the kernel tables: a
// lookup must not be slower than the formula (the tables are resampled
// per deployment so that a step costs a few index computations).
func BenchmarkBreakdown(b *testing.B) {
	m, _ := LookupModel("llama-3.1-8b")
	g, _ := LookupGPU("h200")
	for _, tables := range []bool{false, true} {
		gg := g
		if !tables {
			gg.Kernels = ""
		}
		d, err := NewDeployment(m, gg, 2, "bf16", "auto")
		if err != nil {
			b.Fatal(err)
		}
		for _, mixed := range []bool{false, true} {
			var bt Batch
			for i := range 64 {
				bt.Add(1, 500+i*37, false)
			}
			if mixed {
				bt.Add(1500, 2048, true)
			}
			name := map[bool]string{false: "formula", true: "tables"}[tables] + map[bool]string{false: "/decode", true: "/mixed"}[mixed]
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					d.Breakdown(&bt)
				}
			})
		}
	}
}

// TestProfilerScriptTable loads a table in the form scripts/profile_kernels.py
// writes (its --synthetic mode: roofline times, the format of a measured
// run): a user's profile naming it prices every GEMM and attention of
// Llama-3.1-8B from it.
func TestProfilerScriptTable(t *testing.T) {
	g, err := LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	g.Kernels = "testdata/kernels-synthetic-llama-3.1-8b.csv"
	m, _ := LookupModel("llama-3.1-8b")
	d, err := NewDeployment(m, g, 1, "bf16", "auto")
	if err != nil {
		t.Fatal(err)
	}
	k := d.Kernels()
	if k.GEMMsLookedUp != k.GEMMs || !k.Attention || k.Source != g.Kernels {
		t.Errorf("Kernels() = %+v; want every GEMM and attention looked up from %s", k, g.Kernels)
	}
	// One decode of 256 cached tokens: the script's row (batch 1, len 255).
	var b Batch
	b.Add(1, 254, false)
	kt, _ := d.GPU.kernelTables()
	want, _ := kt.DecodeAttnSeconds("bf16", 1, 255, 32, 8, 128)
	if got := d.Breakdown(&b).Attn / float64(m.Layers); !within(got, want, 0.01) {
		t.Errorf("decode attention per layer = %.2f µs; want the table's %.2f µs", got*1e6, want*1e6)
	}
}

// FuzzParseKernelTables: any input is a table or an error, never a panic,
// and a parsed table answers lookups with finite times.
func FuzzParseKernelTables(f *testing.F) {
	f.Add("kernel,dtype,m,n,k,batch,len,heads,kv_heads,head_dim,gpus,bytes,time_us\ngemm,bf16,1,4096,4096,,,,,,,,13.3\n")
	f.Add("# c\nkernel,dtype,m,n,k,batch,len,heads,kv_heads,head_dim,gpus,bytes,time_us\ndecode_attention,bf16,,,,1,1,32,8,128,,,9.7\nallreduce,bf16,,,,,,,,,2,256,4.4\n")
	f.Fuzz(func(t *testing.T, in string) {
		kt, err := ParseKernelTables(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for _, x := range []float64{0.5, 1, 7, 1e6} {
			s, ok := kt.GEMMSeconds("bf16", x, 4096, 4096)
			if ok && (math.IsNaN(s) || math.IsInf(s, 0) || s < 0) {
				t.Fatalf("GEMMSeconds(%v) = %v", x, s)
			}
			s, ok = kt.DecodeAttnSeconds("bf16", x, x, 32, 8, 128)
			if ok && (math.IsNaN(s) || s < 0) {
				t.Fatalf("DecodeAttnSeconds(%v) = %v", x, s)
			}
		}
	})
}

// TestUserProfileKernels: a user's GPU profile names a kernel table beside
// it; a missing one is the lookup's error, naming the profile.
func TestUserProfileKernels(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/kernels-synthetic-llama-3.1-8b.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.csv"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	prof := "- name: mine\n  bf16_tflops: 989\n  bandwidth_gbs: 3350\n  memory_gib: 79\n  interconnect: nvlink\n  interconnect_gbs: 450\n  kernels: %s\n"
	for _, c := range []struct{ kernels, err string }{{"mine.csv", ""}, {"absent.csv", "absent.csv"}} {
		path := filepath.Join(dir, "gpu-"+c.kernels+".yaml")
		if err := os.WriteFile(path, []byte(fmt.Sprintf(prof, c.kernels)), 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := LookupGPU(path)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("LookupGPU(%s) = %v", c.kernels, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("LookupGPU(%s) error = %v; want one naming %s", c.kernels, err, c.err)
		case c.err == "":
			m, _ := LookupModel("llama-3.1-8b")
			d, err := NewDeployment(m, g, 1, "bf16", "auto")
			if err != nil || d.Kernels().GEMMsLookedUp != 5 {
				t.Errorf("deployment on %s: %v, %+v; want every GEMM looked up", path, err, d.Kernels())
			}
		}
	}
}

// TestLoadAICTables reads aiconfigurator's CSV layout as a profile would
// name it: the folder with the GPU's prefix, and the folder alone (an
// error naming the GPUs there, since it holds four).
func TestLoadAICTables(t *testing.T) {
	dir := shareddata.Path(t, aicSet)
	kt, err := LoadKernelTables(filepath.Join(dir, "h200_sxm"))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := kt.GEMMSeconds("bf16", 4096, 4096, 4096); !ok || !within(s, 175.5e-6, 0.01) {
		t.Errorf("h200 bf16 GEMM 4096³ = %v µs (%v); want the table's 175.5 µs", s*1e6, ok)
	}
	if s, ok := kt.AllReduceSeconds(128*2, 2, false); !ok || !within(s, 4.383e-6, 0.01) {
		t.Errorf("h200 all-reduce of 128 elements on 2 GPUs = %v µs; want 4.383", s*1e6)
	}
	if _, err := LoadKernelTables(dir); err == nil || !strings.Contains(err.Error(), "several GPUs") {
		t.Errorf("LoadKernelTables(%s) error = %v; want one naming several GPUs", dir, err)
	}
}
