package costmodel

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goodput/goodput/internal/shareddata"
)

// update regenerates the built-in kernel tables from the shared data:
//
//	go test ./internal/sim/costmodel -run TestBuiltinKernelTables -update
var update = flag.Bool("update", false, "regenerate profiles/kernels/*.csv from ../shared/data")

// aicSet is the shared data folder of aiconfigurator's tables and its
// citation in every built-in table.
const aicSet = "aic-kernel-db-vllm0.19"

// builtinKernelGPUs maps each built-in GPU with kernel tables to its
// aiconfigurator file prefix.
var builtinKernelGPUs = map[string]string{"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "rtx-pro-6000": "rtx_pro_6000_server"}

// compactModels and compactTPs are the deployments whose shapes the
// built-in tables keep.
var (
	compactModels = []string{"llama-3.1-8b", "qwen3-32b", "llama-3.1-70b"}
	compactTPs    = []int{1, 2, 4, 8}
	// attnTPs: attention is kept (every measured batch and length) at the
	// heads per GPU of these deployments only; other head counts of the
	// same grouping scale from them.
	attnTPs = map[string]bool{"llama-3.1-8b/1": true, "llama-3.1-8b/2": true, "qwen3-32b/1": true, "qwen3-32b/2": true, "llama-3.1-70b/4": true, "llama-3.1-70b/8": true}
)

// compactRows selects from a GPU's full aiconfigurator rows the ones the
// built-in deployments need: every GEMM (bf16, fp8) whose (n, k) brackets
// a weight of theirs, at every measured m; bf16-KV attention of their
// heads per GPU on a coarser grid; every all-reduce.
func compactRows(t *testing.T, rows []KernelRow) []KernelRow {
	t.Helper()
	full, err := NewKernelTables(rows, "")
	if err != nil {
		t.Fatal(err)
	}
	g := full.gemm["bf16"]
	type nk struct{ n, k float64 }
	keepGEMM := map[nk]bool{}
	type hk struct{ heads, kv, hd int }
	keepAttn := map[hk]bool{}
	corners := func(xs []float64, x float64) []float64 {
		x = math.Min(x, xs[len(xs)-1])
		if x < xs[0] {
			return nil
		}
		lo, hi, _ := bracket(xs, x)
		return []float64{lo, hi}
	}
	gpu, _ := LookupGPU("h100-sxm")
	for _, name := range compactModels {
		m, err := LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range compactTPs {
			d, err := NewDeployment(m, gpu, tp, "bf16", "auto")
			if err != nil {
				continue
			}
			for _, w := range append(slices.Clone(d.dense), d.head) {
				for _, n := range corners(g.ns, w.n) {
					for _, k := range corners(g.ks, w.k) {
						keepGEMM[nk{n, k}] = true
					}
				}
			}
			if attnTPs[fmt.Sprintf("%s/%d", name, tp)] {
				keepAttn[hk{m.Heads / tp, max(1, m.KVHeads/tp), m.headDim()}] = true
			}
		}
	}
	var out []KernelRow
	for _, r := range rows {
		switch r.Kernel {
		case KernelGEMM:
			if !keepGEMM[nk{r.N, r.K}] {
				continue
			}
		case KernelPrefillAttn, KernelDecodeAttn:
			if normDType(r.DType) != "bf16" || !keepAttn[hk{r.Heads, r.KVHeads, r.HeadDim}] {
				continue
			}
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b KernelRow) int {
		ka := fmt.Sprintf("%s|%s|%08d|%08d|%03d|%03d|%08.0f|%02d|%012.0f|%08.0f|%08.0f", a.Kernel, a.DType, int(a.N), int(a.K), a.Heads, a.KVHeads, a.Batch, a.GPUs, a.Bytes, a.M, a.Len)
		kb := fmt.Sprintf("%s|%s|%08d|%08d|%03d|%03d|%08.0f|%02d|%012.0f|%08.0f|%08.0f", b.Kernel, b.DType, int(b.N), int(b.K), b.Heads, b.KVHeads, b.Batch, b.GPUs, b.Bytes, b.M, b.Len)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return out
}

// TestBuiltinKernelTables checks that every built-in kernel table is what
// the generator makes of the shared data (and with -update writes it).
func TestBuiltinKernelTables(t *testing.T) {
	dir := shareddata.Path(t, aicSet)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_ = readme
	for gpu, prefix := range builtinKernelGPUs {
		rows, err := ReadAICRows(dir, prefix)
		if err != nil {
			t.Fatal(err)
		}
		kept := compactRows(t, rows)
		var buf bytes.Buffer
		comments := []string{
			fmt.Sprintf("Built-in kernel table of %s: %d of the %d measured kernel times of NVIDIA aiconfigurator's", gpu, len(kept), len(rows)),
			"public performance database (Apache-2.0), vLLM 0.19's own kernels (the latest 0.19.x measured) timed by its collectors:",
			"ai-dynamo/aiconfigurator commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce,",
			fmt.Sprintf("aic-core/src/aiconfigurator_core/systems/data/%s/{gemm,attention,comm}/vllm/0.19.*/*.parquet", prefix),
			"(as CSV in goodput's shared data, " + aicSet + "/" + prefix + "_*.csv).",
			"Kept: the GEMMs bracketing the weights of llama-3.1-8b, qwen3-32b and llama-3.1-70b at TP 1-8 (bf16, fp8),",
			"bf16-KV prefill and decode attention at the heads per GPU of llama-3.1-8b TP1/2, qwen3-32b TP1/2, llama-3.1-70b TP4/8, every all-reduce.",
			"Generated; do not edit: go test ./internal/sim/costmodel -run TestBuiltinKernelTables -update",
		}
		if err := WriteKernelRows(&buf, comments, kept); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("profiles", "kernels", gpu+".csv")
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with -update)", err)
		}
		if !bytes.Equal(have, buf.Bytes()) {
			t.Errorf("%s differs from what the shared data generates; regenerate with -update", path)
		}
	}
}
