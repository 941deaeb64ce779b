// Package costmodel computes how long one iteration of an LLM serving engine
// takes for a given batch shape, from first principles: the FLOPs and bytes
// of each kernel of a transformer forward pass, each at what the GPU was
// measured to sustain (a roofline per kernel: the larger of its compute
// time at the GEMM efficiency of its row count and its memory time), the
// tensor-parallel collectives as latency + bytes/bandwidth over the link,
// and the engine's fixed costs by step kind. It also holds the GPU and
// model profiles (YAML, built in and user files; Hugging Face config.json
// files), measured kernel tables that price the kernels they cover in
// place of the formula (KernelTables; built in for some GPUs), and a
// measured step table or fit that can replace the whole formula.
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

// Efficiency holds the model's physical constants: how a GEMM's rate
// grows with its row count, what fraction of the sustained figures
// attention and KV reads reach, and the engine's fixed costs. A zero field
// means the default from DefaultEfficiency. None is fitted to a run; each
// default's basis is in DefaultEfficiency and docs/simulator.md.
type Efficiency struct {
	// GEMMHalfM is the row count M (tokens; tokens per expert for MoE) at
	// which a GEMM reaches half its sustained rate: eff(M) = M/(M+GEMMHalfM).
	GEMMHalfM float64 `yaml:"gemm_half_m,omitempty"`
	// Attention is flash attention's rate as a fraction of the sustained
	// BF16 GEMM rate.
	Attention float64 `yaml:"attention,omitempty"`
	// Memory is the fraction of the sustained copy bandwidth at which
	// GEMMs stream weights and activations and elementwise kernels run.
	Memory float64 `yaml:"memory,omitempty"`
	// KVMemory is the fraction of the sustained copy bandwidth at which
	// attention reads and writes the paged KV cache.
	KVMemory float64 `yaml:"kv_memory,omitempty"`
	// DecodeTileRows is the query rows a decode sequence costs in a step
	// that also carries prefill tokens: the varlen (prefill) attention
	// kernel then runs every sequence, and pads a decode's single query row
	// to its query tile. Decode-only steps use the decode kernel (one row).
	DecodeTileRows float64 `yaml:"decode_tile_rows,omitempty"`
	// IterationUs is the fixed cost of one step, µs: scheduling, input
	// preparation, one CUDA-graph launch, the sampler's launch and the
	// copy of sampled tokens back to the host.
	IterationUs float64 `yaml:"iteration_us,omitempty"`
	// LayerUs is the extra cost per layer of a step carrying prefill
	// tokens that a CUDA graph still covers (at most GraphMaxTokens), µs:
	// such steps run piecewise graphs with attention launched from Python
	// between the pieces.
	LayerUs float64 `yaml:"layer_us,omitempty"`
	// EagerLayerUs is the extra cost per layer of a step of more than
	// GraphMaxTokens tokens, which no captured CUDA graph covers and so
	// runs eagerly, every kernel launched from Python, µs.
	EagerLayerUs float64 `yaml:"eager_layer_us,omitempty"`
	// GraphMaxTokens is the largest step (in tokens) vLLM captures CUDA
	// graphs for (its max_cudagraph_capture_size; the engine sets it from
	// max_num_seqs with GraphCaptureTokens unless a GPU profile sets it).
	GraphMaxTokens float64 `yaml:"graph_max_tokens,omitempty"`
	// RequestUs is the cost per scheduled request per step, µs (the
	// scheduler's and input/output processing's per-request work).
	RequestUs float64 `yaml:"request_us,omitempty"`
	// KernelUs is the least time any kernel takes, µs, however little work
	// it has (launch inside a graph, ramp and tail).
	KernelUs float64 `yaml:"kernel_us,omitempty"`
	// AllReduceUs, when set, replaces the link's all-reduce latency α, µs.
	AllReduceUs float64 `yaml:"allreduce_us,omitempty"`
}

// DefaultEfficiency returns the built-in constants. None is fitted to a
// serving run; their basis (docs/simulator.md has the numbers):
//
//   - GEMMHalfM 64: DeepGEMM's published inference GEMMs (H800,
//     https://github.com/deepseek-ai/DeepGEMM README) run at 43–63 % of
//     their large-M rate at M = 128 and 91–99.5 % at M = 4096; M/(M+64)
//     gives 67 % and 98 %. The smallest tensor-core tile is 64 rows, so
//     fewer rows compute padding, and few tiles leave SMs idle. Against
//     vLLM 0.19's own GEMMs at Llama-3.1-8B's shapes (LLMServingSim's
//     profiler bundles, RTX PRO 6000 and RTX 4090, M = 1…2048) the
//     max-roofline with this curve is off 9 % and 7 % on average (−18 %
//     worst, near the ridge, where max() is optimistic). Wave quantisation
//     from SM counts made both worse (cuBLAS balances with split-K), so it
//     is left out.
//   - Attention 0.50: those bundles' prefill attention (FlashAttention
//     varlen, causal, head dim 128) runs at 0.49–0.56 of the sustained
//     GEMM rate on the RTX PRO 6000 and ≈ 0.5 on the RTX 4090;
//     FlashAttention-2 reports 0.6–0.7 of the A100's on long causal
//     sequences (arXiv:2307.08691), so 0.5 is the conservative side.
//   - Memory 0.95: the bundles' M = 1 GEMMs stream weights at 0.88 (RTX
//     PRO 6000) and 1.02 (RTX 4090) of the copy bandwidth.
//   - KVMemory 0.85: their decode attention reads the paged KV at
//     0.75–0.88 of copy bandwidth (128 sequences × 1–2 K context: 0.82,
//     0.88).
//   - DecodeTileRows 64: FlashAttention-2's query tile for head dim 128
//     is 64–128 rows; the bundles' mixed prefill + decode batches cost
//     what 64-row (RTX 4090) to ~90-row (RTX PRO 6000) decode tiles would.
//   - EagerLayerUs 350, GraphMaxTokens 512: vLLM captures CUDA graphs
//     for steps of up to min(2 × max_num_seqs, 512) tokens (the engine
//     sets that; 512 is the cap); a larger step runs eagerly. The same 7B model decodes at 22–23 ms
//     per step eager and 13 ms with graphs on an A800
//     (https://github.com/vllm-project/vllm-omni/issues/7960): ≈ 0.35 ms
//     per layer (28 layers) of launch work the GPU waits for.
//   - IterationUs 300, RequestUs 12, LayerUs 20, KernelUs 2: estimates of
//     vLLM V1 (no async scheduling) doing its scheduling, input preparation
//     and output handling between GPU steps (~0.3 ms + ~12 µs per
//     request), launching a decode step as one CUDA graph and a step with
//     prefill as piecewise graphs with attention launched from Python
//     (~20 µs per layer); any kernel costs ≥ ~2 µs. Not measured here; one
//     bench of a real server pins them (docs/simulator.md).
func DefaultEfficiency() Efficiency {
	return Efficiency{
		GEMMHalfM:      64,
		Attention:      0.50,
		Memory:         0.95,
		KVMemory:       0.85,
		DecodeTileRows: 64,
		IterationUs:    300,
		LayerUs:        20,
		EagerLayerUs:   350,
		GraphMaxTokens: 512,
		RequestUs:      12,
		KernelUs:       2,
	}
}

func (e *Efficiency) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"attention", e.Attention}, {"memory", e.Memory}, {"kv_memory", e.KVMemory}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			return fmt.Errorf("efficiency %s = %v must be in [0, 1]", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"gemm_half_m", e.GEMMHalfM}, {"decode_tile_rows", e.DecodeTileRows}, {"iteration_us", e.IterationUs}, {"layer_us", e.LayerUs}, {"eager_layer_us", e.EagerLayerUs}, {"graph_max_tokens", e.GraphMaxTokens}, {"request_us", e.RequestUs}, {"kernel_us", e.KernelUs}, {"allreduce_us", e.AllReduceUs}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("efficiency %s = %v must be ≥ 0", f.name, f.v)
		}
	}
	if e.DecodeTileRows != 0 && e.DecodeTileRows < 1 {
		return fmt.Errorf("efficiency decode_tile_rows = %v must be ≥ 1 (a decode is at least its own row)", e.DecodeTileRows)
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
		GEMMHalfM:      pick(e.GEMMHalfM, d.GEMMHalfM),
		Attention:      pick(e.Attention, d.Attention),
		Memory:         pick(e.Memory, d.Memory),
		KVMemory:       pick(e.KVMemory, d.KVMemory),
		DecodeTileRows: pick(e.DecodeTileRows, d.DecodeTileRows),
		IterationUs:    pick(e.IterationUs, d.IterationUs),
		LayerUs:        pick(e.LayerUs, d.LayerUs),
		EagerLayerUs:   pick(e.EagerLayerUs, d.EagerLayerUs),
		GraphMaxTokens: pick(e.GraphMaxTokens, d.GraphMaxTokens),
		RequestUs:      pick(e.RequestUs, d.RequestUs),
		KernelUs:       pick(e.KernelUs, d.KernelUs),
		AllReduceUs:    pick(e.AllReduceUs, d.AllReduceUs),
	}
}

// GraphCaptureTokens is the largest step, in tokens, that vLLM V1
// captures a CUDA graph for by default: min(2 × max_num_seqs, 512).
func GraphCaptureTokens(maxNumSeqs int) float64 {
	return math.Min(2*float64(maxNumSeqs), 512)
}

// GEMMEfficiency is the fraction of its sustained rate a GEMM of m rows
// reaches when compute-bound: m/(m+halfM); 0 for m ≤ 0.
func GEMMEfficiency(m, halfM float64) float64 {
	if m <= 0 {
		return 0
	}
	return m / (m + halfM)
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
// batch. NewDeployment precomputes the per-kernel figures so that an
// iteration's cost is a few dozen multiply-adds and never allocates.
type Deployment struct {
	Model Model
	GPU   GPU
	// TP is the tensor-parallel degree (GPUs per replica).
	TP int
	// WeightDType and KVDType are the dtype names (bf16, fp8, int4).
	WeightDType, KVDType string
	// Eff is the resolved efficiency (defaults, then the GPU's overrides).
	Eff Efficiency
	// Sustained is the GPU's resolved sustained figures.
	Sustained Sustained
	// Link is the resolved tensor-parallel link (with AllReduceUs and the
	// GPU's allreduce overrides applied).
	Link LinkKind
	// Table, when set, overrides the formula (see Table).
	Table *Table
	// Fit, when set, overrides the formula with a model fitted to another
	// stack's measured steps (see LinearProfile).
	Fit *LinearProfile

	plan *kernelPlan // the GPU's kernel tables at this deployment's shapes

	weightBytes float64 // bytes per element of linear weights
	kvBytes     float64 // bytes per KV element
	gemmRate    float64 // sustained FLOP/s of the weight GEMMs (bf16, or fp8 for W8A8)
	attnRate    float64 // FLOP/s of attention
	bw          float64 // bytes/s for weights, activations, elementwise kernels
	kvBW        float64 // bytes/s for the paged KV cache

	dense    []gemm // per-layer GEMMs whose rows are the step's tokens
	experts  gemm   // one routed expert's GEMMs (gate_up + down), per MoE layer
	head     gemm   // the LM head; rows are the step's sequences
	moeLayer float64

	layerWeights float64 // weight bytes per layer per rank (all experts), averaged over layers
	expertBytes  float64 // one routed expert's weight bytes per rank
	headBytes    float64 // LM head bytes per rank
	embBytes     float64 // input embedding bytes per rank
	elemPerToken float64 // elementwise-kernel bytes per token per layer per rank
	kvPerToken   float64 // KV bytes per token per rank, all layers
	attnFlops    float64 // FLOPs per attended (query, key) pair per rank, all layers
	arBytes      float64 // bytes per token of one activation all-reduce
	logitBytes   float64 // fp32 logit bytes per sequence (full vocabulary)
}

// gemm is one weight GEMM of a layer (or the LM head), per TP rank: FLOPs
// and activation bytes per row, weight bytes, and how many layers have it.
type gemm struct {
	flops   float64 // 2·K·N per row
	act     float64 // input + output bytes per row: (K + N) × 2
	weights float64 // K·N × weight bytes
	count   float64 // layers with this GEMM
	k, n    float64 // the weight's input and output widths
}

// KVDTypeError is NewDeployment's refusal of the KV cache dtype (not the
// weights' or the parallelism), so a caller can name the setting at fault.
type KVDTypeError struct{ Err error }

func (e *KVDTypeError) Error() string { return e.Err.Error() }

func (e *KVDTypeError) Unwrap() error { return e.Err }

// NewDeployment checks that tp divides the model's heads and resolves the
// dtypes, the sustained figures, the link and the efficiencies.
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
		return nil, &KVDTypeError{fmt.Errorf("kv_cache_dtype: %w", err)}
	}
	if kb < 1 {
		return nil, &KVDTypeError{fmt.Errorf("kv_cache_dtype %q: int4 KV cache is not supported", kvDType)}
	}
	link, err := g.link()
	if err != nil {
		return nil, err
	}
	eff := DefaultEfficiency()
	if g.Efficiency != nil {
		eff = g.Efficiency.merged(eff)
	}
	if eff.AllReduceUs > 0 {
		link.LatencyUs = eff.AllReduceUs
	}
	d := &Deployment{Model: m, GPU: g, TP: tp, WeightDType: weightDType, KVDType: kvDType, Eff: eff,
		Sustained: g.Resolved(), Link: link, weightBytes: wb, kvBytes: kb}
	if wb == 0.5 {
		// Group-wise int4 (group 128) carries a 16-bit scale per group.
		d.weightBytes += 2.0 / 128
	}
	s := d.Sustained
	d.gemmRate = s.BF16TFLOPS * 1e12
	if wb == 1 && s.FP8TFLOPS > 0 {
		d.gemmRate = s.FP8TFLOPS * 1e12 // W8A8 on FP8 tensor cores
	}
	d.attnRate = s.BF16TFLOPS * 1e12 * eff.Attention
	d.bw = s.BandwidthGBs * 1e9 * eff.Memory
	d.kvBW = s.BandwidthGBs * 1e9 * eff.KVMemory
	d.build()
	kt, err := g.kernelTables()
	if err != nil {
		return nil, err
	}
	if kt != nil {
		d.plan = newKernelPlan(d, kt)
	}
	return d, nil
}

// build precomputes the per-kernel figures of the model on one TP rank.
func (d *Deployment) build() {
	m := &d.Model
	t := float64(d.TP)
	h := float64(m.Hidden)
	heads := float64(m.Heads) / t
	// KV heads are replicated when TP > kv_heads; MLA's latent KV is
	// replicated on every rank.
	kvHeads := math.Max(1, float64(m.KVHeads)/t)
	layers := float64(m.Layers)
	moeL := float64(m.moeLayers())
	denseL := layers - moeL
	add := func(k, n, count float64) {
		if count > 0 && k > 0 && n > 0 {
			d.dense = append(d.dense, gemm{flops: 2 * k * n, act: 2 * (k + n), weights: k * n * d.weightBytes, count: count, k: k, n: n})
		}
	}
	// Attention projections, every layer.
	if m.MLA() {
		qk := float64(m.qkDim())
		if m.QLoraRank > 0 {
			add(h, float64(m.QLoraRank), layers) // q_a, replicated
			add(float64(m.QLoraRank), heads*qk, layers)
		} else {
			add(h, heads*qk, layers)
		}
		add(h, float64(m.KVLoraRank+m.QKRopeHeadDim), layers) // kv_a, replicated
		add(float64(m.KVLoraRank), heads*float64(m.QKNopeHeadDim+m.VHeadDim), layers)
		add(heads*float64(m.VHeadDim), h, layers)
	} else {
		hd := float64(m.headDim())
		add(h, (heads+2*kvHeads)*hd, layers)
		add(heads*hd, h, layers)
	}
	// Dense MLPs, and the shared expert and router of MoE layers.
	inter := float64(m.Intermediate) / t
	add(h, 2*inter, denseL)
	add(inter, h, denseL)
	if moeL > 0 {
		sh := float64(m.SharedExpertIntermediate) / t
		add(h, 2*sh, moeL)
		add(sh, h, moeL)
		add(h, float64(m.Experts), moeL) // router, replicated
		ei := float64(m.ExpertIntermediate) / t
		d.experts = gemm{flops: 2 * (h*2*ei + ei*h), act: 2 * (h + 2*ei + ei + h), weights: 3 * h * ei * d.weightBytes, count: moeL}
		d.expertBytes = d.experts.weights
		d.moeLayer = moeL
	}
	// The LM head stays 16-bit even for quantized checkpoints; one logit
	// row per sequence.
	v := float64(m.Vocab) / t
	d.head = gemm{flops: 2 * h * v, act: 2 * (h + v), weights: h * v * 2, count: 1, k: h, n: v}
	d.headBytes = d.head.weights
	d.embBytes = float64(m.Vocab) * h * 2 / t
	var w float64
	for _, g := range d.dense {
		w += g.weights * g.count
	}
	w += float64(m.Experts) * d.expertBytes * moeL
	d.layerWeights = w / layers
	// Elementwise kernels per token per layer (16-bit activations): two
	// fused residual-add + RMSNorm (read x and residual, write both), rotary
	// embedding of q and k in place, and the gated activation (read
	// 2·inter, write inter). The residual stream is not sharded.
	qkWidth := (heads + kvHeads) * float64(m.qkDim())
	act := inter
	if moeL > 0 {
		act = (denseL*inter + moeL*(float64(m.ActiveExperts)*float64(m.ExpertIntermediate)+float64(m.SharedExpertIntermediate))/t) / layers
	}
	d.elemPerToken = 2 * (8*h + 2*qkWidth + 3*act)
	d.kvPerToken = m.KVBytesPerToken(d.kvBytes)
	if !m.MLA() {
		d.kvPerToken = layers * 2 * kvHeads * float64(m.headDim()) * d.kvBytes
	}
	// QKᵀ and PV: 2 FLOPs per multiply-add, over the query/key and value
	// widths of every head on this rank.
	d.attnFlops = 2 * layers * heads * float64(m.qkDim()+m.vDim())
	d.arBytes = h * 2
	d.logitBytes = float64(m.Vocab) * 4
}

// WeightBytesPerGPU is the model weights one GPU holds, bytes.
func (d *Deployment) WeightBytesPerGPU() float64 {
	head := d.headBytes
	if d.Model.TiedEmbeddings {
		head = 0
	}
	return float64(d.Model.Layers)*d.layerWeights + d.embBytes + head
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
		inter = math.Max(inter, float64(m.ActiveExperts*m.ExpertIntermediate+m.SharedExpertIntermediate))
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
	// DecodeContext is Σ (c + 1) over the decode sequences (one new token,
	// not prefill): the keys their single query rows attend to.
	DecodeContext int64
	// DecodeSeqs is the number of decode sequences among Seqs.
	DecodeSeqs int
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
	if !prefill {
		b.DecodeContext += int64(cached + newTokens)
		b.DecodeSeqs++
	}
}

// Breakdown is an iteration's time split into its parts, seconds. Each
// kernel costs the larger of its compute and memory times (and at least
// Efficiency.KernelUs); the parts add because a step's kernels run one
// after another.
type Breakdown struct {
	// GEMMCompute and GEMMMemory are the weight GEMMs' (layers, experts,
	// LM head) compute times at their row counts' efficiency, and their
	// weight + activation memory times, each summed over the GEMMs.
	GEMMCompute, GEMMMemory float64
	// GEMM is Σ over the GEMMs of max(compute, memory, kernel floor).
	GEMM float64
	// AttnCompute and AttnMemory are attention's FLOP and KV-cache times;
	// Attn is their per-layer max with the kernel floor, over the layers.
	// Where kernel tables price attention, Attn is their time and the two
	// parts are 0. GEMMCompute and GEMMMemory likewise count only the
	// GEMMs the formula prices.
	AttnCompute, AttnMemory, Attn float64
	// Elementwise is the memory-bound kernels between the GEMMs (norms,
	// rotary embedding, activation) and the sampler's pass over the logits.
	Elementwise float64
	// Comm is the tensor-parallel collectives: the embedding's and two per
	// layer's all-reduce of the activations, and the logits' gather.
	Comm float64
	// Overhead is the step's fixed cost by kind (see Efficiency).
	Overhead float64
	// Decode reports a decode-only step (one full CUDA graph); false means
	// the step carries prefill tokens (piecewise graphs, per-layer cost).
	Decode bool
	// Eager reports a step larger than any captured CUDA graph, run
	// eagerly (Efficiency.EagerLayerUs per layer).
	Eager bool
	// Total is GEMM + Attn + Elementwise + Comm + Overhead, or the table's
	// or fit's time when one is set.
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
	floor := e.KernelUs * 1e-6
	layers := float64(m.Layers)
	tok := float64(b.Tokens)
	seqs := float64(b.Seqs)
	kernel := func(g *gemm, rows, groups, weights float64) {
		c, mem, t := d.gemmSeconds(g, rows, groups, weights)
		r.GEMMCompute += c * g.count
		r.GEMMMemory += mem * g.count
		r.GEMM += t * g.count
	}
	p := d.plan
	for i := range d.dense {
		if p != nil && p.denseIn[i] {
			continue
		}
		kernel(&d.dense[i], tok, 1, d.dense[i].weights)
	}
	if p != nil && p.dense != nil {
		r.GEMM += p.dense.at(tok)
	}
	if d.moeLayer > 0 {
		// Each token goes to k of E experts: with T tokens, E·(1−(1−k/E)^T)
		// experts are touched in expectation, each a GEMM of T·k/touched
		// rows; only the touched experts' weights are read.
		ex := float64(m.Experts)
		k := float64(m.ActiveExperts)
		touched := ex * (1 - math.Pow(1-k/ex, tok))
		rows := tok * k
		kernel(&d.experts, rows, touched, touched*d.expertBytes)
	}
	if p != nil && p.head != nil {
		r.GEMM += p.head.at(seqs)
	} else {
		kernel(&d.head, seqs, 1, d.head.weights)
	}

	if p != nil && p.prefill != nil {
		// Measured kernels. The prefill chunks are looked up as one call
		// over their sequences at the causal length whose pairs per
		// sequence equal theirs (a chunk after cached tokens does that
		// much more work); decodes at their mean context in the decode
		// kernel. Beside prefill, a decode's query row is padded to a tile
		// of the varlen kernel (as below): its extra rows cost their
		// pairs at the kernel's long-prompt rate. (Against vLLM's mixed
		// batches on the RTX PRO 6000, TestKernelsAgainstVLLM.)
		if b.PrefillTokens > 0 {
			var per float64
			if np := float64(b.Seqs - b.DecodeSeqs); np > 0 {
				pp := math.Max(b.AttnPairs-float64(b.DecodeContext), 1) / np
				per = p.prefill.at(np, (math.Sqrt(1+8*pp)-1)/2)
			}
			if nd := float64(b.DecodeSeqs); nd > 0 {
				// The decodes: what the decode kernel takes for them, plus
				// their padded rows' work at the kernel's long-prompt rate.
				per += p.decode.at(nd, float64(b.DecodeContext)/nd) + float64(b.DecodeContext)*(e.DecodeTileRows-1)/p.pairRate
			}
			r.Attn = per * layers
		} else {
			r.Attn = p.decode.at(seqs, float64(b.DecodeContext)/seqs) * layers
		}
	} else {
		pairs := b.AttnPairs
		if b.PrefillTokens > 0 {
			// The varlen kernel pads each decode's query row to a tile.
			pairs += float64(b.DecodeContext) * (e.DecodeTileRows - 1)
		}
		r.AttnCompute = pairs * d.attnFlops / d.attnRate
		r.AttnMemory = (float64(b.ContextTokens) + tok) * d.kvPerToken / d.kvBW
		r.Attn = math.Max(math.Max(r.AttnCompute, r.AttnMemory)/layers, floor) * layers
	}

	// Four elementwise kernels per layer; the sampler writes the fp32
	// logits and reads them twice (softmax, then the sampling pass).
	r.Elementwise = math.Max(tok*d.elemPerToken/d.bw/4, floor)*4*layers + seqs*d.logitBytes*3/d.bw

	r.Decode = b.PrefillTokens == 0
	r.Eager = tok > e.GraphMaxTokens
	if d.TP > 1 {
		var ar float64
		switch {
		case p != nil && p.ar != nil && r.Eager:
			ar = p.arEager.at(tok)
		case p != nil && p.ar != nil:
			ar = p.ar.at(tok)
		default:
			ar = d.Link.AllReduceSeconds(tok*d.arBytes, d.TP)
		}
		r.Comm = (2*layers+1)*ar + d.Link.GatherSeconds(seqs*float64(m.Vocab)*2, d.TP)
	}
	r.Overhead = (e.IterationUs + seqs*e.RequestUs) * 1e-6
	switch {
	case r.Eager:
		r.Overhead += layers * e.EagerLayerUs * 1e-6
	case !r.Decode:
		r.Overhead += layers * e.LayerUs * 1e-6
	}
	r.Total = r.GEMM + r.Attn + r.Elementwise + r.Comm + r.Overhead
	if d.Table != nil {
		r.Total = d.Table.Lookup(b.Tokens, b.ContextTokens)
	}
	if d.Fit != nil {
		r.Total = d.Fit.Seconds(b)
	}
	return r
}

// gemmSeconds is one layer's GEMM g over rows rows in total, run as groups
// GEMMs of rows/groups rows (the touched experts of a grouped MoE GEMM)
// reading weights bytes: its compute time at the rows' efficiency, its
// memory time, and the larger of the two and the kernel floor, seconds.
func (d *Deployment) gemmSeconds(g *gemm, rows, groups, weights float64) (compute, memory, t float64) {
	e := &d.Eff
	compute = rows * g.flops / (d.gemmRate * GEMMEfficiency(rows/groups, e.GEMMHalfM))
	memory = (weights + rows*g.act) / d.bw
	return compute, memory, math.Max(math.Max(compute, memory), e.KernelUs*1e-6)
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
