package costmodel

import "math"

// SpecDecode prices speculative decoding: each decoding sequence proposes
// K draft tokens, then one target step verifies them. The verification
// step itself is an ordinary Batch in which such a sequence was added with
// 1 + drafts new tokens (the GEMMs' M grows by that much, attention reads
// the context once for all its queries); SpecDecode adds what that Batch
// does not count: the LM head and sampler over the extra positions, and
// the draft passes. Values are immutable and safe for concurrent use.
type SpecDecode struct {
	// K is the draft tokens proposed per sequence per step (≥ 1).
	K int
	// Draft is the draft model, deployed on the target's GPUs; nil means a
	// draft with no model of its own (n-gram lookup, an EAGLE head), priced
	// at CostFrac of the target's step.
	Draft *Deployment
	// CostFrac is, without a Draft model, the cost of one draft token as a
	// fraction of the target's decode step over the same sequences.
	CostFrac float64
}

// TokensPerStep is the expected tokens a sequence emits per verification
// step when each of k drafts is accepted with probability alpha, in order,
// until the first rejection, plus the target's own (bonus) token:
// E = (1 − α^(k+1)) / (1 − α), or k + 1 at α = 1.
func TokensPerStep(alpha float64, k int) float64 {
	if alpha >= 1 {
		return float64(k + 1)
	}
	return (1 - math.Pow(alpha, float64(k+1))) / (1 - alpha)
}

// StepNs is the time of one verification step, ns: the target's iteration
// over b, in which the drafting sequences were added with 1 + drafts
// tokens each; extraRows more logit rows than b.Seqs (the drafts, Σ over
// sequences) through the LM head, sampler and logit gather; and K draft
// passes over drafts, a Batch of the drafting sequences with one new token
// each at their contexts (0 for an empty b).
func (s *SpecDecode) StepNs(target *Deployment, b *Batch, extraRows int, drafts *Batch) int64 {
	if b.Seqs == 0 {
		return 0
	}
	t := target.Breakdown(b).Total + target.extraLogitSeconds(b.Seqs, extraRows) + s.DraftSeconds(target, drafts)
	return max(int64(math.Round(t*1e9)), 1)
}

// DraftSeconds is the time of the K draft passes over drafts (one token
// per drafting sequence), seconds: K decode steps of the draft model
// without the engine's fixed costs, which the verification step already
// pays, or K × CostFrac of the target's decode step; 0 for no sequences.
func (s *SpecDecode) DraftSeconds(target *Deployment, drafts *Batch) float64 {
	if drafts.Seqs == 0 {
		return 0
	}
	k := float64(s.K)
	if s.Draft == nil {
		return k * s.CostFrac * target.Breakdown(drafts).Total
	}
	br := s.Draft.Breakdown(drafts)
	return k * (br.Total - br.Overhead)
}

// extraLogitSeconds is the added cost of extra logit rows beyond seqs:
// the LM head's GEMM at the larger row count, the sampler's passes over
// the extra fp32 logits, and their gather across tensor-parallel ranks.
func (d *Deployment) extraLogitSeconds(seqs, extra int) float64 {
	if extra <= 0 {
		return 0
	}
	r0, r1 := float64(seqs), float64(seqs+extra)
	_, _, t0 := d.gemmSeconds(&d.head, r0, 1, d.head.weights)
	_, _, t1 := d.gemmSeconds(&d.head, r1, 1, d.head.weights)
	t := t1 - t0 + float64(extra)*d.logitBytes*3/d.bw
	if d.TP > 1 {
		v := float64(d.Model.Vocab) * 2
		t += d.Link.GatherSeconds(r1*v, d.TP) - d.Link.GatherSeconds(r0*v, d.TP)
	}
	return t
}
