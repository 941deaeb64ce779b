package costmodel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseHFConfigFamilies parses one public config.json shape per family
// (testdata/hf/*/config.json: each model's published dimensions) and checks
// the profile and the parameter counts, worked by hand from the configs
// (norms and biases ignored):
//
//   - Qwen2.5-7B: attention 3584·3584·2 + 2·3584·512 = 29,360,128; MLP
//     3·3584·18944 = 203,685,888; × 28 = 6,525,288,448; embeddings
//     2·152064·3584 = 1,089,994,752 → 7,615,283,200 (published 7.61 B).
//   - Mistral-7B-v0.3: 218,103,808 per layer × 32 + 2·32768·4096 =
//     7,247,757,312 (7.25 B).
//   - Mixtral-8x7B: attention 41,943,040 + 8 experts 8·3·4096·14336 =
//     1,409,286,144 + router 32,768 → 1,451,261,952 × 32 + 262,144,000 =
//     46,702,526,464 (46.7 B); active: 2 experts 352,321,536 + 32,768 +
//     41,943,040 = 394,297,344 × 32 + 262,144,000 = 12,879,659,008 (12.9 B).
//   - Qwen1.5-MoE-A2.7B (qwen2_moe, shared expert): attention 16,777,216 +
//     60·3·2048·1408 = 519,045,120 + shared 3·2048·5632 = 34,603,008 +
//     router 122,880 → 570,548,224 × 24 + 622,329,856 = 14,315,487,232
//     (14.3 B); active 4·3·2048·1408 + 34,603,008 + 122,880 + 16,777,216 =
//     86,106,112 × 24 + 622,329,856 = 2,688,876,544 (2.7 B).
//   - DeepSeek-V3 (MLA): attention q 7168·1536 + 1536·128·192 = 48,758,784,
//     kv_a 7168·576 = 4,128,768, kv_b 512·128·256 = 16,777,216, o
//     128·128·7168 = 117,440,512 → 187,105,280 × 61 = 11,413,422,080;
//     3 dense MLPs 3·7168·18432 × 3 = 1,189,085,184; 58 MoE layers of
//     256·3·7168·2048 + shared 44,040,192 + router 1,835,008 =
//     11,320,164,352 → 656,569,532,416; embeddings 1,853,358,080: total
//     671,025,397,760 (published 671 B); active: (8 + 1 shared)·44,040,192 +
//     1,835,008 = 398,196,736 × 58 = 23,095,410,688 → 37,551,276,032
//     (published 37 B). KV per token: 61 · (512 + 64) · 2 B = 70,272 B.
func TestParseHFConfigFamilies(t *testing.T) {
	tests := []struct {
		dir            string
		want           Model
		params, active int64
		kvBytes        float64 // bf16 KV bytes per token, all layers
	}{
		{"Llama-3.1-8B", Model{Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, MaxPosition: 131072},
			8_029_995_008, 8_029_995_008, 131072},
		{"Qwen2.5-7B", Model{Name: "qwen2.5-7b", Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, Intermediate: 18944, Vocab: 152064, MaxPosition: 131072},
			7_615_283_200, 7_615_283_200, 2 * 28 * 4 * 128 * 2},
		{"Qwen3-32B", Model{Name: "qwen3-32b", Layers: 64, Hidden: 5120, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 25600, Vocab: 151936, MaxPosition: 40960, Thinking: true},
			32_761_446_400, 32_761_446_400, 2 * 64 * 8 * 128 * 2},
		{"Mistral-7B-v0.3", Model{Name: "mistral-7b-v0.3", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, Intermediate: 14336, Vocab: 32768, MaxPosition: 32768},
			7_247_757_312, 7_247_757_312, 131072},
		{"Mixtral-8x7B-v0.1", Model{Name: "mixtral-8x7b-v0.1", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, Experts: 8, ActiveExperts: 2, ExpertIntermediate: 14336, Vocab: 32000, MaxPosition: 32768},
			46_702_526_464, 12_879_659_008, 131072},
		{"Qwen3-30B-A3B", Model{Name: "qwen3-30b-a3b", Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128, Intermediate: 6144, Experts: 128, ActiveExperts: 8, ExpertIntermediate: 768, Vocab: 151936, MaxPosition: 40960, Thinking: true},
			30_531_911_680, 3_352_821_760, 2 * 48 * 4 * 128 * 2},
		{"Qwen1.5-MoE-A2.7B", Model{Name: "qwen1.5-moe-a2.7b", Layers: 24, Hidden: 2048, Heads: 16, KVHeads: 16, Intermediate: 5632, Experts: 60, ActiveExperts: 4, ExpertIntermediate: 1408, SharedExpertIntermediate: 5632, Vocab: 151936, MaxPosition: 8192},
			14_315_487_232, 2_688_876_544, 2 * 24 * 16 * 128 * 2},
		{"DeepSeek-V3", Model{Name: "deepseek-v3", Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 192, Intermediate: 18432, Experts: 256, ActiveExperts: 8, ExpertIntermediate: 2048, SharedExpertIntermediate: 2048, DenseLayers: 3,
			KVLoraRank: 512, QLoraRank: 1536, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128, Vocab: 129280, MaxPosition: 163840},
			671_025_397_760, 37_551_276_032, 70272},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			m, err := LookupModel(filepath.Join("testdata", "hf", tt.dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m); diff != "" {
				t.Errorf("LookupModel(%s) mismatch (-want +got):\n%s", tt.dir, diff)
			}
			if got := m.Params(); got != tt.params {
				t.Errorf("Params = %d; want %d", got, tt.params)
			}
			if got := m.ActiveParams(); got != tt.active {
				t.Errorf("ActiveParams = %d; want %d", got, tt.active)
			}
			if got := m.KVBytesPerToken(2); got != tt.kvBytes {
				t.Errorf("KVBytesPerToken(2) = %v; want %v", got, tt.kvBytes)
			}
		})
	}
}

// The parsed config of a built-in model matches the built-in profile, so
// a user's config.json and a built-in name price a model alike.
func TestHFConfigMatchesBuiltins(t *testing.T) {
	for _, c := range []struct{ dir, builtin string }{{"Llama-3.1-8B", "llama-3.1-8b"}, {"Qwen3-30B-A3B", "qwen3-30b-a3b"}, {"Qwen3-32B", "qwen3-32b"}} {
		hf, err := LoadHFConfig(filepath.Join("testdata", "hf", c.dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := LookupModel(c.builtin)
		hf.Name, hf.HFID, hf.Aliases = b.Name, b.HFID, b.Aliases
		if diff := cmp.Diff(b, hf); diff != "" {
			t.Errorf("%s config.json vs built-in (-built-in +parsed):\n%s", c.dir, diff)
		}
	}
}

func TestParseHFConfigErrors(t *testing.T) {
	base := `"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256`
	tests := []struct {
		name, json, field, want string
	}{
		{"not json", `{`, "", "not a JSON object"},
		{"unknown family", `{"model_type": "gpt2", "n_layer": 12}`, "model_type", `model_type: "gpt2" is not supported`},
		{"no model_type", `{"hidden_size": 1}`, "model_type", "model_type: missing"},
		{"missing layers", `{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 1, "num_attention_heads": 32, "vocab_size": 1}`, "num_hidden_layers", "num_hidden_layers: missing"},
		{"string for int", `{` + strings.Replace(base, `"hidden_size": 4096`, `"hidden_size": "4096"`, 1) + `}`, "hidden_size", `hidden_size: want an integer, got "4096"`},
		{"fraction", `{` + strings.Replace(base, `"hidden_size": 4096`, `"hidden_size": 40.5`, 1) + `}`, "hidden_size", "hidden_size: want a non-negative integer, got 40.5"},
		{"zero heads", `{` + strings.Replace(base, `"num_attention_heads": 32`, `"num_attention_heads": 0`, 1) + `}`, "num_attention_heads", "num_attention_heads: must be > 0"},
		{"kv heads not dividing", `{` + strings.Replace(base, `"num_key_value_heads": 8`, `"num_key_value_heads": 5`, 1) + `}`, "num_key_value_heads", "num_key_value_heads: 5 must divide num_attention_heads 32"},
		{"dense without intermediate", `{` + strings.Replace(base, `"intermediate_size": 14336, `, ``, 1) + `}`, "intermediate_size", "intermediate_size: missing"},
		{"bad tie", `{` + base + `, "tie_word_embeddings": 1}`, "tie_word_embeddings", "tie_word_embeddings: want true or false"},
		{"moe without experts", `{"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "vocab_size": 10, "moe_intermediate_size": 768, "num_experts_per_tok": 8}`, "num_experts", "num_experts: missing"},
		{"mla without rank", `{"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128, "vocab_size": 10, "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048}`, "kv_lora_rank", "kv_lora_rank: missing"},
		{"too many dense layers", `{"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 2, "num_attention_heads": 128, "vocab_size": 10, "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "first_k_dense_replace": 3}`, "first_k_dense_replace", "first_k_dense_replace: 3 exceeds num_hidden_layers 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHFConfig(strings.NewReader(tt.json), "x")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseHFConfig(%s) = %v; want an error containing %q", tt.json, err, tt.want)
			}
			var fe *HFConfigError
			if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
				t.Errorf("ParseHFConfig(%s) error %v names field %v; want %q", tt.json, err, fe, tt.field)
			}
		})
	}
	// A missing file names the path.
	if _, err := LookupModel(filepath.Join(t.TempDir(), "nope", "config.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("LookupModel(missing config.json) = %v; want no such file", err)
	}
}

// A config.json's text_config (multimodal wrappers) is used when the top
// level describes no language model.
func TestParseHFConfigTextConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "hf", "Mistral-7B-v0.3", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseHFConfig(strings.NewReader(`{"model_type": "mistral3", "text_config": `+string(b)+`}`), "wrapped")
	if err != nil || m.Layers != 32 || m.Vocab != 32768 {
		t.Errorf("ParseHFConfig(text_config wrapper) = %+v, %v; want the wrapped Mistral's 32 layers and 32768 vocab", m, err)
	}
}

func FuzzParseHFConfig(f *testing.F) {
	for _, dir := range []string{"Llama-3.1-8B", "Qwen3-30B-A3B", "DeepSeek-V3", "Mixtral-8x7B-v0.1", "Qwen1.5-MoE-A2.7B"} {
		b, err := os.ReadFile(filepath.Join("testdata", "hf", dir, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`{"model_type": "llama"}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseHFConfig(strings.NewReader(s), "fuzz")
		if err != nil {
			return
		}
		// A config that parses must price: positive sizes, and a
		// deployment on a built-in GPU whose steps take finite time.
		if m.Params() <= 0 || m.ActiveParams() <= 0 || m.ActiveParams() > m.Params() || !(m.KVBytesPerToken(2) > 0) {
			t.Fatalf("parsed model %+v: params %d active %d kv %v", m, m.Params(), m.ActiveParams(), m.KVBytesPerToken(2))
		}
		g, _ := LookupGPU("h100-sxm")
		d, err := NewDeployment(m, g, 1, "bf16", "auto")
		if err != nil {
			return
		}
		var b Batch
		b.Add(100, 50, true)
		b.Add(1, 500, false)
		if ns := d.IterationNs(&b); ns <= 0 {
			t.Fatalf("IterationNs = %d for %+v", ns, m)
		}
	})
}
