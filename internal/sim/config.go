package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim/costmodel"
)

// Scheduler names accepted by Config.Scheduler.
const (
	// SchedVLLMV1 is vLLM V1's scheduler: running requests first (in
	// admission order), chunked prefill always on, new requests only when
	// nothing was preempted this step, preemption of the newest running
	// request by recompute.
	SchedVLLMV1 = "vllm-v1"
	// SchedSarathi is Sarathi-Serve's stall-free batching: all decodes
	// first, then ongoing prefill chunks, then new prefills, within the
	// token budget (the chunk size).
	SchedSarathi = "sarathi"
	// SchedPrefillFirst is vLLM V0 without chunking: whenever a new request
	// can be admitted, the step runs only whole prefills and running
	// decodes stall.
	SchedPrefillFirst = "prefill-first"
	// SchedStatic is static batching: a batch of up to MaxNumSeqs is
	// admitted only when the previous one has entirely finished.
	SchedStatic = "static"
)

// Schedulers lists the scheduler names, default first.
var Schedulers = []string{SchedVLLMV1, SchedSarathi, SchedPrefillFirst, SchedStatic}

// Config is the simulated engine's configuration. The zero value of a
// numeric field means "vLLM's default" (resolved by New); DefaultConfig
// returns the defaults that flags start from.
type Config struct {
	// Model is a built-in model name, its Hugging Face id, a .yaml
	// profile path or a Hugging Face config.json path (the CLI binds it to
	// --model or --sim-model).
	Model string
	// GPU is a built-in GPU name or a .yaml profile path (--gpu).
	GPU string
	// TP is the tensor-parallel degree (--tensor-parallel-size, --tp).
	TP int
	// DType is the weight dtype: bf16, fp16, fp8 or int4 (--dtype).
	DType string
	// KVCacheDType is the KV cache dtype: auto (= weights' 16-bit type),
	// bf16 or fp8 (--kv-cache-dtype).
	KVCacheDType string
	// MaxNumSeqs caps running requests (--max-num-seqs); 0 means vLLM's
	// per-GPU default (1024 on ≥ 70 GiB GPUs other than A100, else 256).
	MaxNumSeqs int
	// MaxNumBatchedTokens is the token budget per iteration
	// (--max-num-batched-tokens); 0 means vLLM's per-GPU default (8192 on
	// ≥ 70 GiB GPUs other than A100, else 2048).
	MaxNumBatchedTokens int
	// BlockSize is the tokens per KV block (--block-size).
	BlockSize int
	// GPUMemoryUtilization is the fraction of GPU memory the engine may use
	// (--gpu-memory-utilization), in (0, 1].
	GPUMemoryUtilization float64
	// EnableChunkedPrefill lets prefills be split across iterations
	// (--enable-chunked-prefill). vllm-v1 and sarathi always chunk.
	EnableChunkedPrefill bool
	// EnablePrefixCaching turns on KV reuse by block hash
	// (--enable-prefix-caching / --no-enable-prefix-caching).
	EnablePrefixCaching bool
	// MaxModelLen is the longest prompt + output in tokens
	// (--max-model-len); 0 means the model's max_position, lowered to what
	// the KV cache holds.
	MaxModelLen int
	// NumGPUBlocksOverride fixes the KV blocks instead of deriving them from
	// memory (--num-gpu-blocks-override); 0 means derive.
	NumGPUBlocksOverride int
	// Scheduler is one of Schedulers (--scheduler).
	Scheduler string
	// MaxWaiting bounds the waiting queue (--max-waiting); a request
	// arriving to a full queue is rejected. 0 means unbounded.
	MaxWaiting int
	// MaxQueueTime rejects a request still unscheduled this long after it
	// arrived (--max-queue-time). 0 means no limit.
	MaxQueueTime time.Duration
	// ReasoningTokens is the default hidden reasoning length for requests
	// that give none (--reasoning-tokens): ≥ 1 is a token count, a value in
	// (0, 1) a fraction of each request's output, 0 none.
	ReasoningTokens float64
	// ToolCallShare is the share in [0, 1] of a session turn's first
	// requests that declare tools and are answered with a tool call instead
	// of text (--tool-call-share), for turns whose source does not say
	// which calls the model makes; 0 calls tools only where the source does.
	ToolCallShare float64
	// ToolCallTokens is the length in tokens of one tool call's name and
	// arguments, generated as hidden tokens (--tool-call-tokens); 0 means
	// DefaultToolCallTokens.
	ToolCallTokens int
	// Priority schedules waiting requests by Request.Priority (lower first)
	// and preempts the lowest-priority running request first (--priority).
	Priority bool
	// ProfileTable is a CSV of measured iteration times that overrides the
	// cost formula (--profile-table); "" means none.
	ProfileTable string
	// SpecTokens is the draft tokens each decoding request proposes per
	// step for speculative decoding (--num-speculative-tokens), at most
	// MaxSpecTokens; 0 turns speculative decoding off.
	SpecTokens int
	// SpecAcceptance is the probability α in (0, 1] that the target accepts
	// a draft token given it accepted the ones before (--spec-acceptance);
	// 0 means DefaultSpecAcceptance. Only read with SpecTokens > 0.
	SpecAcceptance float64
	// SpecDraft is what proposes the drafts (--spec-draft): "ngram" or
	// "eagle", a draft without a model of its own whose tokens cost
	// SpecDraftCostFrac of the target's step each, or a model the cost
	// model can price (a built-in name, a .yaml profile or a config.json),
	// served on the same GPUs; "" means "ngram".
	SpecDraft string
	// SpecDraftCostFrac is, for an ngram or eagle draft, the cost of one
	// draft token as a fraction in [0, 1] of the target's decode step
	// (--spec-draft-cost-frac); 0 means DefaultSpecDraftCostFrac.
	SpecDraftCostFrac float64
}

// Speculative decoding's limits and defaults.
const (
	// MaxSpecTokens is the most draft tokens per step Config.SpecTokens
	// allows.
	MaxSpecTokens = 16
	// DefaultSpecAcceptance is Config.SpecAcceptance when 0.
	DefaultSpecAcceptance = 0.7
	// DefaultSpecDraftCostFrac is Config.SpecDraftCostFrac when 0: about
	// one layer of a 32-layer target, as an EAGLE head costs.
	DefaultSpecDraftCostFrac = 0.05
)

// DefaultToolCallTokens is a tool call's length when Config.ToolCallTokens
// is 0: a function name and a short JSON object of arguments.
const DefaultToolCallTokens = 24

// ReasoningFor is the hidden reasoning length, in tokens, that the engine
// gives a request of outputTokens tokens that names none
// (Request.ReasoningTokens 0): ReasoningTokens as a count, or as a share of
// outputTokens rounded, at most outputTokens; 0 when ReasoningTokens is 0.
// A driver that builds block hashes over the output uses it to know where
// the hidden part ends.
func (c Config) ReasoningFor(outputTokens int) int {
	switch {
	case c.ReasoningTokens <= 0:
		return 0
	case c.ReasoningTokens >= 1:
		return min(int(c.ReasoningTokens), outputTokens)
	}
	return min(int(math.Round(c.ReasoningTokens*float64(outputTokens))), outputTokens)
}

// DefaultConfig returns a small sensible setup: Llama-3.1-8B on one
// H100-SXM in bf16 under vLLM V1's defaults.
func DefaultConfig() Config {
	return Config{
		Model:                "llama-3.1-8b",
		GPU:                  "h100-sxm",
		TP:                   1,
		DType:                "bf16",
		KVCacheDType:         "auto",
		BlockSize:            16,
		GPUMemoryUtilization: 0.9,
		EnableChunkedPrefill: true,
		EnablePrefixCaching:  true,
		Scheduler:            SchedVLLMV1,
	}
}

// ConfigError is a configuration problem in one Config field.
type ConfigError struct {
	// Field is the Go name of the Config field at fault ("MaxNumSeqs",
	// "TP", "SpecTokens"), so that whatever filled the field can name it.
	Field string
	// Err says what is wrong.
	Err error
}

// Error names the field, then the problem.
func (e *ConfigError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// As makes the error the *setting.Error of its field, so that a caller
// naming settings by field path (setting.Within "Engine", say) renders it
// as any other setting's.
func (e *ConfigError) As(target any) bool {
	p, ok := target.(**setting.Error)
	if ok {
		*p = setting.Errorf(e.Field, "", "%v", e.Err)
	}
	return ok
}

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
}

// resolved is a Config after defaults, lookups and capacity planning.
type resolved struct {
	Config
	dep          *costmodel.Deployment
	numBlocks    int
	modelLenCap  bool // MaxModelLen was lowered to fit the KV cache
	kvBytesTotal float64
	spec         *costmodel.SpecDecode // nil with speculative decoding off
}

// resolve validates c and fills in the defaults that depend on the GPU and
// model.
func (c Config) resolve() (*resolved, error) {
	r := &resolved{Config: c}
	switch {
	case c.TP < 0:
		return nil, fieldErr("TP", "%d must be ≥ 1", c.TP)
	case c.MaxNumSeqs < 0:
		return nil, fieldErr("MaxNumSeqs", "%d must be ≥ 1 (0 for the default)", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 0:
		return nil, fieldErr("MaxNumBatchedTokens", "%d must be ≥ 1 (0 for the default)", c.MaxNumBatchedTokens)
	case c.BlockSize < 0:
		return nil, fieldErr("BlockSize", "%d must be ≥ 1", c.BlockSize)
	case c.GPUMemoryUtilization < 0 || c.GPUMemoryUtilization > 1 || math.IsNaN(c.GPUMemoryUtilization):
		return nil, fieldErr("GPUMemoryUtilization", "%v must be in (0, 1]", c.GPUMemoryUtilization)
	case c.MaxModelLen < 0:
		return nil, fieldErr("MaxModelLen", "%d must be ≥ 1 (0 for the model's)", c.MaxModelLen)
	case c.NumGPUBlocksOverride < 0:
		return nil, fieldErr("NumGPUBlocksOverride", "%d must be ≥ 1 (0 to derive)", c.NumGPUBlocksOverride)
	case c.MaxWaiting < 0:
		return nil, fieldErr("MaxWaiting", "%d must be ≥ 0", c.MaxWaiting)
	case c.MaxQueueTime < 0:
		return nil, fieldErr("MaxQueueTime", "%v must be ≥ 0", c.MaxQueueTime)
	case c.ReasoningTokens < 0 || math.IsNaN(c.ReasoningTokens) || math.IsInf(c.ReasoningTokens, 0):
		return nil, fieldErr("ReasoningTokens", "%v must be a count ≥ 1 or a fraction in (0, 1)", c.ReasoningTokens)
	case !(c.ToolCallShare >= 0 && c.ToolCallShare <= 1):
		return nil, fieldErr("ToolCallShare", "%v must be in [0, 1]", c.ToolCallShare)
	case c.ToolCallTokens < 0 || c.ToolCallTokens > 1<<16:
		return nil, fieldErr("ToolCallTokens", "%d must be in [1, 65536] (0 for the default, %d)", c.ToolCallTokens, DefaultToolCallTokens)
	case c.SpecTokens < 0 || c.SpecTokens > MaxSpecTokens:
		return nil, fieldErr("SpecTokens", "%d must be in [0, %d]", c.SpecTokens, MaxSpecTokens)
	case !(c.SpecAcceptance >= 0 && c.SpecAcceptance <= 1):
		return nil, fieldErr("SpecAcceptance", "%v must be in (0, 1]", c.SpecAcceptance)
	case !(c.SpecDraftCostFrac >= 0 && c.SpecDraftCostFrac <= 1):
		return nil, fieldErr("SpecDraftCostFrac", "%v must be in [0, 1]", c.SpecDraftCostFrac)
	}
	if r.Model == "" {
		r.Model = DefaultConfig().Model
	}
	if r.GPU == "" {
		r.GPU = DefaultConfig().GPU
	}
	if r.TP == 0 {
		r.TP = 1
	}
	if r.ToolCallTokens == 0 {
		r.ToolCallTokens = DefaultToolCallTokens
	}
	if r.BlockSize == 0 {
		r.BlockSize = 16
	}
	if r.GPUMemoryUtilization == 0 {
		r.GPUMemoryUtilization = 0.9
	}
	if r.DType == "" {
		r.DType = "bf16"
	}
	if r.KVCacheDType == "" {
		r.KVCacheDType = "auto"
	}
	r.Scheduler = strings.ToLower(r.Scheduler)
	if r.Scheduler == "" {
		r.Scheduler = SchedVLLMV1
	}
	known := false
	for _, s := range Schedulers {
		known = known || s == r.Scheduler
	}
	if !known {
		return nil, fieldErr("Scheduler", "unknown scheduler %q (want %s)", c.Scheduler, strings.Join(Schedulers, ", "))
	}
	m, err := costmodel.LookupModel(r.Model)
	if err != nil {
		return nil, &ConfigError{Field: "Model", Err: suggest(err)}
	}
	g, err := costmodel.LookupGPU(r.GPU)
	if err != nil {
		return nil, &ConfigError{Field: "GPU", Err: suggest(err)}
	}
	if _, err := costmodel.DTypeBytes(r.DType); err != nil {
		return nil, &ConfigError{Field: "DType", Err: err}
	}
	dep, err := costmodel.NewDeployment(m, g, r.TP, r.DType, r.KVCacheDType)
	if err != nil {
		field := "TP"
		var kv *costmodel.KVDTypeError
		if errors.As(err, &kv) {
			field = "KVCacheDType"
		}
		return nil, &ConfigError{Field: field, Err: err}
	}
	if r.ProfileTable != "" {
		if path, ok := strings.CutPrefix(r.ProfileTable, "splitwise:"); ok {
			fit, err := loadSplitwise(path, m, g, r.TP)
			if err != nil {
				return nil, &ConfigError{Field: "ProfileTable", Err: err}
			}
			dep.Fit = fit
		} else {
			t, err := costmodel.LoadTable(r.ProfileTable)
			if err != nil {
				return nil, &ConfigError{Field: "ProfileTable", Err: err}
			}
			dep.Table = t
		}
	}
	r.dep = dep
	if err := r.resolveSpec(m, g); err != nil {
		return nil, err
	}
	// vLLM's defaults for the OpenAI server: bigger on ≥ 70 GiB GPUs other
	// than the A100.
	big := g.MemoryGiB >= 70 && !strings.HasPrefix(g.Name, "a100")
	if r.MaxNumBatchedTokens == 0 {
		r.MaxNumBatchedTokens = 2048
		if big {
			r.MaxNumBatchedTokens = 8192
		}
	}
	if r.MaxNumSeqs == 0 {
		r.MaxNumSeqs = 256
		if big {
			r.MaxNumSeqs = 1024
		}
	}
	if g.Efficiency == nil || g.Efficiency.GraphMaxTokens == 0 {
		// vLLM sizes its largest CUDA graph from max_num_seqs.
		dep.Eff.GraphMaxTokens = costmodel.GraphCaptureTokens(r.MaxNumSeqs)
	}
	weights := dep.WeightBytesPerGPU()
	kvPerToken := dep.KVBytesPerTokenPerGPU()
	var draftWeights float64
	if r.spec != nil && r.spec.Draft != nil {
		// A draft model shares the GPUs: its weights come out of the KV
		// budget, and it keeps its own KV for every token of the target's.
		draftWeights = r.spec.Draft.WeightBytesPerGPU()
		weights += draftWeights
		kvPerToken += r.spec.Draft.KVBytesPerTokenPerGPU()
	}
	avail := g.MemoryGiB * costmodel.GiB * r.GPUMemoryUtilization
	if weights >= avail {
		return nil, fieldErr("Model", "%s does not fit: %.1f GiB of weights per GPU > %.1f GiB usable on %s (GPU memory utilization %.2f); raise the tensor-parallel size or use a bigger GPU or a smaller dtype",
			m.Name, weights/costmodel.GiB, avail/costmodel.GiB, g.Name, r.GPUMemoryUtilization)
	}
	blockBytes := kvPerToken * float64(r.BlockSize)
	if r.NumGPUBlocksOverride > 0 {
		r.numBlocks = r.NumGPUBlocksOverride
	} else {
		kv := dep.KVCacheBytesPerGPU(r.GPUMemoryUtilization, r.MaxNumBatchedTokens, r.MaxNumSeqs) - draftWeights
		r.numBlocks = int(kv / blockBytes)
		if r.numBlocks < 1 {
			return nil, fieldErr("Model", "%s leaves no room for the KV cache on %s (%.1f GiB weights per GPU, %.1f GiB usable); raise the tensor-parallel size or the GPU memory utilization",
				m.Name, g.Name, weights/costmodel.GiB, avail/costmodel.GiB)
		}
	}
	r.kvBytesTotal = float64(r.numBlocks) * blockBytes
	capacity := r.numBlocks * r.BlockSize
	if r.MaxModelLen == 0 {
		r.MaxModelLen = m.MaxPosition
		if r.MaxModelLen == 0 || r.MaxModelLen > capacity {
			r.MaxModelLen = capacity
			r.modelLenCap = true
		}
	} else if r.MaxModelLen > capacity {
		return nil, fieldErr("MaxModelLen", "%d tokens do not fit in the KV cache (%d blocks × %d = %d tokens); lower it or raise the GPU memory utilization or the tensor-parallel size",
			r.MaxModelLen, r.numBlocks, r.BlockSize, capacity)
	}
	return r, nil
}

// loadSplitwise fits the engine's step time to a SplitwiseSim database
// ("splitwise:PATH"): the rows of the configured model, GPU and TP, found by
// the profiles' names and aliases ("llama2-70b", "h100-80gb"), or
// "PATH#MODEL/HARDWARE" to name the group.
func loadSplitwise(path string, m costmodel.Model, g costmodel.GPU, tp int) (*costmodel.LinearProfile, error) {
	if path, group, ok := strings.Cut(path, "#"); ok {
		model, hw, ok := strings.Cut(group, "/")
		if !ok {
			return nil, fmt.Errorf("%q: want splitwise:PATH#MODEL/HARDWARE", path+"#"+group)
		}
		return costmodel.LoadSplitwise(path, model, hw, tp)
	}
	var firstErr error
	for _, model := range append([]string{m.Name}, m.Aliases...) {
		for _, hw := range append([]string{g.Name}, g.Aliases...) {
			fit, err := costmodel.LoadSplitwise(path, model, hw, tp)
			if err == nil {
				return fit, nil
			}
			if !errors.Is(err, costmodel.ErrNoRows) {
				return nil, err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return nil, firstErr
}

// resolveSpec fills in speculative decoding's defaults and prices its
// draft; it leaves r.spec nil when SpecTokens is 0.
func (r *resolved) resolveSpec(m costmodel.Model, g costmodel.GPU) error {
	if r.SpecTokens == 0 {
		return nil
	}
	if r.SpecAcceptance == 0 {
		r.SpecAcceptance = DefaultSpecAcceptance
	}
	if r.SpecDraftCostFrac == 0 {
		r.SpecDraftCostFrac = DefaultSpecDraftCostFrac
	}
	if r.SpecDraft == "" {
		r.SpecDraft = "ngram"
	}
	r.spec = &costmodel.SpecDecode{K: r.SpecTokens, CostFrac: r.SpecDraftCostFrac}
	if d := strings.ToLower(r.SpecDraft); d == "ngram" || d == "eagle" {
		r.SpecDraft = d
		return nil
	}
	dm, err := costmodel.LookupModel(r.SpecDraft)
	if err != nil {
		return &ConfigError{Field: "SpecDraft", Err: fmt.Errorf("%w (or ngram, eagle)", suggest(err))}
	}
	if dm.Vocab != 0 && m.Vocab != 0 && dm.Vocab != m.Vocab {
		// The target verifies the draft's token ids: they must share a
		// vocabulary.
		return fieldErr("SpecDraft", "%s has a vocabulary of %d tokens, %s of %d: a draft must share the target's", dm.Name, dm.Vocab, m.Name, m.Vocab)
	}
	dd, err := costmodel.NewDeployment(dm, g, r.TP, r.DType, r.KVCacheDType)
	if err != nil {
		return &ConfigError{Field: "SpecDraft", Err: err}
	}
	r.spec.Draft = dd
	return nil
}

// suggest adds the nearest known name to a lookup's unknown-name error
// ("h20" for "h200" is one edit from a GPU that exists).
func suggest(err error) error {
	var u *costmodel.UnknownError
	if errors.As(err, &u) {
		if s := setting.DidYouMean(u.Name, u.Known); s != "" {
			return fmt.Errorf("%w%s", err, s)
		}
	}
	return err
}
