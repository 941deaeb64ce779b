package costmodel

import "math"

// AllToAllSeconds is the time of one all-to-all over n GPUs on f in which
// each GPU holds bytes to scatter over all n (itself included): α + (n−1)/n
// × bytes/β, seconds; 0 for n ≤ 1. The (n−1)/n share is what leaves the
// GPU (its own slice stays); nccl-tests reports alltoall_perf's bus
// bandwidth with the same factor (busbw = algbw × (n−1)/n), so β here is a
// bus bandwidth as for the all-reduce. Using the all-reduce's α and β for
// an all-to-all is an assumption (derived, not measured): on a switched
// fabric (NVSwitch) every GPU sends and receives at line rate in both
// collectives; on PCIe an all-to-all can be slower.
func (f AllReduceFigures) AllToAllSeconds(bytes float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	t := float64(n)
	return f.LatencyUs*1e-6 + (t-1)/t*bytes/(f.BusGBs*1e9)
}

// MoE reports whether the model has MoE layers (routed experts).
func (d *Deployment) MoE() bool { return d.moeLayer > 0 }

// EPAllToAllBytes is what one rank sends in one direction (dispatch, or
// combine) of one MoE layer's all-to-all for tokens of its own: each token
// goes to its top-k experts as a 16-bit hidden vector, tokens × k × hidden
// × 2 bytes.
func (d *Deployment) EPAllToAllBytes(tokens int) float64 {
	return float64(tokens) * float64(d.Model.ActiveExperts) * float64(d.Model.Hidden) * 2
}

// EPCommSeconds is the expert-parallel communication of one step over
// ranks GPUs, seconds: per MoE layer a dispatch and a combine all-to-all,
// each lasting as long as the rank with the most tokens (maxTokens, the
// largest of the step's per-rank token counts) takes to send its share:
// layers × 2 × AllToAllSeconds(EPAllToAllBytes(maxTokens), ranks). The α
// is paid even when every rank is idle (the dummy forward still runs the
// collectives). 0 for a dense model or ranks ≤ 1.
func (d *Deployment) EPCommSeconds(maxTokens, ranks int) float64 {
	if d.moeLayer == 0 || ranks <= 1 {
		return 0
	}
	return d.moeLayer * 2 * d.Link.AllToAllSeconds(d.EPAllToAllBytes(maxTokens), ranks)
}

// DummyStepNs is the time of the dummy forward vLLM runs on an idle
// data-parallel rank under expert parallelism so that the MoE collectives
// have every rank: a one-token decode step (no communication of its own),
// ns.
func (d *Deployment) DummyStepNs() int64 {
	var b Batch
	b.Add(1, 0, false)
	return d.IterationNs(&b)
}

// EPExpertDeltaSeconds is how much longer (negative: shorter) one rank's
// routed-expert GEMMs take under expert parallelism over ranks GPUs than
// the engine alone charges for them, seconds. Alone, a step's localTokens
// go to all E experts, each sharded 1/TP wide; under EP the GPU holds
// E/ranks whole experts and runs the tokens routed to them from every
// rank: globalTokens × top-k / ranks rows (routing taken as uniform), over
// the experts of its own those rows touch, reading only their weights. 0
// with a measured table or fit (the step time is theirs) or a dense
// model.
func (d *Deployment) EPExpertDeltaSeconds(localTokens, globalTokens, ranks int) float64 {
	if d.moeLayer == 0 || ranks < 1 || d.Table != nil || d.Fit != nil {
		return 0
	}
	m := &d.Model
	ex, k := float64(m.Experts), float64(m.ActiveExperts)
	alone := 0.0
	if localTokens > 0 {
		tok := float64(localTokens)
		touched := ex * (1 - math.Pow(1-k/ex, tok))
		_, _, t := d.gemmSeconds(&d.experts, tok*k, touched, touched*d.expertBytes)
		alone = t * d.experts.count
	}
	ep := 0.0
	if globalTokens > 0 {
		h, ei := float64(m.Hidden), float64(m.ExpertIntermediate)
		whole := gemm{flops: 2 * (h*2*ei + ei*h), act: 2 * (h + 2*ei + ei + h), weights: 3 * h * ei * d.weightBytes, count: d.moeLayer}
		n := float64(ranks)
		g := float64(globalTokens)
		touched := ex / n * (1 - math.Pow(1-k/ex, g))
		_, _, t := d.gemmSeconds(&whole, g*k/n, touched, touched*whole.weights)
		ep = t * whole.count
	}
	return ep - alone
}
