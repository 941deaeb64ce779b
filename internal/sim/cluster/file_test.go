package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
)

// TestParseInheritsAndOverrides: a pool's keys override the command
// line's engine (base) and every key it leaves out is base's; replicas
// are numbered pool by pool, each named by its pool.
func TestParseInheritsAndOverrides(t *testing.T) {
	base := sim.DefaultConfig()
	base.MaxNumSeqs = 64 // as --max-num-seqs 64 would set it
	base.MaxWaiting = 10
	data := `# two pools behind one router
router: prefix-aware:cap=4
pools:
  - name: big
    replicas: 2
    gpu: h100-sxm
    model: llama-3.1-70b
    tensor_parallel_size: 4
    max_num_seqs: 128
    max-queue-time: 2s
    enable_prefix_caching: false
  - name: small
    replicas: 3
    gpu: l4
    tp: 1
  - gpu: a100-80gb
`
	got, err := Parse([]byte(data), "c.yaml", base)
	if err != nil {
		t.Fatal(err)
	}
	big := base
	big.GPU, big.Model, big.TP, big.MaxNumSeqs, big.MaxQueueTime, big.EnablePrefixCaching = "h100-sxm", "llama-3.1-70b", 4, 128, 2*time.Second, false
	small := base
	small.GPU = "l4"
	third := base
	third.GPU = "a100-80gb"
	want := Config{
		Router:   Router{Policy: PolicyPrefixAware, LoadCap: 4},
		Replicas: []sim.Config{big, big, small, small, small, third},
		Pools:    []string{"big", "big", "small", "small", "small", "pool3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if _, err := New(got); err != nil {
		t.Errorf("New(Parse(...)) = %v", err)
	}
}

// TestParseMergeKey: a YAML anchor and merge key share settings; a key
// the pool sets itself wins over the merged one.
func TestParseMergeKey(t *testing.T) {
	data := `common: &common {gpu: h200, max_num_seqs: 32}
`
	// common is not a key of the file: anchors live in the pools.
	if _, err := Parse([]byte(data+"pools: [{replicas: 1}]\n"), "c.yaml", sim.DefaultConfig()); err == nil || !strings.Contains(err.Error(), `c.yaml:1: unknown key "common"`) {
		t.Fatalf("Parse with a stray top-level key = %v; want it refused at line 1", err)
	}
	data = `pools:
  - &a {name: a, gpu: h200, max_num_seqs: 32}
  - {<<: *a, name: b, max_num_seqs: 16}
`
	got, err := Parse([]byte(data), "c.yaml", sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Replicas) != 2 || got.Replicas[1].GPU != "h200" || got.Replicas[1].MaxNumSeqs != 16 || got.Pools[1] != "b" {
		t.Errorf("pool b = %+v (%v); want pool a's h200 with its own max_num_seqs 16", got.Replicas[1], got.Pools)
	}
}

// TestParseErrors: every mistake is one line naming the file, the line,
// the pool and the key.
func TestParseErrors(t *testing.T) {
	dense := sim.DefaultConfig()
	badBase := sim.DefaultConfig()
	badBase.GPU = "tpu-v9" // as --gpu tpu-v9 would set it
	tests := []struct {
		name, data string
		base       sim.Config
		want       string // the whole message
	}{
		{"bad yaml", "pools: [\n", dense, `c.yaml:1: not valid YAML: did not find expected node content`},
		// yaml.v3 names line 2, where the block began.
		{"bad yaml deeper", "pools:\n  - name: p\n    replicas: [2\n", dense, `c.yaml:3: not valid YAML: did not find expected ',' or ']'`},
		{"empty", "", dense, "c.yaml: the file is empty: want a mapping with a list of pools"},
		{"not a mapping", "- a\n", dense, "c.yaml:1: want a mapping (router, pools)"},
		{"no pools", "router: least-kv\n", dense, "c.yaml:1: pools: missing: want a list of pools of replicas"},
		{"empty pools", "pools: []\n", dense, "c.yaml:1: pools: want a list of pools, each a mapping with replicas and engine settings"},
		{"pool not a mapping", "pools:\n  - big\n", dense, "c.yaml:2: pools: pool 1: want a mapping of name, replicas and engine settings"},
		{"unknown top key", "routr: least-kv\npools: [{}]\n", dense, `c.yaml:1: unknown key "routr" (did you mean router?)`},
		{"unknown pool key", "pools:\n  - name: big\n    max_num_seq: 8\n", dense, `c.yaml:3: pool "big": unknown key "max_num_seq" (did you mean max_num_seqs?)`},
		{"unknown far key", "pools:\n  - name: big\n    colour: red\n", dense, `c.yaml:3: pool "big": unknown key "colour" (want one of name, replicas, role, model, gpu, ` +
			`tensor_parallel_size, dtype, kv_cache_dtype, max_num_seqs, max_num_batched_tokens, block_size, gpu_memory_utilization, ` +
			`enable_chunked_prefill, enable_prefix_caching, max_model_len, num_gpu_blocks_override, scheduler, max_waiting, max_queue_time, ` +
			`reasoning_tokens, tool_call_share, tool_call_tokens, priority, profile_table, num_speculative_tokens, spec_acceptance, spec_draft, spec_draft_cost_frac)`},
		{"autoscale", "pools: [{}]\nautoscale: {max: 4}\n", dense, "c.yaml:2: autoscale: not supported in this build"},
		{"gateway", "gateway: {}\npools: [{}]\n", dense, "c.yaml:1: gateway: not supported in this build"},
		{"one role only", "pools:\n  - name: p\n    role: prefill\n", dense, `c.yaml:3: pool "p": role: a split needs a prefill pool and a decode pool; every pool here is prefill`},
		{"bad role", "pools:\n  - name: p\n    role: both\n", dense, `c.yaml:3: pool "p": role: "both": want prefill or decode`},
		{"decode first", "pools:\n  - {name: d, role: decode}\n  - {name: p, role: prefill}\n", dense,
			`c.yaml:3: pool "p": role: a prefill pool after a decode pool: list the prefill pools first (replicas are numbered in the file's order, prefill first)`},
		{"role missing later", "pools:\n  - {name: p, role: prefill}\n  - {name: q}\n", dense,
			`c.yaml:3: pool "q": role: missing: pool "p" has a role, so every pool needs one (prefill or decode)`},
		{"role missing first", "pools:\n  - {name: q}\n  - {name: d, role: decode}\n", dense,
			`c.yaml:2: pool "q": role: missing: pool "d" has a role, so every pool needs one (prefill or decode)`},
		{"link without roles", "kv_link: nvlink4\npools: [{}]\n", dense,
			"c.yaml:1: kv_link: no pool has a role: a KV link joins a prefill pool to a decode pool (role: prefill, role: decode)"},
		{"unknown link", "kv_link: carrier-pigeon\npools: [{role: prefill}, {role: decode}]\n", dense, `c.yaml:1: kv_link: unknown link "carrier-pigeon" (want nvlink3, nvlink4, nvlink5, pcie4, pcie4-nop2p, pcie5, pcie5-nop2p, xgmi3)`},
		{"class", "pools:\n  - name: p\n    class: interactive\n", dense, `c.yaml:3: pool "p": class: not supported in this build`},
		{"zero replicas", "pools:\n  - name: big\n    replicas: 0\n", dense, `c.yaml:3: pool "big": replicas: 0: want ≥ 1`},
		{"replicas not a number", "pools:\n  - replicas: two\n", dense, `c.yaml:2: pool "pool1": replicas: "two": want a whole number`},
		{"too many replicas", "pools:\n  - replicas: 60000\n  - name: b\n    replicas: 6000\n", dense, `c.yaml:4: pool "b": replicas: 66000 replicas in all are too many (at most 65535)`},
		{"unknown router", "router: random\npools: [{}]\n", dense,
			`c.yaml:1: router: unknown router policy "random" (want round-robin, least-outstanding, least-kv, prefix-aware, session-affinity, dp-balance)`},
		{"router a list", "router: [a]\npools: [{}]\n", dense, `c.yaml:1: router: want a router as --router spells it, e.g. least-outstanding`},
		{"pool does not fit", "pools:\n  - name: big\n    gpu: h100-sxm\n    model: llama-3.1-70b\n    tp: 1\n", dense,
			`c.yaml:4: pool "big": model: llama-3.1-70b does not fit: 131.4 GiB of weights per GPU > 71.3 GiB usable on h100-sxm (GPU memory utilization 0.90); raise the tensor-parallel size or use a bigger GPU or a smaller dtype`},
		{"engine field", "pools:\n  - name: p\n    gpu_memory_utilization: 1.5\n", dense, `c.yaml:3: pool "p": gpu_memory_utilization: 1.5 must be in (0, 1]`},
		{"inherited", "pools:\n  - name: p\n    replicas: 2\n", badBase, `c.yaml:2: pool "p": gpu: unknown gpu "tpu-v9" (known: a100-40gb, a100-80gb, h100-sxm, h200, b200, h20, l40s, l4, a10g, rtx-4090, rtx-pro-6000, mi300x, or a .yaml profile) (as the command line sets it)`},
		{"given twice", "pools:\n  - name: p\n    tp: 2\n    tensor-parallel-size: 4\n", dense, `c.yaml:4: pool "p": tensor_parallel_size: given twice (as tp on line 3 and as tensor-parallel-size)`},
		{"same key twice", "pools: [{}]\npools: [{}]\n", dense, `c.yaml:2: pools: given twice (first on line 1)`},
		{"same pool name", "pools:\n  - name: a\n  - name: a\n", dense, `c.yaml:3: pool "a": name: two pools are named "a" (the first on line 2)`},
		{"bad bool", "pools:\n  - name: p\n    priority: maybe\n", dense, `c.yaml:3: pool "p": priority: "maybe": want true or false`},
		{"bad duration", "pools:\n  - name: p\n    max_queue_time: 5\n", dense, `c.yaml:3: pool "p": max_queue_time: "5": want a duration with a unit, e.g. 30s`},
		{"bad float", "pools:\n  - name: p\n    spec_acceptance: high\n", dense, `c.yaml:3: pool "p": spec_acceptance: "high": want a number`},
		{"null value", "pools:\n  - name: p\n    gpu:\n", dense, `c.yaml:3: pool "p": gpu: want a word`},
		{"expert parallel dense", "enable_expert_parallel: true\npools:\n  - name: p\n    model: llama-3.1-8b\n", dense,
			`c.yaml:4: pool "p": model: enable_expert_parallel needs an MoE model; llama-3.1-8b is dense`},
		{"nested merge", "pools:\n  - &a {gpu: h200}\n  - &b {<<: *a}\n  - {<<: *b}\n", dense, `c.yaml:3: pool "pool3": <<: a merged mapping may not merge another`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), "c.yaml", tt.base)
			var fe *setting.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse = %v; want a *setting.FileError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte("pools:\n  - replicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseFile(path, sim.DefaultConfig())
	if err != nil || len(cfg.Replicas) != 2 {
		t.Fatalf("ParseFile = %+v, %v; want 2 replicas", cfg, err)
	}
	missing := filepath.Join(t.TempDir(), "none.yaml")
	if _, err := ParseFile(missing, sim.DefaultConfig()); err == nil || err.Error() != missing+": no such file or directory" {
		t.Errorf("ParseFile of a missing file = %v; want the path and the cause", err)
	}
}

// TestHeterogeneousPools: least-outstanding over a fast pool (Llama 3.1
// 8B on an H100-SXM, 3.35 TB/s) and a slow one (the same model on an L4,
// 0.3 TB/s): decoding is bound by reading the 16 GB of weights each step,
// about 11 times longer on the L4, so the L4's requests stay in flight
// longer and the router sends the H100 more. Requests arrive faster than
// either replica alone serves them, so both are always loaded.
func TestHeterogeneousPools(t *testing.T) {
	data := `router: least-outstanding
pools:
  - name: fast
    gpu: h100-sxm
  - name: slow
    gpu: l4
`
	cfg, err := Parse([]byte(data), "c.yaml", sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var arrivals []arrival
	for i := range 120 {
		// One request every 20 ms, 256 tokens in and 64 out.
		arrivals = append(arrivals, arrival{at: int64(i) * 20e6, req: Request{Request: sim.Request{ID: fmt.Sprintf("r%03d", i), PromptTokens: 256, OutputTokens: 64}}})
	}
	drive(t, c, arrivals)
	st := c.Stats()
	fast, slow := st[0].Routed, st[1].Routed
	t.Logf("routed fast %d, slow %d", fast, slow)
	if fast+slow != 120 || fast < 2*slow {
		t.Errorf("routed fast %d, slow %d; want all 120, the fast pool at least twice the slow one's", fast, slow)
	}
}

// Pools with roles split the cluster: the prefill pools' replicas first,
// the file's link, each pool its own engine (DistServe's per-phase
// parallelism: prefill at TP 1, decode at TP 2).
func TestParseSplit(t *testing.T) {
	data := "kv_link: pcie5\npools:\n  - {name: pre, role: prefill, replicas: 2}\n  - {name: dec, role: decode, tp: 2}\n"
	cfg, err := Parse([]byte(data), "c.yaml", sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Disagg; d == nil || d.Prefill != 2 || d.Link != "pcie5" {
		t.Fatalf("Disagg = %+v; want 2 prefill replicas over pcie5", cfg.Disagg)
	}
	if len(cfg.Replicas) != 3 || cfg.Replicas[1].TP != 1 || cfg.Replicas[2].TP != 2 || !slices.Equal(cfg.Pools, []string{"pre", "pre", "dec"}) {
		t.Fatalf("replicas %d (TP %d, %d), pools %v; want pre, pre at TP 1 and dec at TP 2", len(cfg.Replicas), cfg.Replicas[1].TP, cfg.Replicas[2].TP, cfg.Pools)
	}
	g, err := NewDisagg(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 3 || g.Role(1) != RolePrefill || g.Role(2) != RoleDecode {
		t.Errorf("split of %d replicas, roles %s, %s; want 3: prefill, decode", g.Len(), g.Role(1), g.Role(2))
	}
}

// FuzzParse: no input panics the parser or makes it hang; every error is
// a *setting.FileError of one line naming the file, and every config it returns
// the cluster builds, with a pool name for each replica.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"pools: [{}]\n",
		"router: prefix-aware:cap=8\npools:\n  - name: big\n    replicas: 2\n    gpu: h100-sxm\n    model: llama-3.1-70b\n    tensor_parallel_size: 4\n  - name: small\n    gpu: l4\n",
		"pools:\n  - &a {name: a, max_num_seqs: 8}\n  - {<<: *a, name: b}\n",
		"pools: [{replicas: 0}]\n",
		"autoscale: {}\npools: [{role: prefill}]\n",
		"kv_link: nvlink4\npools: [{role: prefill}, {role: decode, replicas: 2, tp: 2}]\n",
		"enable_expert_parallel: true\npools: [{model: qwen3-30b-a3b}]\n",
		"pools: [{tp: 2, tensor_parallel_size: 2}]\n",
		"pools:\n- [\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 || strings.Contains(strings.ToLower(string(data)), "override") {
			// The engine allocates num_gpu_blocks_override's blocks as
			// given (a billion: gigabytes), from a file as from the flag;
			// that is the engine's bound to set, not the parser's.
			return
		}
		cfg, err := Parse(data, "f.yaml", sim.DefaultConfig())
		if err != nil {
			var fe *setting.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse error %v (%T); want a *setting.FileError", err, err)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "f.yaml") {
				t.Fatalf("Parse error %q: want one line starting with the file's name", msg)
			}
			return
		}
		if len(cfg.Replicas) == 0 || len(cfg.Pools) != len(cfg.Replicas) {
			t.Fatalf("Parse = %d replicas, %d pool names; want ≥ 1, one name each", len(cfg.Replicas), len(cfg.Pools))
		}
		if len(cfg.Replicas) <= 8 {
			build := func(c Config) error { _, err := New(c); return err }
			if cfg.Disagg != nil {
				build = func(c Config) error { _, err := NewDisagg(c); return err }
			}
			if err := build(cfg); err != nil {
				t.Fatalf("building Parse(%q) = %v; the parser passed a config the cluster refuses", data, err)
			}
		}
	})
}

// Every field the engine's ConfigError names (sim.ConfigError.Field's
// list) is a pool key, with _ for -, so that an engine error always
// points at the key that set it.
func TestEngineFieldsArePoolKeys(t *testing.T) {
	keys := PoolKeys()
	for _, f := range []string{"model", "gpu", "tensor-parallel-size", "dtype", "kv-cache-dtype", "max-num-seqs", "max-num-batched-tokens",
		"block-size", "gpu-memory-utilization", "max-model-len", "num-gpu-blocks-override", "scheduler", "max-waiting", "max-queue-time",
		"reasoning-tokens", "tool-call-share", "tool-call-tokens", "profile-table", "num-speculative-tokens", "spec-acceptance", "spec-draft",
		"spec-draft-cost-frac"} {
		if k := strings.ReplaceAll(f, "-", "_"); !slices.Contains(keys, k) {
			t.Errorf("the engine's field %s has no pool key %s", f, k)
		}
	}
}
