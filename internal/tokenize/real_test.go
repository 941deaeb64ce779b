package tokenize

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/google/go-cmp/cmp"
)

func TestTiktokenKnownCounts(t *testing.T) {
	// Counts checked with OpenAI's tiktoken: "hello world" is 2 tokens in
	// both encodings; " tokenization" is " token" + "ization".
	tests := []struct {
		enc, in string
		want    int
	}{
		{"cl100k_base", "hello world", 2},
		{"o200k_base", "hello world", 2},
		{"cl100k_base", "", 0},
		{"cl100k_base", " tokenization", 2},
	}
	for _, tt := range tests {
		t.Run(tt.enc+"/"+tt.in, func(t *testing.T) {
			tok, err := Tiktoken(tt.enc)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Count(tt.in); got != tt.want {
				t.Errorf("Count(%q) = %d; want %d", tt.in, got, tt.want)
			}
			if got := tok.Decode(tok.Encode(tt.in)); got != tt.in {
				t.Errorf("Decode(Encode(%q)) = %q", tt.in, got)
			}
		})
	}
	if _, err := Tiktoken("p99k"); err == nil {
		t.Errorf("Tiktoken(p99k) succeeded; want an error")
	}
}

func TestSynthesizerExactTiktoken(t *testing.T) {
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		t.Run(enc, func(t *testing.T) {
			tok, _ := Tiktoken(enc)
			s, err := NewSynthesizer(tok)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Additive() {
				t.Errorf("Additive() = false; want true for a GPT-style pre-tokenizer")
			}
			rng := rand.New(rand.NewPCG(5, 5))
			for _, n := range []int{1, 2, 17, 512, 3000} {
				if got := tok.Count(s.Text(n, rng)); got != n {
					t.Errorf("Count(Text(%d)) = %d; want %d", n, got, n)
				}
			}
			p := "System: You are a helpful assistant.\n\nUser:"
			ext := s.Extend(p, 100, rng)
			if got := tok.Count(ext); got != 100 || !strings.HasPrefix(ext, p) {
				t.Errorf("Count(Extend(%q, 100)) = %d; want 100 and the prefix kept", p, got)
			}
		})
	}
}

// tinyHF writes a byte-level BPE tokenizer.json whose vocabulary is the
// 256 byte symbols plus merges building " the", "he", " cat" and 100
// made-up words, so that hand-worked encodings and synthesis can be tested.
func tinyHF(t *testing.T, splitStyle bool) string {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[byteChar[b]] = len(vocab)
	}
	var merges [][2]string
	add := func(a, b string) {
		if _, ok := vocab[a+b]; ok {
			return
		}
		merges = append(merges, [2]string{a, b})
		vocab[a+b] = len(vocab)
	}
	word := func(w string) { // left-to-right merges of the byte symbols of w
		cur := byteChar[w[0]]
		for i := 1; i < len(w); i++ {
			add(cur, byteChar[w[i]])
			cur += byteChar[w[i]]
		}
	}
	word(" the")
	add("h", "e") // after " the"'s merges, so " the" still merges whole
	word(" cat")
	rng := rand.New(rand.NewPCG(9, 9))
	for range 100 {
		var b strings.Builder
		b.WriteByte(' ')
		for range 3 + rng.IntN(4) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		word(b.String())
		word(b.String()[1:])
	}
	pre := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}
	if splitStyle {
		pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]string{"Regex": gpt2Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}}
	}
	doc := map[string]any{
		"added_tokens":  []any{map[string]any{"id": len(vocab), "content": "<|eot|>", "special": true}},
		"normalizer":    nil,
		"pre_tokenizer": pre,
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": splitStyle},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	os.Mkdir(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestHFEncode(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(map[bool]string{false: "bytelevel", true: "split+ignore_merges"}[split], func(t *testing.T) {
			tok, err := Load(tinyHF(t, split))
			if err != nil {
				t.Fatal(err)
			}
			if tok.Name() != "hf:tiny" {
				t.Errorf("Name() = %q; want hf:tiny", tok.Name())
			}
			h := tok.(*HF)
			id := func(s string) int { return h.vocab[s] }
			tests := []struct {
				in   string
				want []int
			}{
				// " the" and " cat" are single tokens; "the" (no space) is
				// "t" + "he" as only the merge h+e applies.
				{" the cat", []int{id("Ġthe"), id("Ġcat")}},
				{"the", []int{id("t"), id("he")}},
				// "!" is its own pre-token and byte symbol.
				{" cat!", []int{id("Ġcat"), id("!")}},
				{"é", []int{id(byteChar[0xc3]), id(byteChar[0xa9])}},
			}
			for _, tt := range tests {
				got := tok.Encode(tt.in)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Encode(%q) (-want +got):\n%s", tt.in, diff)
				}
				if back := tok.Decode(got); back != tt.in {
					t.Errorf("Decode(Encode(%q)) = %q", tt.in, back)
				}
			}
			s, err := NewSynthesizer(tok)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			for _, n := range []int{1, 5, 64, 700} {
				if got := tok.Count(s.Text(n, rng)); got != n {
					t.Errorf("Count(Text(%d)) = %d; want %d", n, got, n)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	tests := []struct{ name, spec, want string }{
		{"missing", filepath.Join(dir, "nope.json"), "nope.json"},
		{"not json", write("a.json", "{"), "tokenizer.json"},
		{"wordpiece", write("b.json", `{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`), "model type \"WordPiece\" is not supported"},
		{"metaspace without replacement", write("c.json", `{"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`), "without a one-character replacement"},
		{"bad merge", write("d.json", `{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`), "merge 0"},
		{"tiktoken name", "tiktoken:gpt5", "want o200k_base or cl100k_base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load(%q) error = %v; want it to contain %q", tt.spec, err, tt.want)
			}
		})
	}
	if tok, err := Load(""); err != nil || tok.Name() != "approx" {
		t.Errorf("Load(\"\") = %v, %v; want approx", tok, err)
	}
}

func FuzzParseHF(f *testing.F) {
	f.Add([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`))
	f.Add([]byte(`{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "a"]]}}`))
	// Post-processors: Llama 3's Sequence of ByteLevel and a BOS template,
	// BERT's processing, a template with two special tokens and no pair.
	f.Add([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel"},
		{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
		"special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [3], "tokens": ["<|begin_of_text|>"]}}}]},
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`))
	f.Add([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 5]},
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}}`))
	f.Add([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "post_processor": {"type": "TemplateProcessing",
		"single": [{"SpecialToken": {"id": "x", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "y", "type_id": 0}}],
		"special_tokens": {"x": {"id": "x", "ids": [7, 8]}, "y": {"id": "y", "ids": []}}},
		"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ParseHF(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab ba"} {
			checkCountInvariant(t, tok, s)
			_ = tok.Decode(tok.EncodePrompt(s))
		}
	})
}

// checkCountInvariant checks what the Tokenizer interface promises of a
// parsed tokenizer.json: Count is the prompt with its special tokens,
// Encode the text alone.
func checkCountInvariant(t *testing.T, tok *HF, s string) {
	t.Helper()
	n, k := len(tok.Encode(s)), tok.SpecialTokens()
	if got := tok.Count(s); got != n+k {
		t.Errorf("Count(%q) = %d; want len(Encode) %d + SpecialTokens %d", s, got, n, k)
	}
	if got := len(tok.EncodePrompt(s)); got != n+k {
		t.Errorf("len(EncodePrompt(%q)) = %d; want %d", s, got, n+k)
	}
	if got := CountText(tok, s); got != n {
		t.Errorf("CountText(%q) = %d; want %d", s, got, n)
	}
}

// BenchmarkSynthesize100kTiktoken builds 100,000 exact-length prompts of
// 1,000 o200k tokens (the goal: under 10 s with a tokenizer).
func BenchmarkSynthesize100kTiktoken(b *testing.B) {
	tok, err := Tiktoken("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewSynthesizer(tok)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	n := perfgoal.Size(100000, 100)
	for b.Loop() {
		for range n {
			s.Text(1000, rng)
		}
	}
}

func BenchmarkNewSynthesizerTiktoken(b *testing.B) {
	tok, _ := Tiktoken("o200k_base")
	for b.Loop() {
		NewSynthesizer(tok)
	}
}

func BenchmarkTiktokenCount1000(b *testing.B) {
	tok, _ := Tiktoken("o200k_base")
	s, _ := NewSynthesizer(tok)
	text := s.Text(1000, rand.New(rand.NewPCG(1, 1)))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Count(text)
	}
}
