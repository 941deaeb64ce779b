// Package costmodel computes how long one iteration of an LLM serving engine
// takes for a given batch shape, from first principles: the FLOPs and bytes
// each part of a transformer forward pass needs, a GPU's datasheet peaks,
// achievable fractions of those peaks, fixed overheads and a tensor-parallel
// all-reduce term. It also holds the GPU and model profiles (YAML, built in
// and user files) and an optional measured profile table that overrides the
// formula.
//
// Values of Deployment are immutable after NewDeployment and safe for
// concurrent use; Batch is a small accumulator owned by its caller.
package costmodel

import (
	"fmt"
	"math"
	"strings"
)

// GiB is 2^30 bytes.
const GiB = 1 << 30

// Efficiency is the achievable fraction of a GPU's peaks and the fixed
// overheads of one engine iteration. A zero field means the default from
// DefaultEfficiency.
//
// The defaults are physical, not fitted to one run: large BF16 GEMMs in
// cuBLAS/CUTLASS sustain 60–75 % of the dense datasheet peak once power and
// clocks settle; skinny decode GEMMs use the tensor cores far less; flash
// attention sustains about half of peak; streaming weights reaches about 80 % of
// the datasheet bandwidth and gathering paged KV blocks about 70 %. The overheads are what a
// CUDA-graphed vLLM V1 step costs beyond its kernels: scheduling and input
// preparation per iteration, kernel boundaries per layer, sampling and
// bookkeeping per scheduled request.
type Efficiency struct {
	// PrefillCompute is the GEMM fraction of peak FLOP/s for prefill tokens.
	PrefillCompute float64 `yaml:"prefill_compute,omitempty"`
	// DecodeCompute is the GEMM fraction of peak FLOP/s for decode tokens.
	DecodeCompute float64 `yaml:"decode_compute,omitempty"`
	// Attention is the attention kernels' fraction of peak FLOP/s.
	Attention float64 `yaml:"attention,omitempty"`
	// Memory is the fraction of peak bandwidth for streaming weights and
	// activations through the GEMMs.
	Memory float64 `yaml:"memory,omitempty"`
	// KVMemory is the fraction of peak bandwidth for attention's paged KV
	// reads and writes (small scattered blocks, lower than Memory).
	KVMemory float64 `yaml:"kv_memory,omitempty"`
	// IterationUs is the fixed cost of one iteration, µs.
	IterationUs float64 `yaml:"iteration_us,omitempty"`
	// LayerUs is the fixed cost per layer per iteration, µs.
	LayerUs float64 `yaml:"layer_us,omitempty"`
	// RequestUs is the cost per scheduled request per iteration, µs.
	RequestUs float64 `yaml:"request_us,omitempty"`
	// AllReduceUs is the latency of one all-reduce, µs (NVLink; PCIe
	// doubles it).
	AllReduceUs float64 `yaml:"allreduce_us,omitempty"`
}

// DefaultEfficiency returns the built-in efficiencies and overheads.
func DefaultEfficiency() Efficiency {
	return Efficiency{
		PrefillCompute: 0.60,
		DecodeCompute:  0.40,
		Attention:      0.45,
		Memory:         0.80,
		KVMemory:       0.70,
		IterationUs:    600,
		LayerUs:        10,
		RequestUs:      12,
		AllReduceUs:    8,
	}
}

func (e *Efficiency) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"prefill_compute", e.PrefillCompute}, {"decode_compute", e.DecodeCompute}, {"attention", e.Attention}, {"memory", e.Memory}, {"kv_memory", e.KVMemory}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			return fmt.Errorf("efficiency %s = %v must be in [0, 1]", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"iteration_us", e.IterationUs}, {"layer_us", e.LayerUs}, {"request_us", e.RequestUs}, {"allreduce_us", e.AllReduceUs}} {
		if f.v < 0 || math.IsNaN(f.v) {
			return fmt.Errorf("efficiency %s = %v must be ≥ 0", f.name, f.v)
		}
	}
	return nil
}

// merged returns e with zero fields taken from d.
func (e Efficiency) merged(d Efficiency) Efficiency {
	pick := func(v, def float64) float64 {
		if v == 0 {
			return def
		}
		return v
	}
	return Efficiency{
		PrefillCompute: pick(e.PrefillCompute, d.PrefillCompute),
		DecodeCompute:  pick(e.DecodeCompute, d.DecodeCompute),
		Attention:      pick(e.Attention, d.Attention),
		Memory:         pick(e.Memory, d.Memory),
		KVMemory:       pick(e.KVMemory, d.KVMemory),
		IterationUs:    pick(e.IterationUs, d.IterationUs),
		LayerUs:        pick(e.LayerUs, d.LayerUs),
		RequestUs:      pick(e.RequestUs, d.RequestUs),
		AllReduceUs:    pick(e.AllReduceUs, d.AllReduceUs),
	}
}

// DTypeBytes returns the bytes per element of a weight or KV dtype name:
// bf16/fp16 2, fp8 1, int4 0.5 (plus group scales, see weight bytes).
func DTypeBytes(dtype string) (float64, error) {
	switch strings.ToLower(dtype) {
	case "bf16", "bfloat16", "fp16", "float16", "half", "auto", "":
		return 2, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "float8":
		return 1, nil
	case "int4", "awq", "gptq", "w4a16":
		return 0.5, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want bf16, fp16, fp8 or int4)", dtype)
}

// Deployment is a model served on TP GPUs of one kind with given weight and
// KV dtypes: everything the cost of an iteration depends on besides the
// batch.
type Deployment struct {
	Model Model
	GPU   GPU
	// TP is the tensor-parallel degree (GPUs per replica).
	TP int
	// WeightDType and KVDType are the dtype names (bf16, fp8, int4).
	WeightDType, KVDType string
	// Eff is the resolved efficiency (defaults, then the GPU's overrides).
	Eff Efficiency
	// Table, when set, overrides the formula (see Table).
	Table *Table
	// Fit, when set, overrides the formula with a model fitted to another
	// stack's measured steps (see LinearProfile).
	Fit *LinearProfile

	weightBytes  float64 // bytes per element of linear weights
	kvBytes      float64 // bytes per KV element
	gemmPeak     float64 // FLOP/s used by GEMMs
	attnPeak     float64 // FLOP/s used by attention
	bw           float64 // bytes/s
	linkBW       float64 // bytes/s per direction
	arLatency    float64 // s per all-reduce
	layerWeights float64 // attention + MLP weight bytes per layer per rank (all experts)
	attnWeights  float64 // attention weight bytes per layer per rank
	expertBytes  float64 // one expert's bytes per rank (MoE)
	headBytes    float64 // LM head bytes per rank
	actPerToken  float64 // GEMM activation bytes in+out per token per rank, all layers
	kvPerToken   float64 // KV bytes per token per rank, all layers
	linearFlops  float64 // FLOPs per token in layer GEMMs per rank (active params)
	headFlops    float64 // FLOPs per logit row per rank
	attnFlops    float64 // FLOPs per attended (query, key) pair per rank, all layers
}

// NewDeployment checks that tp divides the model's heads and resolves the
// dtypes and efficiencies.
func NewDeployment(m Model, g GPU, tp int, weightDType, kvDType string) (*Deployment, error) {
	if tp < 1 {
		return nil, fmt.Errorf("tensor_parallel_size %d must be ≥ 1", tp)
	}
	if m.Heads%tp != 0 {
		return nil, fmt.Errorf("tensor_parallel_size %d must divide the model's %d attention heads", tp, m.Heads)
	}
	wb, err := DTypeBytes(weightDType)
	if err != nil {
		return nil, fmt.Errorf("dtype: %w", err)
	}
	if strings.EqualFold(kvDType, "auto") || kvDType == "" {
		// vLLM's "auto" stores KV in the model dtype, or bf16 for
		// quantized weights.
		kvDType = "bf16"
		if wb == 2 {
			kvDType = weightDType
		}
	}
	kb, err := DTypeBytes(kvDType)
	if err != nil {
		return nil, fmt.Errorf("kv_cache_dtype: %w", err)
	}
	if kb < 1 {
		return nil, fmt.Errorf("kv_cache_dtype %q: int4 KV cache is not supported", kvDType)
	}
	eff := DefaultEfficiency()
	if g.Efficiency != nil {
		eff = g.Efficiency.merged(eff)
	}
	d := &Deployment{Model: m, GPU: g, TP: tp, WeightDType: weightDType, KVDType: kvDType, Eff: eff, weightBytes: wb, kvBytes: kb}
	if wb == 0.5 {
		// Group-wise int4 (group 128) carries a 16-bit scale per group.
		d.weightBytes += 2.0 / 128
	}
	t := float64(tp)
	d.gemmPeak = g.BF16TFLOPS * 1e12
	if wb == 1 && g.FP8TFLOPS > 0 {
		d.gemmPeak = g.FP8TFLOPS * 1e12 // W8A8 on FP8 tensor cores
	}
	d.attnPeak = g.BF16TFLOPS * 1e12
	d.bw = g.BandwidthGBs * 1e9
	d.linkBW = g.InterconnectGBs * 1e9
	d.arLatency = eff.AllReduceUs * 1e-6
	if g.Interconnect == "pcie" {
		d.arLatency *= 2
	}
	d.attnWeights = float64(m.AttentionParams()) * d.weightBytes / t
	d.layerWeights = d.attnWeights + float64(m.MLPParams())*d.weightBytes/t
	if m.Experts > 0 {
		d.expertBytes = 3 * float64(m.Hidden) * float64(m.ExpertIntermediate) * d.weightBytes / t
	}
	// The LM head usually stays in 16 bits even for quantized checkpoints.
	d.headBytes = float64(m.Vocab) * float64(m.Hidden) * 2 / t
	hd := float64(m.headDim())
	h := float64(m.Hidden)
	inter := float64(m.Intermediate)
	if m.Experts > 0 {
		inter = float64(m.ActiveExperts * m.ExpertIntermediate)
	}
	qkv := (float64(m.Heads) + 2*float64(m.KVHeads)) * hd
	// Each GEMM reads its input and writes its output (16-bit
	// activations): qkv, o, gate_up, down.
	d.actPerToken = float64(m.Layers) * 2 * ((h + qkv) + (float64(m.Heads)*hd + h) + (h + 2*inter) + (inter + h)) / t
	kvHeads := math.Max(1, float64(m.KVHeads)/t) // KV heads are replicated when TP > kv_heads
	d.kvPerToken = 2 * float64(m.Layers) * kvHeads * hd * kb
	d.linearFlops = 2 * float64(m.Layers) * float64(m.AttentionParams()+m.ActiveMLPParams()) / t
	d.headFlops = 2 * float64(m.Vocab) * h / t
	// QKᵀ and PV: 2 FLOPs per multiply-add each, over every head dim.
	d.attnFlops = 4 * float64(m.Layers) * float64(m.Heads) * hd / t
	return d, nil
}

// WeightBytesPerGPU is the model weights one GPU holds, bytes.
func (d *Deployment) WeightBytesPerGPU() float64 {
	emb := float64(d.Model.Vocab) * float64(d.Model.Hidden) * 2 / float64(d.TP)
	head := d.headBytes
	if d.Model.TiedEmbeddings {
		head = 0
	}
	return float64(d.Model.Layers)*d.layerWeights + emb + head
}

// KVBytesPerTokenPerGPU is the KV cache one token takes on one GPU, bytes.
func (d *Deployment) KVBytesPerTokenPerGPU() float64 { return d.kvPerToken }

// nonTorchBytes is memory outside PyTorch's allocator that vLLM's profile
// sees: the CUDA context, cuBLAS workspaces and NCCL buffers, bytes.
const nonTorchBytes = 0.6 * GiB

// ActivationPeakBytes estimates the peak activation memory of vLLM's
// profiling run (a forward pass of maxBatchedTokens tokens and a sampler
// pass over maxSeqs rows) on one GPU, bytes.
func (d *Deployment) ActivationPeakBytes(maxBatchedTokens, maxSeqs int) float64 {
	m := d.Model
	inter := float64(m.Intermediate)
	if m.Experts > 0 {
		inter = float64(m.ActiveExperts * m.ExpertIntermediate)
	}
	t := float64(maxBatchedTokens)
	// gate_up output (2×inter), its activation (inter) and the residual
	// stream (a few × hidden), 16-bit, live at once in the widest layer.
	mlp := t * (3*inter/float64(d.TP) + 4*float64(m.Hidden)) * 2
	// fp32 logits and their softmax for maxSeqs rows.
	logits := float64(maxSeqs) * float64(m.Vocab) * 4 * 2 / float64(d.TP)
	return mlp + logits
}

// KVCacheBytesPerGPU is vLLM's KV budget per GPU: memory × utilization
// − weights − activation peak − non-torch memory, bytes (may be ≤ 0).
func (d *Deployment) KVCacheBytesPerGPU(util float64, maxBatchedTokens, maxSeqs int) float64 {
	total := d.GPU.MemoryGiB * GiB
	return total*util - d.WeightBytesPerGPU() - d.ActivationPeakBytes(maxBatchedTokens, maxSeqs) - nonTorchBytes
}

// Batch accumulates the shape of one iteration: the sequences scheduled,
// the new tokens each processes and the context each attends to. Reset it
// and call Add per scheduled sequence; it does not allocate.
type Batch struct {
	// Seqs is the number of scheduled sequences (one logit row each).
	Seqs int
	// Tokens is the new tokens processed (prefill chunks + decodes).
	Tokens int
	// PrefillTokens is the part of Tokens that belongs to prefill chunks.
	PrefillTokens int
	// AttnPairs is Σ over sequences of the (query, key) pairs attention
	// computes: q·c + q(q+1)/2 for q new tokens after c cached ones.
	AttnPairs float64
	// ContextTokens is Σ (c + q): the KV each sequence reads.
	ContextTokens int64
}

// Reset empties the batch.
func (b *Batch) Reset() { *b = Batch{} }

// Add appends one sequence that processes newTokens after cached tokens of
// context; prefill says whether the tokens are prompt (or recompute) tokens.
func (b *Batch) Add(newTokens, cached int, prefill bool) {
	b.Seqs++
	b.Tokens += newTokens
	if prefill {
		b.PrefillTokens += newTokens
	}
	q, c := float64(newTokens), float64(cached)
	b.AttnPairs += q*c + q*(q+1)/2
	b.ContextTokens += int64(cached + newTokens)
}

// Breakdown is an iteration's time split into its parts, seconds.
type Breakdown struct {
	// GEMMCompute and GEMMMemory are the layer and LM-head GEMMs' compute
	// and memory (weights + activations) times; the GEMMs take the larger.
	GEMMCompute, GEMMMemory float64
	// AttnCompute and AttnMemory are attention's compute and KV times.
	AttnCompute, AttnMemory float64
	// Comm is the tensor-parallel all-reduce time.
	Comm float64
	// Overhead is the fixed per-iteration, per-layer and per-request cost.
	Overhead float64
	// Total is max(GEMMCompute, GEMMMemory) + max(AttnCompute, AttnMemory)
	// + Comm + Overhead, or the table's time when a Table is set.
	Total float64
}

// Breakdown computes the parts of an iteration's time for batch b.
func (d *Deployment) Breakdown(b *Batch) Breakdown {
	var r Breakdown
	if b.Seqs == 0 {
		return r
	}
	m := &d.Model
	e := &d.Eff
	tok := float64(b.Tokens)
	pre := float64(b.PrefillTokens)
	// Prefill tokens run as tall GEMMs near peak; decode tokens as skinny
	// ones. The batch's GEMMs are shared, so blend by token share.
	eff := (pre*e.PrefillCompute + (tok-pre)*e.DecodeCompute) / tok
	flops := tok*d.linearFlops + float64(b.Seqs)*d.headFlops
	r.GEMMCompute = flops / (d.gemmPeak * eff)
	weights := float64(m.Layers)*d.layerWeights + d.headBytes
	if m.Experts > 0 {
		// Only experts some token was routed to are read: with k of E per
		// token and T tokens, E·(1 − (1 − k/E)^T) per layer in expectation.
		ex := float64(m.Experts)
		touched := ex * (1 - math.Pow(1-float64(m.ActiveExperts)/ex, tok))
		weights = float64(m.Layers)*(d.attnWeights+touched*d.expertBytes) + d.headBytes
	}
	r.GEMMMemory = (weights + tok*d.actPerToken) / (d.bw * e.Memory)
	r.AttnCompute = b.AttnPairs * d.attnFlops / (d.attnPeak * e.Attention)
	r.AttnMemory = (float64(b.ContextTokens) + tok) * d.kvPerToken / (d.bw * e.KVMemory)
	if d.TP > 1 {
		// Two all-reduces per layer (after attention and after the MLP)
		// of tok × hidden 16-bit values; a ring moves 2(p−1)/p of them.
		t := float64(d.TP)
		bytes := tok * float64(m.Hidden) * 2
		r.Comm = 2 * float64(m.Layers) * (2*(t-1)/t*bytes/d.linkBW + d.arLatency)
	}
	r.Overhead = (e.IterationUs + float64(m.Layers)*e.LayerUs + float64(b.Seqs)*e.RequestUs) * 1e-6
	r.Total = math.Max(r.GEMMCompute, r.GEMMMemory) + math.Max(r.AttnCompute, r.AttnMemory) + r.Comm + r.Overhead
	if d.Table != nil {
		r.Total = d.Table.Lookup(b.Tokens, b.ContextTokens)
	}
	if d.Fit != nil {
		r.Total = d.Fit.Seconds(b)
	}
	return r
}

// IterationNs is the time of one iteration over batch b, ns (0 for an empty
// batch).
func (d *Deployment) IterationNs(b *Batch) int64 {
	if b.Seqs == 0 {
		return 0
	}
	ns := int64(math.Round(d.Breakdown(b).Total * 1e9))
	if ns < 1 {
		ns = 1
	}
	return ns
}
