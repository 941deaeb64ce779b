package tokenize

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// spOpts chooses a variant of the hand-built SentencePiece-style fixture.
type spOpts struct {
	metaspace    bool   // Metaspace pre-tokenizer (prepend_scheme first); else the legacy normalizer
	split        bool   // Metaspace split
	byteFallback bool   // model byte_fallback
	unk          string // model unk_token ("" for none)
	fuseUnk      bool
	dropBytes    []byte // byte tokens left out of the vocabulary
	decoder      any    // nil: the usual Replace/ByteFallback/Fuse/Strip sequence
	noDecoder    bool   // "decoder": null
	extraWords   []string
}

// Fixed ids of the fixture: <unk> 0, <s> 1, </s> 2, "<0xXX>" 3+0xXX (so
// 3..258), "▁" 259, "a".."z" 260..285, "." 286, "," 287, "!" 288, ":" 289;
// then the merged tokens, numbered in merge order from 290 ("▁▁" 290 …
// "▁lower" 296).
const (
	spUnk   = 0
	spMeta  = 259
	spFirst = 290
)

func spByte(b byte) int { return 3 + int(b) }
func spChar(c byte) int { return 260 + int(c-'a') }

// spFixture returns a tokenizer.json and its merges in rank order. The
// merges, ranks 0..7 first, are chosen so that order matters:
//
//	0 ▁ ▁   1 l o   2 o w   3 lo w   4 ▁ low   5 e r   6 ▁low er   7 o o
//
// then left-to-right merges building "▁the", "▁cat", "▁sat" and 100
// made-up words of the letters bdfgijkmnpquvxyz (none of the letters of
// the hand-worked cases, so their merges cannot interfere).
func spFixture(t testing.TB, o spOpts) ([]byte, [][2]string) {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	drop := map[byte]bool{}
	for _, b := range o.dropBytes {
		drop[b] = true
	}
	for b := range 256 {
		if !drop[byte(b)] {
			vocab[fmt.Sprintf("<0x%02X>", b)] = spByte(byte(b))
		}
	}
	vocab["▁"] = spMeta
	for c := byte('a'); c <= 'z'; c++ {
		vocab[string(c)] = spChar(c)
	}
	for i, p := range []string{".", ",", "!", ":"} {
		vocab[p] = 286 + i
	}
	next := spFirst
	var merges [][2]string
	add := func(a, b string) {
		if _, ok := vocab[a+b]; ok {
			return
		}
		merges = append(merges, [2]string{a, b})
		vocab[a+b] = next
		next++
	}
	word := func(w string) { // left-to-right merges from "▁"
		cur := "▁"
		for _, r := range w {
			add(cur, string(r))
			cur += string(r)
		}
	}
	add("▁", "▁")
	add("l", "o")
	add("o", "w")
	add("lo", "w")
	add("▁", "low")
	add("e", "r")
	add("▁low", "er")
	add("o", "o")
	for _, w := range []string{"the", "cat", "sat"} {
		word(w)
	}
	const letters = "bdfgijkmnpquvxyz"
	rng := rand.New(rand.NewPCG(7, 7))
	for range 100 {
		var b strings.Builder
		for range 3 + rng.IntN(4) {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		word(b.String())
	}
	for _, w := range o.extraWords {
		word(w)
	}

	model := map[string]any{"type": "BPE", "vocab": vocab, "byte_fallback": o.byteFallback,
		"fuse_unk": o.fuseUnk, "dropout": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil}
	if o.unk != "" {
		model["unk_token"] = o.unk
	} else {
		model["unk_token"] = nil
	}
	dec := o.decoder
	if dec == nil {
		dec = map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]string{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}}
	}
	if o.noDecoder {
		dec = nil
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<unk>", "special": true},
			map[string]any{"id": 1, "content": "<s>", "special": true},
			map[string]any{"id": 2, "content": "</s>", "special": true},
		},
		"model":   model,
		"decoder": dec,
	}
	if o.metaspace {
		// Mistral v0.3 style: no normalizer, merges as pairs.
		doc["normalizer"] = nil
		doc["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": o.split}
		model["merges"] = merges
	} else {
		// Llama 2 style: Prepend and Replace, no pre-tokenizer, merges as "A B".
		doc["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]string{"String": " "}, "content": "▁"},
		}}
		doc["pre_tokenizer"] = nil
		var ms []string
		for _, m := range merges {
			ms = append(ms, m[0]+" "+m[1])
		}
		model["merges"] = ms
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data, merges
}

func spTokenizer(t testing.TB, o spOpts) *HF {
	t.Helper()
	data, _ := spFixture(t, o)
	tok, err := ParseHF(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var (
	spLegacy    = spOpts{byteFallback: true, unk: "<unk>", fuseUnk: true}
	spMetaspace = spOpts{metaspace: true, byteFallback: true, unk: "<unk>", fuseUnk: true}
)

func TestSPMEncode(t *testing.T) {
	id := func(tok *HF, s string) int {
		i, ok := tok.vocab[s]
		if !ok {
			t.Fatalf("fixture has no token %q", s)
		}
		return i
	}
	type tcase struct {
		name, in string
		want     []string // tokens, or "#n" for id n
	}
	common := []tcase{
		// "▁the▁cat▁sat": ▁+t, ▁t+h, ▁th+e (and so on) make three words.
		{"words", "the cat sat", []string{"▁the", "▁cat", "▁sat"}},
		// "▁é": é is not in the vocabulary; its UTF-8 bytes C3 A9 are.
		{"byte fallback", "é", []string{"▁", "#198", "#172"}},
		// "\n" is byte 0A: id 3+10 = 13.
		{"newline", "\n", []string{"▁", "#13"}},
		// "H" falls back to byte 48 (id 75); "i" is a character token.
		{"upper case", "Hi", []string{"▁", "#75", "i"}},
		// ▁ l o w e r: l+o (rank 1) before o+w (2), then lo+w (3),
		// ▁+low (4), e+r (5), ▁low+er (6): one token.
		{"merge order", "lower", []string{"▁lower"}},
		// ▁ s l o w: l+o (1) wins over o+w (2), so lo+w (3) makes "low";
		// then ▁+s (rank of "▁sat"'s first merge). Had o+w gone first it
		// would end as ▁s l ow.
		{"rank beats position", "slow", []string{"▁s", "low"}},
		// ▁ o o o: o+o ties at positions 1 and 2; the leftmost merges.
		{"leftmost on equal rank", "ooo", []string{"▁", "oo", "o"}},
		{"empty", "", nil},
		// Added tokens in text are plain text: "<s>" is three byte
		// fallbacks 3C, "s", 3E (ids 63, 65).
		{"added token is text", "<s>", []string{"▁", "#63", "s", "#65"}},
	}
	tests := []struct {
		name string
		opts spOpts
		more []tcase
	}{
		{"legacy", spLegacy, []tcase{
			// Prepend then Replace: "▁the▁▁cat"; ▁+▁ is rank 0 so "▁▁"
			// forms before ▁+c, leaving c a t.
			{"two spaces", "the  cat", []string{"▁the", "▁▁", "c", "a", "t"}},
			// " cat" → "▁▁cat": again "▁▁" first.
			{"leading space", " cat", []string{"▁▁", "c", "a", "t"}},
		}},
		{"metaspace", spMetaspace, []tcase{
			// Spaces → "▁", then "▁" prepended: "▁the▁▁cat" as above.
			{"two spaces", "the  cat", []string{"▁the", "▁▁", "c", "a", "t"}},
			// " cat" → "▁cat" already starts with ▁: nothing prepended.
			{"leading space", " cat", []string{"▁cat"}},
		}},
		{"metaspace split", spOpts{metaspace: true, split: true, byteFallback: true, unk: "<unk>", fuseUnk: true}, []tcase{
			// Split before each ▁: "▁the" "▁" "▁cat", merged separately.
			{"two spaces", "the  cat", []string{"▁the", "▁", "▁cat"}},
			{"leading space", " cat", []string{"▁cat"}},
		}},
		{"unk fused", spOpts{unk: "<unk>", fuseUnk: true}, []tcase{
			// No byte fallback: é is <unk>; two in a row are one <unk>.
			{"unk", "é", []string{"▁", "#0"}},
			{"unk fused", "éé", []string{"▁", "#0"}},
			{"unk between", "aéüb", []string{"▁", "a", "#0", "b"}},
		}},
		{"unk not fused", spOpts{unk: "<unk>"}, []tcase{
			{"unk twice", "éé", []string{"▁", "#0", "#0"}},
		}},
		{"no unk", spOpts{}, []tcase{
			// Neither byte fallback nor unk: the character is dropped.
			{"dropped", "aéb", []string{"▁", "a", "b"}},
		}},
		{"partial byte fallback", spOpts{byteFallback: true, unk: "<unk>", fuseUnk: true, dropBytes: []byte{0xA9}}, []tcase{
			// é needs A9, missing: <unk>. ü (C3 BC) falls back to bytes,
			// which Hugging Face adds before the pending <unk>.
			{"unk then bytes", "éü", []string{"▁", "#198", "#191", "#0"}},
		}},
	}
	for _, tt := range tests {
		tok := spTokenizer(t, tt.opts)
		cases := tt.more
		if tt.opts.byteFallback && tt.opts.dropBytes == nil {
			cases = append(append([]tcase(nil), common...), tt.more...)
		}
		for _, c := range cases {
			t.Run(tt.name+"/"+c.name, func(t *testing.T) {
				var want []int
				for _, s := range c.want {
					if n, ok := strings.CutPrefix(s, "#"); ok {
						var i int
						fmt.Sscan(n, &i)
						want = append(want, i)
					} else {
						want = append(want, id(tok, s))
					}
				}
				got := tok.Encode(c.in)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Encode(%q) (-want +got):\n%s", c.in, diff)
				}
				if n := tok.Count(c.in); n != len(want) {
					t.Errorf("Count(%q) = %d; want %d", c.in, n, len(want))
				}
			})
		}
	}
}

func TestSPMFixedIDs(t *testing.T) {
	// The hand-worked ids above rely on this layout.
	tok := spTokenizer(t, spLegacy)
	for s, want := range map[string]int{"<unk>": spUnk, "<0x0A>": 13, "<0xC3>": 198, "<0xA9>": 172, "▁": spMeta, "a": 260, "z": 285, ":": 289, "▁▁": spFirst, "▁lower": spFirst + 6} {
		if got := tok.vocab[s]; got != want {
			t.Errorf("vocab[%q] = %d; want %d", s, got, want)
		}
	}
}

func TestSPMDecode(t *testing.T) {
	tok := spTokenizer(t, spLegacy)
	v := func(s string) int { return tok.vocab[s] }
	tests := []struct {
		name string
		ids  []int
		want string
	}{
		// "▁the▁cat" → " the cat" → one leading space stripped.
		{"words", []int{v("▁the"), v("▁cat")}, "the cat"},
		{"bytes", []int{spMeta, spByte(0xC3), spByte(0xA9), spByte('\n')}, "é\n"},
		// A lone C3 is not UTF-8: one U+FFFD per byte token, as in HF.
		{"invalid bytes", []int{v("▁cat"), spByte(0xC3), v("▁sat")}, "cat\uFFFD sat"},
		// Only one leading space goes: "▁▁" "c" → "  c" → " c".
		{"strip one", []int{v("▁▁"), v("c")}, " c"},
		{"special", []int{1, v("▁the"), 2}, "<s> the</s>"},
		{"unknown ids skipped", []int{-1, 1 << 20, v("▁cat")}, "cat"},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tok.Decode(tt.ids); got != tt.want {
				t.Errorf("Decode(%v) = %q; want %q", tt.ids, got, tt.want)
			}
		})
	}
}

func TestSPMDecoders(t *testing.T) {
	ids := func(tok *HF) []int { return []int{tok.vocab["▁the"], tok.vocab["▁cat"], spByte('!')} }
	tests := []struct {
		name string
		opts spOpts
		want string
	}{
		{"sequence with strip", spLegacy, "the cat!"},
		// No decoder: the usual one is assumed (with Strip, as the
		// normalizer prepends).
		{"null decoder", spOpts{byteFallback: true, noDecoder: true}, "the cat!"},
		{"null decoder metaspace", spOpts{byteFallback: true, noDecoder: true, metaspace: true}, "the cat!"},
		// Metaspace decoder: every ▁ of the first token is dropped.
		{"metaspace decoder", spOpts{byteFallback: true, decoder: map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
			map[string]any{"type": "ByteFallback"}}}}, "the cat!"},
		{"metaspace decoder never", spOpts{byteFallback: true, decoder: map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": false},
			map[string]any{"type": "ByteFallback"}}}}, " the cat!"},
		// Without ByteFallback the byte token stays as its text.
		{"no byte fallback step", spOpts{byteFallback: true, decoder: map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]string{"String": "▁"}, "content": " "},
			map[string]any{"type": "Fuse"}}}}, " the cat<0x21>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := spTokenizer(t, tt.opts)
			if got := tok.Decode(ids(tok)); got != tt.want {
				t.Errorf("Decode(▁the ▁cat <0x21>) = %q; want %q", got, tt.want)
			}
		})
	}
}

// spRoundTrip are texts that Decode(Encode(s)) must give back.
var spRoundTrip = []string{
	"the cat sat",
	"Hello, World!\nTabs\tand\nnewlines\r\n",
	"café crème brûlée — naïve",
	"emoji 🎉👍🏽 and flags 🇫🇷",
	"中文字符和日本語のテキスト",
	"trailing spaces  ",
	"a  b   c",
	"\x00\x7f",
	"lower slow ooo",
}

func TestSPMRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		opts spOpts
		more []string
		lead string // what " x" decodes to: HF's Metaspace loses the leading space
	}{
		{"legacy", spLegacy, []string{" leading space", "  two leading"}, " x"},
		{"metaspace", spMetaspace, nil, "x"},
		{"metaspace split", spOpts{metaspace: true, split: true, byteFallback: true}, nil, "x"},
	}
	for _, tt := range tests {
		tok := spTokenizer(t, tt.opts)
		for _, s := range append(append([]string(nil), spRoundTrip...), tt.more...) {
			t.Run(tt.name+"/"+s, func(t *testing.T) {
				if got := tok.Decode(tok.Encode(s)); got != s {
					t.Errorf("Decode(Encode(%q)) = %q", s, got)
				}
			})
		}
		t.Run(tt.name+"/leading space", func(t *testing.T) {
			if got := tok.Decode(tok.Encode(" x")); got != tt.lead {
				t.Errorf("Decode(Encode(\" x\")) = %q; want %q", got, tt.lead)
			}
		})
	}
}

func TestSPMVocabWords(t *testing.T) {
	tok := spTokenizer(t, spLegacy)
	got := map[string]bool{}
	for _, w := range tok.vocabWords() {
		got[w] = true
	}
	for _, w := range []string{" the", " cat", " lower", " low"} {
		if !got[w] {
			t.Errorf("vocabWords() lacks %q", w)
		}
	}
	// "▁▁" and "▁s" are not words; "<s>" is special.
	for _, w := range []string{"  ", " s", "<s>", " oo"} {
		if got[w] {
			t.Errorf("vocabWords() has %q", w)
		}
	}
}

func TestSPMSynthesizerExact(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts spOpts
	}{{"legacy", spLegacy}, {"metaspace", spMetaspace}, {"metaspace split", spOpts{metaspace: true, split: true, byteFallback: true}}} {
		t.Run(tt.name, func(t *testing.T) {
			tok := spTokenizer(t, tt.opts)
			s, err := NewSynthesizer(tok)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Additive() {
				t.Errorf("Additive() = false; want true (SentencePiece merges stop at ▁)")
			}
			rng := rand.New(rand.NewPCG(5, 5))
			for _, n := range []int{1, 2, 17, 512, 3000} {
				text := s.Text(n, rng)
				if got := tok.Count(text); got != n {
					t.Errorf("Count(Text(%d)) = %d; want %d", n, got, n)
				}
				if strings.HasPrefix(text, " ") {
					t.Errorf("Text(%d) = %.20q…; want no leading space", n, text)
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

func TestSPMLoad(t *testing.T) {
	data, _ := spFixture(t, spLegacy)
	dir := filepath.Join(t.TempDir(), "llama-tiny")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "hf:llama-tiny" {
		t.Errorf("Name() = %q; want hf:llama-tiny", tok.Name())
	}
	if got := tok.Count("the cat sat"); got != 3 {
		t.Errorf("Count(%q) = %d; want 3", "the cat sat", got)
	}
}

func TestSPMErrors(t *testing.T) {
	// A valid legacy fixture, edited by each case.
	base, _ := spFixture(t, spLegacy)
	edit := func(f func(doc map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	model := func(doc map[string]any) map[string]any { return doc["model"].(map[string]any) }
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unigram", edit(func(d map[string]any) {
			d["model"] = map[string]any{"type": "Unigram", "unk_id": 0, "vocab": [][]any{{"<unk>", 0.0}, {"▁a", -1.5}}}
		}), `model type "Unigram" is not supported`},
		{"precompiled normalizer", edit(func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Precompiled", "precompiled_charsmap": "AAAA"},
				map[string]any{"type": "Prepend", "prepend": "▁"}}}
		}), `normalizer "Precompiled" is not supported`},
		{"regex replace", edit(func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]string{"Regex": " +"}, "content": "▁"}
		}), "Replace is supported only with a non-empty String pattern"},
		{"metaspace without replacement", edit(func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Metaspace"}
		}), `pre_tokenizer "Metaspace" is not supported without a one-character replacement`},
		{"bad prepend scheme", edit(func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}
		}), `prepend_scheme "sometimes" is not supported`},
		{"unk not in vocab", edit(func(d map[string]any) { model(d)["unk_token"] = "<oov>" }), `unk_token "<oov>" is not in the vocabulary`},
		{"merge out of vocab", edit(func(d map[string]any) {
			model(d)["merges"] = append(model(d)["merges"].([]any), "q zz")
		}), `"q zz": a part or the result is not in the vocabulary`},
		{"subword prefix", edit(func(d map[string]any) { model(d)["continuing_subword_prefix"] = "##" }), "continuing_subword_prefix"},
		{"wordpiece decoder", edit(func(d map[string]any) { d["decoder"] = map[string]any{"type": "WordPiece"} }), `decoder "WordPiece" is not supported`},
		{"bad strip", edit(func(d map[string]any) {
			d["decoder"] = map[string]any{"type": "Strip", "content": "ab", "start": 1}
		}), "decoder Strip content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHF(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseHF(%s) error = %v; want it to contain %q", tt.name, err, tt.want)
			}
		})
	}
}

// spReference encodes text for a legacy fixture the slow, obvious way:
// Prepend and Replace, one symbol per character (byte tokens or unk when
// missing), then repeatedly merge every occurrence of the best-ranked pair
// — mergeByRank, the byte-level path's loop. mergeWord must agree with it.
func spReference(tok *HF, merges [][2]string, text string) []int {
	if text == "" {
		return nil
	}
	text = "▁" + strings.ReplaceAll(text, " ", "▁")
	ranks := map[[2]string]int{}
	for i, m := range merges {
		if _, ok := ranks[m]; !ok {
			ranks[m] = i
		}
	}
	var syms []string
	for _, r := range text {
		c := string(r)
		if _, ok := tok.vocab[c]; ok {
			syms = append(syms, c)
			continue
		}
		for _, b := range []byte(c) {
			syms = append(syms, fmt.Sprintf("<0x%02X>", b))
		}
	}
	syms = mergeByRank(syms, ranks)
	ids := make([]int, len(syms))
	for i, s := range syms {
		ids[i] = tok.vocab[s]
	}
	return ids
}

func TestSPMMatchesReference(t *testing.T) {
	data, merges := spFixture(t, spLegacy)
	tok, err := ParseHF(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(spRoundTrip, "the  cat   sat", "looower slower", "oooooo") {
		t.Run(s, func(t *testing.T) {
			if diff := cmp.Diff(spReference(tok, merges, s), tok.Encode(s)); diff != "" {
				t.Errorf("Encode(%q) (-reference +got):\n%s", s, diff)
			}
		})
	}
}

func FuzzSPM(f *testing.F) {
	for _, s := range spRoundTrip {
		f.Add(s)
	}
	f.Add(" leading")
	f.Add("<0x41>")
	f.Add("▁x")
	f.Add("\xff\xfe")
	data, merges := spFixture(f, spLegacy)
	tok, err := ParseHF(data)
	if err != nil {
		f.Fatal(err)
	}
	meta := spTokenizer(f, spOpts{metaspace: true, split: true, byteFallback: true, unk: "<unk>"})
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		back := tok.Decode(ids)
		_ = meta.Decode(meta.Encode(s))
		if !utf8.ValidString(s) {
			return
		}
		if diff := cmp.Diff(spReference(tok, merges, s), ids); diff != "" {
			t.Errorf("Encode(%q) (-reference +got):\n%s", s, diff)
		}
		// A literal "▁" decodes as a space, as in Hugging Face.
		if !strings.Contains(s, "▁") && back != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, back)
		}
	})
}

// spEnglish is about 2 KB of ordinary English prose.
var spEnglish = strings.Repeat("The quick brown fox jumps over the lazy dog, and then it runs back "+
	"into the forest where the other animals are waiting. In the morning, "+
	"the farmer walks to the field to check on his plants; the rain last "+
	"night was good for the seeds. ", 9)[:2048]

// BenchmarkSPMEncode encodes 2 KB of English with a legacy fixture whose
// vocabulary also holds every word of Approx's list as one "▁word" token
// (real vocabularies have 32k pieces; this measures the merge machinery).
func BenchmarkSPMEncode(b *testing.B) {
	tok := spTokenizer(b, spOpts{byteFallback: true, unk: "<unk>", fuseUnk: true, extraWords: words})
	b.SetBytes(int64(len(spEnglish)))
	for b.Loop() {
		tok.Encode(spEnglish)
	}
}

// FuzzParseHFSPM feeds ParseHF SentencePiece-style files: it must return a
// tokenizer or an error, and the tokenizer must encode and decode without
// panicking.
func FuzzParseHFSPM(f *testing.F) {
	f.Add([]byte(`{"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
		"pre_tokenizer": null, "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>",
		"vocab": {"<unk>": 0, "<0x41>": 1, "▁": 2, "a": 3, "b": 4, "▁a": 5, "▁ab": 6}, "merges": ["▁ a", "▁a b"]}}`))
	f.Add([]byte(`{"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
		"decoder": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
		"model": {"type": "BPE", "vocab": {"▁": 0, "a": 1, "▁a": 2}, "merges": [["▁", "a"]]}}`))
	f.Add([]byte(`{"normalizer": {"type": "Prepend", "prepend": "▁"}, "pre_tokenizer": null,
		"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
		"special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
		"model": {"type": "BPE", "byte_fallback": true, "vocab": {"<s>": 1, "▁": 0, "a": 2, "▁a": 3}, "merges": ["▁ a"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ParseHF(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab ba", " Ab\n▁é"} {
			checkCountInvariant(t, tok, s)
			_ = tok.Decode(tok.Encode(s))
		}
	})
}
