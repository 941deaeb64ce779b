package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
)

// registerEngineFlags binds the simulated engine's flags to c's fields,
// with c's current values as defaults (start from sim.DefaultConfig). Model
// is not bound: bench binds it to --sim-model (its --model is the id sent in
// requests), serve and sim to --model.
func registerEngineFlags(fs *pflag.FlagSet, c *sim.Config) {
	fs.StringVar(&c.GPU, "gpu", c.GPU, "simulated GPU: a100-40gb, a100-80gb, h100-sxm, h200, b200, h20, l40s, l4, a10g, rtx-4090, rtx-pro-6000, mi300x, or a .yaml profile")
	fs.IntVar(&c.TP, "tensor-parallel-size", c.TP, "tensor-parallel GPUs per replica")
	fs.IntVar(&c.TP, "tp", c.TP, "alias of --tensor-parallel-size")
	fs.StringVar(&c.DType, "dtype", c.DType, "weight dtype: bf16, fp16, fp8, int4")
	fs.StringVar(&c.KVCacheDType, "kv-cache-dtype", c.KVCacheDType, "KV cache dtype: auto, bf16, fp8")
	fs.IntVar(&c.MaxNumSeqs, "max-num-seqs", c.MaxNumSeqs, "max running requests (0 = vLLM's per-GPU default)")
	fs.IntVar(&c.MaxNumBatchedTokens, "max-num-batched-tokens", c.MaxNumBatchedTokens, "token budget per iteration (0 = vLLM's per-GPU default)")
	fs.IntVar(&c.BlockSize, "block-size", c.BlockSize, "tokens per KV block")
	fs.Float64Var(&c.GPUMemoryUtilization, "gpu-memory-utilization", c.GPUMemoryUtilization, "fraction of GPU memory the engine may use")
	fs.BoolVar(&c.EnableChunkedPrefill, "enable-chunked-prefill", c.EnableChunkedPrefill, "split long prefills across iterations (vllm-v1 and sarathi always do)")
	fs.BoolVar(&c.EnablePrefixCaching, "enable-prefix-caching", c.EnablePrefixCaching, "reuse KV blocks of shared prompt prefixes")
	fs.Var(negated(&c.EnablePrefixCaching), "no-enable-prefix-caching", "turn prefix caching off")
	fs.Lookup("no-enable-prefix-caching").NoOptDefVal = "true"
	fs.IntVar(&c.MaxModelLen, "max-model-len", c.MaxModelLen, "max prompt + output tokens (0 = model's, capped to KV capacity)")
	fs.IntVar(&c.NumGPUBlocksOverride, "num-gpu-blocks-override", c.NumGPUBlocksOverride, "fix the KV blocks instead of deriving them from memory (0 = derive)")
	fs.StringVar(&c.Scheduler, "scheduler", c.Scheduler, "scheduler: "+strings.Join(sim.Schedulers, ", "))
	fs.IntVar(&c.MaxWaiting, "max-waiting", c.MaxWaiting, "bound on queued requests; more are rejected with 429 (0 = unbounded)")
	fs.DurationVar(&c.MaxQueueTime, "max-queue-time", c.MaxQueueTime, "reject requests queued longer than this with 429 (0 = no limit)")
	fs.Float64Var(&c.ReasoningTokens, "reasoning-tokens", c.ReasoningTokens, "hidden reasoning tokens per request: a count ≥ 1 or a fraction of the output in (0,1)")
	fs.Float64Var(&c.ToolCallShare, "tool-call-share", c.ToolCallShare, "share of session turns declaring tools that the model answers with a tool call first (where the workload does not say)")
	fs.IntVar(&c.ToolCallTokens, "tool-call-tokens", c.ToolCallTokens, "hidden tokens of one tool call's name and arguments (0 = 24)")
	fs.BoolVar(&c.Priority, "priority", c.Priority, "schedule by request priority class (interactive before batch)")
	fs.StringVar(&c.ProfileTable, "profile-table", c.ProfileTable, "measured iteration times overriding the cost formula: a CSV tokens,context_tokens,time_ms, or splitwise:PATH[#MODEL/HARDWARE] (SplitwiseSim's perf_model.csv)")
	fs.IntVar(&c.SpecTokens, "num-speculative-tokens", c.SpecTokens, "draft tokens each decode proposes per step for speculative decoding (0 = off, at most 16)")
	fs.Float64Var(&c.SpecAcceptance, "spec-acceptance", c.SpecAcceptance, "probability in (0,1] that the target accepts each draft token (0 = 0.7)")
	fs.StringVar(&c.SpecDraft, "spec-draft", c.SpecDraft, "draft proposer: ngram, eagle (priced at --spec-draft-cost-frac of the target's step per token), or a draft model name or profile")
	fs.Float64Var(&c.SpecDraftCostFrac, "spec-draft-cost-frac", c.SpecDraftCostFrac, "cost of one ngram or eagle draft token as a fraction of the target's decode step (0 = 0.05)")
}

// modelList is what the engine's model flag takes, for its help.
const modelList = "llama-3.1-8b, llama-3.1-70b, mistral-7b, qwen2.5-7b, qwen3-32b, qwen3-30b-a3b, a HF id, a .yaml profile or a Hugging Face config.json path"

// simFlags are bench's embedded simulator, its model --sim-model (bench's
// --model is the id sent in requests).
type simFlags struct{ Engine sim.Config }

func (s *simFlags) register(fs *pflag.FlagSet) {
	s.Engine = sim.DefaultConfig()
	fs.StringVar(&s.Engine.Model, "sim-model", s.Engine.Model, "embedded simulator's model (no --base-url): "+modelList)
	registerEngineFlags(fs, &s.Engine)
}

// negated is a boolean flag that stores the negation of its value, for
// --no-enable-prefix-caching.
func negated(p *bool) value {
	return value{ptr: p, typ: "bool", set: func(s string) error {
		v, err := strconv.ParseBool(s)
		if err == nil {
			*p = !v
		}
		return err
	}, show: func() string { return map[bool]string{true: "", false: "true"}[*p] }}
}
