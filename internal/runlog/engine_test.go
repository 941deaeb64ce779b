package runlog_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

// oldMeta is a meta line as goodput wrote it while the engine description
// was a map[string]any (a cluster of pools with a prefill/decode split and
// speculative decoding, so every key family is there), with a key this
// version does not know and a count written as a float.
const oldMeta = `{"meta":{"tool":"goodput","command":"sim","started":"2026-01-02T03:04:05Z","target":"virtual-time","backend":"sim","endpoint":"/v1/completions","model":"m","seed":1,"levels":[{"request_rate":1,"burstiness":1,"max_concurrency":0,"num_prompts":4}],` +
	`"simulated":{"active_params_b":8.03,"block_size":16,"decode_gpu":"l4","decode_replicas":1,"dtype":"bf16","enable_chunked_prefill":true,"enable_prefix_caching":true,"future_key":{"a":[1,2.5,"<x>"]},"gateway":"rate-limit=10/s","gpu":"h100-sxm","gpu_memory_utilization":0.9,"gpus":4,"hf_id":"","kv_cache_dtype":"bf16","kv_cache_gib_per_gpu":54.312,"kv_capacity_tokens":444928,"kv_link":"gpu","max_model_len":131072,"max_model_len_kv_capped":false,"max_num_batched_tokens":8192.0,"max_num_seqs":1024,"max_queue_time_s":0,"max_waiting":0,"model":"llama-3.1-8b","num_gpu_blocks":27808,"num_speculative_tokens":3,"params_b":8.03,"pools":[{"gpu":"h100-sxm","model":"llama-3.1-8b","name":"big","replicas":1,"tensor_parallel_size":2}],"prefill_replicas":1,"priority_scheduling":false,"profile_table":"","reasoning_tokens":0,"replicas":2,"router":"round-robin","scheduler":"vllm-v1","spec_acceptance":0.7,"spec_draft":"","tensor_parallel_size":1,"weights_gib_per_gpu":14.958}}}`

// TestEngineReadsOldMeta: a meta line written while the description was
// a map reads into the typed Engine and writes back byte for byte (a
// float count as the map wrote it back, an integer), the typed fields
// holding what the keys said.
func TestEngineReadsOldMeta(t *testing.T) {
	var ml struct {
		Meta *runlog.Meta `json:"meta"`
	}
	if err := json.Unmarshal([]byte(oldMeta), &ml); err != nil {
		t.Fatal(err)
	}
	e := ml.Meta.Simulated
	if e.GPU != "h100-sxm" || e.MaxNumBatchedTokens != 8192 || !e.EnableChunkedPrefill || e.Replicas != 2 || e.NumSpeculativeTokens != 3 ||
		len(e.Pools) != 1 || e.Pools[0].TensorParallelSize != 2 || e.DecodeGPU != "l4" {
		t.Errorf("read back = %+v; want the keys' values in the fields", e)
	}
	if _, ok := e.Extra["future_key"]; !ok {
		t.Errorf("Extra = %v; want the unknown key kept", e.Extra)
	}
	got, err := json.Marshal(ml)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(oldMeta, `"max_num_batched_tokens":8192.0`, `"max_num_batched_tokens":8192`, 1)
	want = strings.Replace(want, `"<x>"`, `"\u003cx\u003e"`, 1) // json.Marshal's HTML escaping, as before
	if string(got) != want {
		t.Errorf("written back:\n%s\nwant:\n%s", got, want)
	}
}

// TestEngineWritesAsTheMap: a description built in memory writes the
// engine's keys always, zeros included, and a fleet's and speculative
// decoding's only when set; the zero Engine is left out of the meta.
func TestEngineWritesAsTheMap(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    runlog.Engine
		has  []string
		not  []string
	}{
		{"engine alone", runlog.Engine{Model: "m", GPU: "g"}, []string{`"hf_id":""`, `"max_waiting":0`, `"profile_table":""`, `"enable_prefix_caching":false`},
			[]string{"replicas", "spec_", "pools", "decode_", "router"}},
		{"spec with no draft named", runlog.Engine{Model: "m", NumSpeculativeTokens: 2}, []string{`"num_speculative_tokens":2`, `"spec_acceptance":0`, `"spec_draft":""`}, nil},
		{"fleet", runlog.Engine{Model: "m", Replicas: 3, Router: "least-kv"}, []string{`"replicas":3`, `"router":"least-kv"`}, []string{"gateway", "gpus"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.e)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.has {
				if !bytes.Contains(b, []byte(w)) {
					t.Errorf("Marshal = %s; want %s in it", b, w)
				}
			}
			for _, w := range tt.not {
				if bytes.Contains(b, []byte(w)) {
					t.Errorf("Marshal = %s; want no %s", b, w)
				}
			}
			// Sorted keys, as a map's.
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if again, _ := json.Marshal(m); !bytes.Equal(again, b) {
				t.Errorf("Marshal = %s; want it as the map of its keys writes it: %s", b, again)
			}
		})
	}
	b, err := json.Marshal(runlog.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("simulated")) {
		t.Errorf("Marshal(Meta{}) = %s; want no simulated key", b)
	}
	var m runlog.Meta
	if err := json.Unmarshal([]byte(`{"simulated":{}}`), &m); err != nil || !m.Simulated.IsZero() {
		t.Errorf("an empty description read back: IsZero = false, err %v; want true", err)
	}
}

// FuzzEngineRoundTrip: whatever object an engine description reads, it
// writes back in a form that reads back to the same.
func FuzzEngineRoundTrip(f *testing.F) {
	f.Add(`{"gpu":"h100","max_num_seqs":8.0,"pools":[1],"x":null}`)
	f.Add(`{"pools":[{"name":"a","replicas":2}],"spec_draft":"","num_speculative_tokens":2}`)
	f.Fuzz(func(t *testing.T, js string) {
		var e runlog.Engine
		if json.Unmarshal([]byte(js), &e) != nil {
			return
		}
		once, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("Marshal(%s) = %v", js, err)
		}
		var back runlog.Engine
		if err := json.Unmarshal(once, &back); err != nil {
			t.Fatalf("Unmarshal(%s) = %v", once, err)
		}
		if twice, _ := json.Marshal(back); !bytes.Equal(once, twice) {
			t.Errorf("%s wrote %s, then %s", js, once, twice)
		}
	})
}
