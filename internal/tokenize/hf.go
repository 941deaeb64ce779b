package tokenize

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dlclark/regexp2"
)

// HF is a BPE tokenizer read from a Hugging Face tokenizer.json: byte-level
// BPE (GPT-2, Llama 3, Qwen 2/3, Mistral Nemo, DeepSeek V3 and the like) or
// SentencePiece-converted BPE over characters with byte fallback (Llama 2,
// Mistral 7B v0.1–v0.3, Mixtral, Gemma, Yi and the like, both the "legacy"
// Prepend/Replace normalizer and the Metaspace pre-tokenizer form).
// Unigram and WordPiece models are not supported: LoadHF says so.
//
// The file's post_processor (TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel or a Sequence of them) gives the special
// tokens a server adds to a prompt: Count and EncodePrompt include them,
// Encode does not.
type HF struct {
	name      string
	vocab     map[string]int
	inverse   []string // id → token text as in the vocabulary
	ranks     map[[2]string]int
	splits    []*regexp2.Regexp // pre-tokenizer splits, applied in order
	prefix    bool              // add_prefix_space
	ignoreMrg bool              // ignore_merges: a piece in the vocabulary is one token
	added     map[int]string    // added (special) tokens, decoded as is
	sp        *spModel          // SentencePiece-style pipeline; nil for byte-level
	tmpl      template          // special tokens the post_processor adds to a prompt
	cacheMu   sync.Mutex
	cache     map[string][]int // piece → ids
}

var _ Tokenizer = (*HF)(nil)

// gpt2Pattern is the pre-tokenizer regex of byte-level BPE with use_regex.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

type hfFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer    *hfComponent `json:"normalizer"`
	PreTokenizer  *hfComponent `json:"pre_tokenizer"`
	Decoder       *hfComponent `json:"decoder"`
	PostProcessor *hfProcessor `json:"post_processor"`
	Model         struct {
		Type                    string            `json:"type"`
		Vocab                   json.RawMessage   `json:"vocab"` // BPE: {"token": id}; decoded once the type is known
		Merges                  []json.RawMessage `json:"merges"`
		IgnoreMerges            bool              `json:"ignore_merges"`
		ByteFallback            bool              `json:"byte_fallback"`
		UnkToken                *string           `json:"unk_token"`
		FuseUnk                 bool              `json:"fuse_unk"`
		ContinuingSubwordPrefix string            `json:"continuing_subword_prefix"`
		EndOfWordSuffix         string            `json:"end_of_word_suffix"`
	} `json:"model"`
}

// hfComponent is a normalizer, pre-tokenizer or decoder: the union of the
// fields of the types this package reads.
type hfComponent struct {
	Type           string                         `json:"type"`
	AddPrefixSpace *bool                          `json:"add_prefix_space"`
	UseRegex       *bool                          `json:"use_regex"`
	Pattern        struct{ Regex, String string } `json:"pattern"`
	Behavior       string                         `json:"behavior"`
	Invert         bool                           `json:"invert"`
	PreTokenizers  []hfComponent                  `json:"pretokenizers"`
	Normalizers    []hfComponent                  `json:"normalizers"`
	Decoders       []hfComponent                  `json:"decoders"`
	Prepend        string                         `json:"prepend"`        // Prepend normalizer
	Content        string                         `json:"content"`        // Replace normalizer/decoder, Strip decoder
	Replacement    string                         `json:"replacement"`    // Metaspace
	PrependScheme  string                         `json:"prepend_scheme"` // Metaspace: always, first, never
	Split          *bool                          `json:"split"`          // Metaspace
	Start          int                            `json:"start"`          // Strip decoder
	Stop           int                            `json:"stop"`           // Strip decoder
}

// LoadHF reads a tokenizer.json (path of the file or of its directory).
func LoadHF(path string) (*HF, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseHF(data)
	if err != nil {
		return nil, err
	}
	t.name = "hf:" + filepath.Base(filepath.Dir(path))
	return t, nil
}

// ParseHF parses the contents of a tokenizer.json.
func ParseHF(data []byte) (*HF, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q is not supported (only BPE)", f.Model.Type)
	}
	if len(f.Model.Vocab) == 0 {
		return nil, errors.New("tokenizer.json: empty vocabulary")
	}
	var vocab map[string]int
	if err := json.Unmarshal(f.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("tokenizer.json: BPE vocab: %w", err)
	}
	if len(vocab) == 0 {
		return nil, errors.New("tokenizer.json: empty vocabulary")
	}
	tmpl, err := parseProcessor(f.PostProcessor)
	if err != nil {
		return nil, err
	}
	spStyle := isSentencePiece(&f)
	if !spStyle && f.Normalizer != nil && f.Normalizer.Type != "NFC" {
		return nil, fmt.Errorf("tokenizer.json: normalizer %q is not supported with a byte-level pre_tokenizer", f.Normalizer.Type)
	}
	t := &HF{name: "hf", vocab: vocab, ranks: map[[2]string]int{}, added: map[int]string{},
		ignoreMrg: f.Model.IgnoreMerges, tmpl: tmpl, cache: map[string][]int{}}
	if !spStyle {
		if err := t.setPreTokenizer(f.PreTokenizer); err != nil {
			return nil, err
		}
	}
	maxID := 0
	for _, id := range t.vocab {
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	if maxID > 1<<24 {
		return nil, fmt.Errorf("tokenizer.json: token id %d too large", maxID)
	}
	t.inverse = make([]string, maxID+1)
	for s, id := range t.vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: negative id for %q", s)
		}
		t.inverse[id] = s
	}
	for _, a := range f.AddedTokens {
		if a.ID >= 0 {
			t.added[a.ID] = a.Content
		}
	}
	pairs := make([][2]string, 0, len(f.Model.Merges))
	for i, m := range f.Model.Merges {
		var pair [2]string
		var s string
		if err := json.Unmarshal(m, &s); err == nil {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("tokenizer.json: merge %d %q: want \"A B\"", i, s)
			}
			pair = [2]string{a, b}
		} else if err := json.Unmarshal(m, &pair); err != nil {
			return nil, fmt.Errorf("tokenizer.json: merge %d: want \"A B\" or [\"A\", \"B\"]", i)
		}
		pairs = append(pairs, pair)
	}
	if spStyle {
		sp, err := newSPModel(&f, t, pairs)
		if err != nil {
			return nil, err
		}
		t.sp = sp
		return t, nil
	}
	for i, pair := range pairs {
		if _, ok := t.ranks[pair]; !ok {
			t.ranks[pair] = i
		}
	}
	return t, nil
}

func (t *HF) setPreTokenizer(p *hfComponent) error {
	if p == nil {
		return errors.New("tokenizer.json: no pre_tokenizer and no SentencePiece normalizer or byte_fallback (neither byte-level nor SentencePiece-style BPE)")
	}
	switch p.Type {
	case "ByteLevel":
		t.prefix = p.AddPrefixSpace != nil && *p.AddPrefixSpace
		if p.UseRegex == nil || *p.UseRegex {
			return t.addSplit(gpt2Pattern)
		}
		return nil
	case "Split":
		if p.Invert || (p.Behavior != "" && p.Behavior != "Isolated") {
			return fmt.Errorf("tokenizer.json: Split behavior %q invert %v is not supported", p.Behavior, p.Invert)
		}
		pat := p.Pattern.Regex
		if pat == "" {
			pat = regexp2.Escape(p.Pattern.String)
		}
		return t.addSplit(pat)
	case "Sequence":
		sawByteLevel := false
		for i := range p.PreTokenizers {
			if p.PreTokenizers[i].Type == "ByteLevel" {
				sawByteLevel = true
			}
			if err := t.setPreTokenizer(&p.PreTokenizers[i]); err != nil {
				return err
			}
		}
		if !sawByteLevel {
			return errors.New("tokenizer.json: pre_tokenizer has no ByteLevel step (only byte-level BPE is supported)")
		}
		return nil
	}
	return fmt.Errorf("tokenizer.json: pre_tokenizer %q is not supported (byte-level BPE takes ByteLevel and Split, SentencePiece-style BPE a lone Metaspace)", p.Type)
}

func (t *HF) addSplit(pattern string) error {
	re, err := regexp2.Compile(pattern, regexp2.Unicode)
	if err != nil {
		return fmt.Errorf("tokenizer.json: pre-tokenizer regex: %w", err)
	}
	t.splits = append(t.splits, re)
	return nil
}

// Name returns "hf:" and the name of the directory holding tokenizer.json.
func (t *HF) Name() string { return t.name }

// Count returns the number of tokens of text sent as a whole prompt: its
// own tokens and the special tokens of the file's post_processor (Llama 3's
// <|begin_of_text|>, Llama 2's <s>, BERT's [CLS] and [SEP]), as a server
// counts it with add_special_tokens=True (vLLM's default for completions
// and its /tokenize). It is len(EncodePrompt(text)), so 1 for "" under a
// BOS template; [CountText] counts text alone.
func (t *HF) Count(text string) int { return len(t.Encode(text)) + t.tmpl.len() }

// SpecialTokens returns the number of special tokens the file's
// post_processor adds to every prompt (its single template); 0 when it
// has none or only a ByteLevel one.
func (t *HF) SpecialTokens() int { return t.tmpl.len() }

// EncodePrompt returns the ids of text as a whole prompt: Encode(text)
// inside the special tokens of the post_processor's single template.
func (t *HF) EncodePrompt(text string) []int {
	ids := t.Encode(text)
	if t.tmpl.len() == 0 {
		return ids
	}
	out := make([]int, 0, len(ids)+t.tmpl.len())
	out = append(out, t.tmpl.pre...)
	out = append(out, ids...)
	return append(out, t.tmpl.post...)
}

// Encode returns the token ids of text alone. Added tokens written in text
// are not recognised as such; no special tokens (BOS) are added: see
// EncodePrompt.
func (t *HF) Encode(text string) []int {
	if t.sp != nil {
		return t.encodeSP(text)
	}
	if t.prefix && text != "" && text[0] != ' ' {
		text = " " + text
	}
	pieces := []string{text}
	for _, re := range t.splits {
		var next []string
		for _, p := range pieces {
			next = appendSplit(next, re, p)
		}
		pieces = next
	}
	var ids []int
	for _, p := range pieces {
		ids = append(ids, t.encodePiece(p)...)
	}
	return ids
}

// appendSplit appends the matches of re in s and the text between them.
func appendSplit(dst []string, re *regexp2.Regexp, s string) []string {
	runes := []rune(s)
	last := 0
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		if m.Index > last {
			dst = append(dst, string(runes[last:m.Index]))
		}
		if m.Length > 0 {
			dst = append(dst, string(runes[m.Index:m.Index+m.Length]))
		}
		last = m.Index + m.Length
		m, _ = re.FindNextMatch(m)
	}
	if last < len(runes) {
		dst = append(dst, string(runes[last:]))
	}
	return dst
}

// encodePiece byte-level maps one pre-token and merges it by rank.
func (t *HF) encodePiece(p string) []int {
	if ids, ok := t.cached(p); ok {
		return ids
	}
	var ids []int
	syms := make([]string, len(p))
	var whole strings.Builder
	for i := 0; i < len(p); i++ {
		syms[i] = byteChar[p[i]]
		whole.WriteString(syms[i])
	}
	if id, ok := t.vocab[whole.String()]; ok && (t.ignoreMrg || len(syms) == 1) {
		ids = []int{id}
	} else {
		syms = mergeByRank(syms, t.ranks)
		ids = make([]int, 0, len(syms))
		for _, s := range syms {
			if id, ok := t.vocab[s]; ok {
				ids = append(ids, id)
			} else {
				// A symbol missing from the vocabulary: count its bytes.
				for _, r := range s {
					if id, ok := t.vocab[string(r)]; ok {
						ids = append(ids, id)
					}
				}
			}
		}
	}
	t.remember(p, ids)
	return ids
}

// mergeByRank merges the best-ranked adjacent pair everywhere, left to
// right, until no pair has a rank: BPE over whole symbols, O(n²) in the
// piece, fine for pre-tokenized words.
func mergeByRank(syms []string, ranks map[[2]string]int) []string {
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		a, b := syms[at], syms[at+1]
		out := syms[:0:0]
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				out = append(out, a+b)
				i++
			} else {
				out = append(out, syms[i])
			}
		}
		syms = out
	}
	return syms
}

// cached returns the ids of a piece encoded before.
func (t *HF) cached(p string) ([]int, bool) {
	t.cacheMu.Lock()
	defer t.cacheMu.Unlock()
	ids, ok := t.cache[p]
	return ids, ok
}

// remember caches a piece's ids, starting afresh when the cache is full
// (a quarter million pieces: texts' words repeat, so it refills quickly).
func (t *HF) remember(p string, ids []int) {
	t.cacheMu.Lock()
	defer t.cacheMu.Unlock()
	if len(t.cache) > 1<<18 {
		clear(t.cache)
	}
	t.cache[p] = ids
}

// Decode returns the text of ids; unknown ids are skipped. For a
// SentencePiece-style tokenizer it runs the file's decoder, which turns "▁"
// into spaces and byte tokens into their bytes and strips the one leading
// space that encoding prepended.
func (t *HF) Decode(ids []int) string {
	if t.sp != nil {
		return t.decodeSP(ids)
	}
	var b []byte
	for _, id := range ids {
		if s, ok := t.added[id]; ok {
			b = append(b, s...)
			continue
		}
		if id < 0 || id >= len(t.inverse) {
			continue
		}
		for _, r := range t.inverse[id] {
			if c, ok := charByte[r]; ok {
				b = append(b, c)
			}
		}
	}
	return string(b)
}

func (t *HF) vocabWords() []string {
	if t.sp != nil {
		return t.spVocabWords()
	}
	var out []string
	for id := range t.inverse {
		if _, special := t.added[id]; special {
			continue
		}
		if w := t.Decode([]int{id}); plainWord(w) {
			out = append(out, w)
		}
	}
	return out
}

// byteChar and charByte are GPT-2's reversible map between bytes and
// printable characters: printable Latin-1 bytes map to themselves, the
// others to 256 and up in byte order.
var byteChar, charByte = func() ([256]string, map[rune]byte) {
	var bc [256]string
	cb := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = rune(256 + n)
			n++
		}
		bc[b] = string(r)
		cb[r] = byte(b)
	}
	return bc, cb
}()
