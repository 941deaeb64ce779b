package costmodel

import (
	"math"
	"testing"
)

func TestTokensPerStep(t *testing.T) {
	tests := []struct {
		name  string
		alpha float64
		k     int
		want  float64
	}{
		{"always accepted", 1, 4, 5},
		{"half, one draft", 0.5, 1, 1.5},
		{"0.7, four drafts", 0.7, 4, (1 - math.Pow(0.7, 5)) / 0.3},
		{"no drafts", 0.7, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TokensPerStep(tt.alpha, tt.k); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("TokensPerStep(%v, %d) = %v; want %v", tt.alpha, tt.k, got, tt.want)
			}
		})
	}
}

// specBatches builds the batches of one step of seqs decodes at context
// ctx: the step without drafts, the verification step with k drafts each,
// and the drafting sequences.
func specBatches(seqs, ctx, k int) (base, verify, drafts Batch) {
	for range seqs {
		base.Add(1, ctx, false)
		verify.Add(1+k, ctx, false)
		drafts.Add(1, ctx, false)
	}
	return base, verify, drafts
}

// TestSpecStepCost checks the verification step's price: at batch 1 it
// costs about what a plain decode step does (weights dominate, the extra
// rows are nearly free) plus the drafts; at batch 64 the k+1 rows per
// sequence make it markedly dearer.
func TestSpecStepCost(t *testing.T) {
	d := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	const k = 4
	free := &SpecDecode{K: k, CostFrac: 0.05}
	ratio := func(seqs int) (verifyOverBase, draftOverBase float64) {
		base, verify, drafts := specBatches(seqs, 1024, k)
		b := float64(d.IterationNs(&base))
		v := float64(free.StepNs(d, &verify, seqs*k, &drafts))
		dr := free.DraftSeconds(d, &drafts) * 1e9
		return (v - dr) / b, dr / b
	}
	v1, d1 := ratio(1)
	if v1 < 1 || v1 > 1.05 {
		t.Errorf("batch 1: verification step / decode step = %.3f; want in [1, 1.05] (memory-bound)", v1)
	}
	if math.Abs(d1-k*0.05) > 1e-3 {
		t.Errorf("batch 1: free draft / decode step = %.4f; want k × 0.05 = %.2f", d1, k*0.05)
	}
	if v64, _ := ratio(64); v64 < v1+0.1 {
		t.Errorf("batch 64: verification step / decode step = %.3f; want well above batch 1's %.3f (compute grows with k+1 rows)", v64, v1)
	}
}

// TestSpecDraftModel checks a draft model's passes: K decode steps of the
// small model without the engine's fixed cost, cheaper than the target's.
func TestSpecDraftModel(t *testing.T) {
	target := deployment(t, "llama-3.1-8b", "h100-sxm", 1, "bf16")
	small := Model{Name: "draft-1b", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true}
	g, err := LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	dd, err := NewDeployment(small, g, 1, "bf16", "auto")
	if err != nil {
		t.Fatal(err)
	}
	s := &SpecDecode{K: 3, Draft: dd}
	base, _, drafts := specBatches(8, 2048, 3)
	br := dd.Breakdown(&drafts)
	want := 3 * (br.Total - br.Overhead)
	if got := s.DraftSeconds(target, &drafts); math.Abs(got-want) > 1e-12 {
		t.Errorf("DraftSeconds = %v; want 3 × (draft step − overhead) = %v", got, want)
	}
	if got, tgt := s.DraftSeconds(target, &drafts)/3, target.Breakdown(&base).Total; got >= tgt/2 {
		t.Errorf("one draft pass %.3g s; want well under the target's step %.3g s", got, tgt)
	}
	var empty Batch
	if got := s.StepNs(target, &empty, 0, &empty); got != 0 {
		t.Errorf("StepNs(empty) = %d; want 0", got)
	}
}
