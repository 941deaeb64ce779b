package runlog

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
)

// Engine describes the simulated engine a run measured (Meta.Simulated):
// the engine's own setup and resolved limits as sim.Engine.Describe gives
// them, and, for a fleet, what composes it (replicas, router, pools, a
// prefill/decode split, a gateway). It is typed so that a key renamed on
// one side is a compile error, not a silent zero on the other.
//
// In a records file it is one JSON object with its keys sorted, as the
// untyped map it replaces wrote it: the engine's keys always (zeros
// included), a fleet's and speculative decoding's only when set. An
// Engine read back from a file writes exactly the keys the file held, in
// the same form, and keeps those it does not know (a later or earlier
// version's) in Extra, so a report of an old file shows what it said.
//
// Units are those of the key names (GiB, seconds, billions of parameters);
// counts are tokens, blocks, sequences or replicas as named.
type Engine struct {
	// Model is the model's short name and HFID its Hugging Face id ("" none).
	Model string
	HFID  string
	// GPU is the GPU's name; TensorParallelSize the GPUs of one replica.
	GPU                string
	TensorParallelSize int
	// DType is the weights' dtype, KVCacheDType the KV cache's.
	DType        string
	KVCacheDType string
	// Scheduler is the engine's scheduling policy, e.g. "vllm-v1".
	Scheduler string
	// MaxNumSeqs and MaxNumBatchedTokens are the batch limits per step.
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	// BlockSize is the KV block size in tokens.
	BlockSize int
	// GPUMemoryUtilization is the share of GPU memory the engine may use
	// (0–1).
	GPUMemoryUtilization float64
	// EnablePrefixCaching and EnableChunkedPrefill say whether the
	// engine caches prompt prefixes and splits prefills across steps.
	EnablePrefixCaching  bool
	EnableChunkedPrefill bool
	// MaxModelLen is the longest sequence served (tokens), and
	// MaxModelLenKVCapped says it was lowered to fit the KV cache.
	MaxModelLen         int
	MaxModelLenKVCapped bool
	// NumGPUBlocks is the KV cache in blocks, KVCapacityTokens in tokens.
	NumGPUBlocks     int
	KVCapacityTokens int
	// KVCacheGiBPerGPU and WeightsGiBPerGPU are memory per GPU (GiB).
	KVCacheGiBPerGPU float64
	WeightsGiBPerGPU float64
	// ParamsB and ActiveParamsB are the model's parameters, in billions.
	ParamsB       float64
	ActiveParamsB float64
	// MaxWaiting caps the waiting queue (0: no cap); MaxQueueTimeS is the
	// longest a request may wait (seconds; 0: no limit).
	MaxWaiting    int
	MaxQueueTimeS float64
	// ReasoningTokens is the reasoning share of each answer's tokens.
	ReasoningTokens float64
	// PriorityScheduling says the engine schedules by request priority.
	PriorityScheduling bool
	// ProfileTable names the measured kernel table the costs come from
	// ("" the formula).
	ProfileTable string

	// NumSpeculativeTokens is the draft tokens per step (0: speculative
	// decoding off, and SpecAcceptance and SpecDraft are not written);
	// SpecAcceptance is the chance the target accepts a draft token (0–1)
	// and SpecDraft what proposes the drafts ("" not named).
	NumSpeculativeTokens int
	SpecAcceptance       float64
	SpecDraft            string

	// Replicas is the fleet's replicas (0: the engine alone), Router its
	// router and Gateway its gateway ("" none).
	Replicas int
	Router   string
	Gateway  string
	// Pools are a cluster file's pools in replica order, and GPUs the GPUs
	// of all of them (0: no pools).
	Pools []EnginePool
	GPUs  int
	// PrefillReplicas, DecodeReplicas and KVLink describe a prefill/decode
	// split (0, "": none); the description above is a prefill replica's,
	// and the Decode fields give the first decode replica's where it
	// differs (0, "": the same).
	PrefillReplicas           int
	DecodeReplicas            int
	KVLink                    string
	DecodeGPU                 string
	DecodeTensorParallelSize  int
	DecodeMaxNumSeqs          int
	DecodeMaxNumBatchedTokens int
	DecodeNumGPUBlocks        int

	// Extra holds the keys of a description read back that this version
	// does not know, or whose value is not of the type it knows, as
	// compact JSON; written back as they came.
	Extra map[string]json.RawMessage

	// decoded says e was read back; read is then the known keys it held,
	// which it writes (one built in memory writes the keys the rules
	// above say).
	decoded bool
	read    []string
}

// EnginePool is one pool of a cluster file in Engine.Pools: its name, its
// replicas, and the model, GPU and tensor parallelism of its engine.
type EnginePool struct {
	GPU                string `json:"gpu"`
	Model              string `json:"model"`
	Name               string `json:"name"`
	Replicas           int    `json:"replicas"`
	TensorParallelSize int    `json:"tensor_parallel_size"`
}

// engineKey is one key of the JSON form: its name, the field it holds,
// and when a description built in memory writes it.
type engineKey struct {
	name  string
	field func(*Engine) any // a pointer to the field
	when  func(*Engine) bool
}

func always(*Engine) bool { return true }

// whenSpec writes speculative decoding's keys together, when it is on
// (its draft's name may be "").
func whenSpec(e *Engine) bool { return e.NumSpeculativeTokens != 0 }

// nonzero writes a fleet's key when set.
func nonzero(name string, field func(*Engine) any) engineKey {
	return engineKey{name, field, func(e *Engine) bool { return !reflect.ValueOf(field(e)).Elem().IsZero() }}
}

// engineKeys are the keys of the JSON form, sorted (as a map's keys are
// written).
var engineKeys = []engineKey{
	{"active_params_b", func(e *Engine) any { return &e.ActiveParamsB }, always},
	{"block_size", func(e *Engine) any { return &e.BlockSize }, always},
	nonzero("decode_gpu", func(e *Engine) any { return &e.DecodeGPU }),
	nonzero("decode_max_num_batched_tokens", func(e *Engine) any { return &e.DecodeMaxNumBatchedTokens }),
	nonzero("decode_max_num_seqs", func(e *Engine) any { return &e.DecodeMaxNumSeqs }),
	nonzero("decode_num_gpu_blocks", func(e *Engine) any { return &e.DecodeNumGPUBlocks }),
	nonzero("decode_replicas", func(e *Engine) any { return &e.DecodeReplicas }),
	nonzero("decode_tensor_parallel_size", func(e *Engine) any { return &e.DecodeTensorParallelSize }),
	{"dtype", func(e *Engine) any { return &e.DType }, always},
	{"enable_chunked_prefill", func(e *Engine) any { return &e.EnableChunkedPrefill }, always},
	{"enable_prefix_caching", func(e *Engine) any { return &e.EnablePrefixCaching }, always},
	nonzero("gateway", func(e *Engine) any { return &e.Gateway }),
	{"gpu", func(e *Engine) any { return &e.GPU }, always},
	{"gpu_memory_utilization", func(e *Engine) any { return &e.GPUMemoryUtilization }, always},
	nonzero("gpus", func(e *Engine) any { return &e.GPUs }),
	{"hf_id", func(e *Engine) any { return &e.HFID }, always},
	{"kv_cache_dtype", func(e *Engine) any { return &e.KVCacheDType }, always},
	{"kv_cache_gib_per_gpu", func(e *Engine) any { return &e.KVCacheGiBPerGPU }, always},
	{"kv_capacity_tokens", func(e *Engine) any { return &e.KVCapacityTokens }, always},
	nonzero("kv_link", func(e *Engine) any { return &e.KVLink }),
	{"max_model_len", func(e *Engine) any { return &e.MaxModelLen }, always},
	{"max_model_len_kv_capped", func(e *Engine) any { return &e.MaxModelLenKVCapped }, always},
	{"max_num_batched_tokens", func(e *Engine) any { return &e.MaxNumBatchedTokens }, always},
	{"max_num_seqs", func(e *Engine) any { return &e.MaxNumSeqs }, always},
	{"max_queue_time_s", func(e *Engine) any { return &e.MaxQueueTimeS }, always},
	{"max_waiting", func(e *Engine) any { return &e.MaxWaiting }, always},
	{"model", func(e *Engine) any { return &e.Model }, always},
	{"num_gpu_blocks", func(e *Engine) any { return &e.NumGPUBlocks }, always},
	{"num_speculative_tokens", func(e *Engine) any { return &e.NumSpeculativeTokens }, whenSpec},
	{"params_b", func(e *Engine) any { return &e.ParamsB }, always},
	nonzero("pools", func(e *Engine) any { return &e.Pools }),
	nonzero("prefill_replicas", func(e *Engine) any { return &e.PrefillReplicas }),
	{"priority_scheduling", func(e *Engine) any { return &e.PriorityScheduling }, always},
	{"profile_table", func(e *Engine) any { return &e.ProfileTable }, always},
	{"reasoning_tokens", func(e *Engine) any { return &e.ReasoningTokens }, always},
	nonzero("replicas", func(e *Engine) any { return &e.Replicas }),
	nonzero("router", func(e *Engine) any { return &e.Router }),
	{"scheduler", func(e *Engine) any { return &e.Scheduler }, always},
	{"spec_acceptance", func(e *Engine) any { return &e.SpecAcceptance }, whenSpec},
	{"spec_draft", func(e *Engine) any { return &e.SpecDraft }, whenSpec},
	{"tensor_parallel_size", func(e *Engine) any { return &e.TensorParallelSize }, always},
	{"weights_gib_per_gpu", func(e *Engine) any { return &e.WeightsGiBPerGPU }, always},
}

// IsZero reports whether e describes nothing (no simulated engine): the
// zero Engine, or an empty object read back. Meta omits such a one.
func (e Engine) IsZero() bool {
	if e.decoded {
		return len(e.read) == 0 && len(e.Extra) == 0
	}
	return reflect.ValueOf(e).IsZero()
}

// EngineField is one key of an Engine's JSON form and its value: for a
// description built in memory a known key's string, int, float64, bool or
// []EnginePool; for one read back, and for a key of Extra, the value as
// encoding/json decodes it into an any (numbers as float64), so that a
// report of a records file shows it as it always has.
type EngineField struct {
	Key   string
	Value any
}

// Fields are the keys e writes, sorted, with their values: what a report
// lists of the engine.
func (e *Engine) Fields() []EngineField {
	var out []EngineField
	for _, k := range e.keys() {
		if _, extra := e.Extra[k]; extra || e.decoded {
			var v any
			if raw, err := e.value(k); err == nil {
				_ = json.Unmarshal(raw, &v)
			}
			out = append(out, EngineField{k, v})
			continue
		}
		v, _ := e.known(k)
		out = append(out, EngineField{k, reflect.ValueOf(v).Elem().Interface()})
	}
	return out
}

// known is a pointer to the field of key k, if k is a known key.
func (e *Engine) known(k string) (any, bool) {
	i, ok := slices.BinarySearchFunc(engineKeys, k, func(ek engineKey, k string) int {
		switch {
		case ek.name < k:
			return -1
		case ek.name > k:
			return 1
		}
		return 0
	})
	if !ok {
		return nil, false
	}
	return engineKeys[i].field(e), true
}

// keys are the keys e writes, sorted.
func (e *Engine) keys() []string {
	var out []string
	if e.decoded {
		out = slices.Clone(e.read)
	} else {
		for _, k := range engineKeys {
			if k.when(e) {
				out = append(out, k.name)
			}
		}
	}
	for k := range e.Extra {
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MarshalJSON writes e as one object with sorted keys (see Engine).
func (e Engine) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range e.keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		raw, err := e.value(k)
		if err != nil {
			return nil, err
		}
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		b.Write(raw)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// value is key k's value as JSON, without HTML escaping (the encoder
// writing the whole applies its own).
func (e *Engine) value(k string) ([]byte, error) {
	if raw, ok := e.Extra[k]; ok {
		return raw, nil
	}
	v, _ := e.known(k)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads an engine description as any goodput version wrote
// it: a known key of another type than this version's, or null, lands
// in Extra, as does an unknown key (a count written as 8192.0 is still a
// count).
func (e *Engine) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*e = Engine{decoded: true}
	for k, raw := range m {
		if p, ok := e.known(k); ok && string(raw) != "null" && decodeField(raw, p) {
			e.read = append(e.read, k)
			continue
		}
		// As the untyped map read it back and wrote it again: through
		// an any (numbers as float64).
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		var nb bytes.Buffer
		enc := json.NewEncoder(&nb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		if e.Extra == nil {
			e.Extra = map[string]json.RawMessage{}
		}
		e.Extra[k] = bytes.TrimSuffix(nb.Bytes(), []byte("\n"))
	}
	slices.Sort(e.read)
	return nil
}

// decodeField decodes raw into the field p points to, reporting whether
// it could; an int field takes an integral number written as a float.
func decodeField(raw json.RawMessage, p any) bool {
	if n, ok := p.(*int); ok {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return false
		}
		*n = int(f)
		return true
	}
	// Into a fresh value: a failed Unmarshal may have filled part of it.
	v := reflect.New(reflect.TypeOf(p).Elem())
	if json.Unmarshal(raw, v.Interface()) != nil {
		return false
	}
	reflect.ValueOf(p).Elem().Set(v.Elem())
	return true
}

// canonical is e as JSON, "" when it describes nothing: equal for equal
// content, whether built in memory or read back.
func (e *Engine) canonical() string {
	if e.IsZero() {
		return ""
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// values are e's keys with their values as JSON, a null as "" (as for a
// key not there).
func (e *Engine) values() map[string]string {
	out := map[string]string{}
	if e.IsZero() {
		return out
	}
	for _, k := range e.keys() {
		raw, err := e.value(k)
		if err == nil && string(raw) != "null" {
			out[k] = string(raw)
		}
	}
	return out
}

// Equal reports whether e and o describe the same engine: the same keys
// with the same values, whether built in memory or read back (so that
// go-cmp compares Metas by it).
func (e Engine) Equal(o Engine) bool { return e.canonical() == o.canonical() }
