package tokenize

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Post-processors as they appear in real tokenizer.json files, with ids
// chosen for the fixtures below.
const (
	// Llama 3: ByteLevel then a template adding <|begin_of_text|>.
	llama3Post = `{"type": "Sequence", "processors": [
		{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		{"type": "TemplateProcessing",
		 "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
		 "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
		          {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
		 "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [9000], "tokens": ["<|begin_of_text|>"]}}}]}`
	llama3BOS = 9000
	// Llama 2 / Mistral: <s> (id 1 in the SentencePiece fixture).
	llama2Post = `{"type": "TemplateProcessing",
		"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
		"pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
		         {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
		"special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}`
	// A template with no pair at all, adding </s> (id 2) after the text.
	eosOnlyPost = `{"type": "TemplateProcessing",
		"single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
		"special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}`
	// BERT: [CLS] A [SEP].
	bertPost = `{"type": "TemplateProcessing",
		"single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
		"pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
		         {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
		"special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [9101], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [9102], "tokens": ["[SEP]"]}}}`
)

// withPost returns the tokenizer.json data with its post_processor set to
// post (JSON; "" for none) and the given added tokens (content → id).
func withPost(t testing.TB, data []byte, post string, added map[string]int) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var p any
	if post != "" {
		if err := json.Unmarshal([]byte(post), &p); err != nil {
			t.Fatalf("post_processor fixture: %v", err)
		}
	}
	doc["post_processor"] = p
	at, _ := doc["added_tokens"].([]any)
	for content, id := range added {
		at = append(at, map[string]any{"id": id, "content": content, "special": true})
	}
	doc["added_tokens"] = at
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// byteLevelData is tinyHF's byte-level tokenizer.json.
func byteLevelData(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tinyHF(t, false), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// templated are the fixtures of the template tests: a base tokenizer.json
// with a post_processor, and how many special tokens it adds.
func templated(t *testing.T) []struct {
	name    string
	tok     *HF
	special int
} {
	parse := func(data []byte) *HF {
		tok, err := ParseHF(data)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	bl := byteLevelData(t)
	sp, _ := spFixture(t, spLegacy)
	spMeta, _ := spFixture(t, spMetaspace)
	return []struct {
		name    string
		tok     *HF
		special int
	}{
		{"llama3 byte-level BOS", parse(withPost(t, bl, llama3Post, map[string]int{"<|begin_of_text|>": llama3BOS})), 1},
		{"llama2 legacy <s>", parse(withPost(t, sp, llama2Post, nil)), 1},
		{"mistral metaspace <s>", parse(withPost(t, spMeta, llama2Post, nil)), 1},
		{"pair-less </s>", parse(withPost(t, sp, eosOnlyPost, nil)), 1},
		{"bert [CLS] [SEP]", parse(withPost(t, bl, bertPost, map[string]int{"[CLS]": 9101, "[SEP]": 9102})), 2},
	}
}

func TestPostProcessorCounts(t *testing.T) {
	bl := byteLevelData(t)
	sp, _ := spFixture(t, spLegacy)
	blTok, err := ParseHF(bl)
	if err != nil {
		t.Fatal(err)
	}
	spTok, err := ParseHF(sp)
	if err != nil {
		t.Fatal(err)
	}
	// Hand-worked: tinyHF encodes " the cat" as Ġthe Ġcat and "the" as t
	// he; the SentencePiece fixture "the cat sat" as ▁the ▁cat ▁sat.
	the, cat := blTok.vocab["Ġthe"], blTok.vocab["Ġcat"]
	t1, he := blTok.vocab["t"], blTok.vocab["he"]
	sThe, sCat, sSat := spTok.vocab["▁the"], spTok.vocab["▁cat"], spTok.vocab["▁sat"]
	tests := []struct {
		name    string
		data    []byte
		special int
		in      string
		want    []int // EncodePrompt
	}{
		{"llama3 BOS", withPost(t, bl, llama3Post, map[string]int{"<|begin_of_text|>": llama3BOS}), 1, " the cat", []int{llama3BOS, the, cat}},
		{"llama3 BOS, no leading space", withPost(t, bl, llama3Post, nil), 1, "the", []int{llama3BOS, t1, he}},
		// Hugging Face adds the template to empty text too: [BOS].
		{"llama3 empty text", withPost(t, bl, llama3Post, nil), 1, "", []int{llama3BOS}},
		{"llama2 <s>", withPost(t, sp, llama2Post, nil), 1, "the cat sat", []int{1, sThe, sCat, sSat}},
		{"llama2 empty text", withPost(t, sp, llama2Post, nil), 1, "", []int{1}},
		{"pair-less template, EOS after", withPost(t, sp, eosOnlyPost, nil), 1, "the cat sat", []int{sThe, sCat, sSat, 2}},
		{"bert template", withPost(t, bl, bertPost, nil), 2, " the cat", []int{9101, the, cat, 9102}},
		{"BertProcessing", withPost(t, bl, `{"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}`, nil), 2, " the cat", []int{101, the, cat, 102}},
		{"RobertaProcessing", withPost(t, bl, `{"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": true, "add_prefix_space": true}`, nil), 2, " the cat", []int{0, the, cat, 2}},
		{"ByteLevel adds nothing", withPost(t, bl, `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}`, nil), 0, " the cat", []int{the, cat}},
		{"no post_processor", withPost(t, bl, "", nil), 0, " the cat", []int{the, cat}},
		// One special_tokens entry may stand for several ids.
		{"multi-id special token", withPost(t, bl, `{"type": "TemplateProcessing",
			"single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
			"special_tokens": {"<bos>": {"id": "<bos>", "ids": [7, 8], "tokens": ["<b", "os>"]}}}`, nil), 2, " the cat", []int{7, 8, the, cat}},
		// A later processor wraps what the earlier made: 5 then 6 around.
		{"Sequence of templates", withPost(t, bl, `{"type": "Sequence", "processors": [
			{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "x", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"x": {"id": "x", "ids": [5]}}},
			{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "y", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "z", "type_id": 0}}],
			 "special_tokens": {"y": {"id": "y", "ids": [6]}, "z": {"id": "z", "ids": [4]}}}]}`, nil), 3, " the cat", []int{6, 5, the, cat, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := ParseHF(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.SpecialTokens(); got != tt.special {
				t.Errorf("SpecialTokens() = %d; want %d", got, tt.special)
			}
			if got := SpecialTokens(tok); got != tt.special {
				t.Errorf("SpecialTokens(tok) = %d; want %d", got, tt.special)
			}
			if diff := cmp.Diff(tt.want, tok.EncodePrompt(tt.in)); diff != "" {
				t.Errorf("EncodePrompt(%q) (-want +got):\n%s", tt.in, diff)
			}
			if got := tok.Count(tt.in); got != len(tt.want) {
				t.Errorf("Count(%q) = %d; want %d", tt.in, got, len(tt.want))
			}
			if got, want := CountText(tok, tt.in), len(tt.want)-tt.special; got != want {
				t.Errorf("CountText(%q) = %d; want %d", tt.in, got, want)
			}
			if got, want := len(tok.Encode(tt.in)), len(tt.want)-tt.special; got != want {
				t.Errorf("len(Encode(%q)) = %d; want %d (Encode adds no special tokens)", tt.in, got, want)
			}
		})
	}
}

func TestPostProcessorErrors(t *testing.T) {
	bl := byteLevelData(t)
	a := `{"Sequence": {"id": "A", "type_id": 0}}`
	bos := `{"SpecialToken": {"id": "<s>", "type_id": 0}}`
	st := `"special_tokens": {"<s>": {"id": "<s>", "ids": [1]}}`
	tests := []struct{ name, post, want string }{
		{"unknown type", `{"type": "Bogus"}`, `post_processor "Bogus" is not supported`},
		{"missing special token", `{"type": "TemplateProcessing", "single": [` + bos + `,` + a + `], "special_tokens": {}}`, `special token "<s>" is not in special_tokens`},
		{"no $A", `{"type": "TemplateProcessing", "single": [` + bos + `], ` + st + `}`, "no $A"},
		{"$B in single", `{"type": "TemplateProcessing", "single": [` + bos + `, {"Sequence": {"id": "B", "type_id": 0}}], ` + st + `}`, `got Sequence "B"`},
		{"$A twice", `{"type": "TemplateProcessing", "single": [` + a + `,` + a + `], ` + st + `}`, "want $A exactly once"},
		{"empty piece", `{"type": "TemplateProcessing", "single": [{}, ` + a + `], ` + st + `}`, "piece 0: want one of SpecialToken or Sequence"},
		{"bad bert sep", `{"type": "BertProcessing", "sep": "[SEP]", "cls": ["[CLS]", 101]}`, `BertProcessing sep: want ["token", id]`},
		{"bad processor in Sequence", `{"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "Nope"}]}`, `Sequence 1: "Nope" is not supported`},
		{"too many special tokens", `{"type": "TemplateProcessing", "single": [` + bos + `,` + a + `], "special_tokens": {"<s>": {"id": "<s>", "ids": [` + strings.Repeat("1,", 1100) + `1]}}}`, "more than 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHF(withPost(t, bl, tt.post, nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseHF(post_processor %s) error = %v; want it to contain %q", tt.post, err, tt.want)
			}
		})
	}
}

// TestSynthesizerTemplate checks that prompts asked to be n tokens count n
// with the template's special tokens, both through Prompt and the way
// package workload builds prompts from parts (Calibration, Text,
// ExtendCounted), and that texts keep counting their own tokens.
func TestSynthesizerTemplate(t *testing.T) {
	for _, tt := range templated(t) {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.tok
			s, err := NewSynthesizer(tok)
			if err != nil {
				t.Fatal(err)
			}
			k := tt.special
			if got := s.SpecialTokens(); got != k {
				t.Errorf("SpecialTokens() = %d; want %d", got, k)
			}
			if diff := cmp.Diff(Calibration{Overhead: float64(k), PerToken: 1}, s.Calibration()); diff != "" {
				t.Errorf("Calibration() (-want +got):\n%s", diff)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			for _, n := range []int{k + 1, k + 2, 17, 512, 3000} {
				p := s.Prompt(n, rng)
				if got := tok.Count(p); got != n {
					t.Errorf("Count(Prompt(%d)) = %d; want %d", n, got, n)
				}
				text := s.Text(n, rng)
				if got := CountText(tok, text); got != n {
					t.Errorf("CountText(Text(%d)) = %d; want %d", n, got, n)
				}
				if got := tok.Count(text); got != n+k {
					t.Errorf("Count(Text(%d)) = %d; want %d (the template's %d added)", n, got, n+k, k)
				}
			}
			// Shorter than the template: one token of text is written.
			if got := tok.Count(s.Prompt(1, rng)); got != k+1 {
				t.Errorf("Count(Prompt(1)) = %d; want %d", got, k+1)
			}
			pre := "System: You are a helpful assistant.\n\nUser:"
			if ext := s.Extend(pre, 100, rng); CountText(tok, ext) != 100 || !strings.HasPrefix(ext, pre) {
				t.Errorf("CountText(Extend(%q, 100)) = %d; want 100 and the prefix kept", pre, CountText(tok, ext))
			}

			// As package workload writes a 300-token prompt opening with a
			// 100-token shared prefix: the prefix is a span (no template),
			// the whole is sized by Written.
			const want, shared = 300, 100
			cal := s.Calibration()
			n, span := cal.Written(want), cal.WrittenSpan(shared)
			prefix := s.Text(span, rng)
			var prompt string
			if s.Additive() {
				prompt = s.ExtendCounted(prefix, span, n, rng)
			} else {
				prompt = s.Extend(prefix, n, rng)
			}
			if got := tok.Count(prompt); got != want || !strings.HasPrefix(prompt, prefix) {
				t.Errorf("Count(prefix %d + rest to %d) = %d; want %d, prefix kept", shared, want, got, want)
			}

			// A server calibration is fitted against Count (template
			// included); the synthesizer adds the template on top.
			sc := s.WithCalibration(Calibration{Overhead: 5, PerToken: 1})
			if got := float64(tok.Count(sc.Prompt(want, rng))) + 5; got != want {
				t.Errorf("5 + Count(Prompt(%d)) calibrated +5 = %v; want %d", want, got, want)
			}
			sc = s.WithCalibration(Calibration{Overhead: 2, PerToken: 2})
			if diff := cmp.Diff(Calibration{Overhead: 2 + 2*float64(k), PerToken: 2}, sc.Calibration()); diff != "" {
				t.Errorf("Calibration() with {2, 2} (-want +got):\n%s", diff)
			}
			// A server found not to add the template cancels it out.
			sc = s.WithCalibration(Calibration{Overhead: -float64(k), PerToken: 1})
			if c := sc.Calibration(); !c.IsZero() {
				t.Errorf("Calibration() with {-%d, 1} = %+v; want the identity", k, c)
			}
		})
	}
}

func TestNoSpecialTokens(t *testing.T) {
	tik, err := Tiktoken("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []Tokenizer{Approx{}, tik} {
		if got := SpecialTokens(tok); got != 0 {
			t.Errorf("SpecialTokens(%s) = %d; want 0", tok.Name(), got)
		}
		if got, want := CountText(tok, "hello world"), tok.Count("hello world"); got != want {
			t.Errorf("CountText(%s, hello world) = %d; want Count %d", tok.Name(), got, want)
		}
		s, err := NewSynthesizer(tok)
		if err != nil {
			t.Fatal(err)
		}
		if c := s.Calibration(); c != (Calibration{}) {
			t.Errorf("%s: Calibration() = %+v; want zero", tok.Name(), c)
		}
		if got := tok.Count(s.Prompt(40, rand.New(rand.NewPCG(1, 1)))); got != 40 {
			t.Errorf("%s: Count(Prompt(40)) = %d; want 40", tok.Name(), got)
		}
	}
}

// TestRealTemplates splices the post_processor and added_tokens sections of
// real models' tokenizer.json files (testdata/post_processor, written from
// the public files) onto the byte-level fixture, and checks that a prompt
// gets exactly the special tokens each model's template adds, with the
// ids the file gives: the ids here are written down by hand, not read
// back through the parser under test.
func TestRealTemplates(t *testing.T) {
	want := map[string]struct{ pre, post []int }{
		"llama-3.1.json":         {pre: []int{128000}},
		"llama-2.json":           {pre: []int{1}},
		"gemma-2.json":           {pre: []int{2}},
		"deepseek-v3.json":       {pre: []int{0}},
		"qwen2.5.json":           {},
		"bert-base-uncased.json": {pre: []int{101}, post: []int{102}},
		"roberta-base.json":      {pre: []int{0}, post: []int{2}},
	}
	files, err := filepath.Glob("testdata/post_processor/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Fatalf("testdata/post_processor has %d files, the table %d: keep them in step", len(files), len(want))
	}
	bl := byteLevelData(t)
	plain, err := ParseHF(withPost(t, bl, "", nil))
	if err != nil {
		t.Fatal(err)
	}
	const text = "Hello world"
	body := plain.EncodePrompt(text)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var sec struct {
				PostProcessor json.RawMessage `json:"post_processor"`
				AddedTokens   []struct {
					ID      int    `json:"id"`
					Content string `json:"content"`
				} `json:"added_tokens"`
			}
			if err := json.Unmarshal(raw, &sec); err != nil {
				t.Fatal(err)
			}
			added := map[string]int{}
			for _, a := range sec.AddedTokens {
				added[a.Content] = a.ID
			}
			tok, err := ParseHF(withPost(t, bl, string(sec.PostProcessor), added))
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.EncodePrompt(text)
			wantIDs := append(append(slices.Clone(w.pre), body...), w.post...)
			if diff := cmp.Diff(wantIDs, ids); diff != "" {
				t.Errorf("EncodePrompt(%q) (-want +got):\n%s", text, diff)
			}
			if got := tok.Count(text); got != len(wantIDs) {
				t.Errorf("Count(%q) = %d; want %d", text, got, len(wantIDs))
			}
		})
	}
}
