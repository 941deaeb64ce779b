package tokenize

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// spModel is the SentencePiece-style half of [HF]: BPE over Unicode
// characters (not bytes), with spaces written as a meta symbol ("▁") and
// characters missing from the vocabulary spelled as byte tokens "<0xXX>"
// (byte_fallback) or the unk token. It follows Hugging Face tokenizers'
// semantics step by step (normalizer, Metaspace pre-tokenizer, BPE model,
// decoder) so counts match what a Llama-2- or Mistral-style server counts.
type spModel struct {
	norm []spNormStep

	// Metaspace pre-tokenizer; meta == "" when there is none.
	meta    string
	scheme  string // prepend_scheme: "always", "first" or "never"
	splitWS bool   // split: cut before each meta symbol

	// space is what a space becomes after normalization and
	// pre-tokenization ("▁" for both variants); vocabWords maps it back.
	space string

	byteFallback bool
	byteIDs      [256]int32 // id of "<0xXX>", -1 when missing
	unk          int32      // id of the unk token, -1 when there is none
	fuseUnk      bool
	merges       map[uint64]spMerge // pair of ids → rank and merged id

	dec []func([]string) []string // decoder steps, applied in order
}

// spNormStep is one normalizer step: prepend pre to non-empty text, or
// replace every from with to.
type spNormStep struct {
	prepend  bool
	from, to string
}

// spMerge is a merge rule, or a candidate merge at a symbol position.
type spMerge struct {
	rank, id int32
	pos      int32 // position of the left symbol (candidates only)
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// isSentencePiece reports whether f is a SentencePiece-converted BPE
// (characters as the initial alphabet) rather than byte-level BPE: a
// Metaspace pre-tokenizer, or no pre-tokenizer with a normalizer writing
// the "▁" or with byte_fallback.
func isSentencePiece(f *hfFile) bool {
	if f.PreTokenizer != nil {
		return f.PreTokenizer.Type == "Metaspace"
	}
	return f.Model.ByteFallback || f.Normalizer != nil && f.Normalizer.Type != "NFC"
}

// newSPModel builds the SentencePiece-style pipeline of f for t, whose
// vocab and inverse are already set; pairs are the merges in rank order.
func newSPModel(f *hfFile, t *HF, pairs [][2]string) (*spModel, error) {
	m := &f.Model
	sp := &spModel{byteFallback: m.ByteFallback, fuseUnk: m.FuseUnk, unk: -1, merges: make(map[uint64]spMerge, len(m.Merges))}
	if m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "" {
		return nil, errors.New("tokenizer.json: BPE continuing_subword_prefix/end_of_word_suffix are not supported")
	}
	if f.Normalizer != nil {
		if err := sp.addNormalizer(f.Normalizer); err != nil {
			return nil, err
		}
	}
	if p := f.PreTokenizer; p != nil {
		if err := sp.setMetaspace(p); err != nil {
			return nil, err
		}
	}
	sp.space = " "
	for _, s := range sp.norm {
		if !s.prepend && s.from == " " {
			sp.space = s.to
		}
	}
	if sp.meta != "" && sp.space == " " {
		sp.space = sp.meta
	}
	if m.UnkToken != nil && *m.UnkToken != "" {
		id, ok := t.vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: unk_token %q is not in the vocabulary", *m.UnkToken)
		}
		sp.unk = int32(id)
	}
	for b := range 256 {
		sp.byteIDs[b] = -1
		if id, ok := t.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			sp.byteIDs[b] = int32(id)
		}
	}
	for i, pair := range pairs {
		a, okA := t.vocab[pair[0]]
		b, okB := t.vocab[pair[1]]
		ab, okAB := t.vocab[pair[0]+pair[1]]
		if !okA || !okB || !okAB {
			// Hugging Face refuses such a file too (MergeTokenOutOfVocabulary).
			return nil, fmt.Errorf("tokenizer.json: merge %d %q: a part or the result is not in the vocabulary", i, pair[0]+" "+pair[1])
		}
		k := pairKey(int32(a), int32(b))
		if _, dup := sp.merges[k]; !dup {
			sp.merges[k] = spMerge{rank: int32(i), id: int32(ab)}
		}
	}
	if f.Decoder == nil {
		sp.defaultDecoder()
	} else if err := sp.addDecoder(f.Decoder); err != nil {
		return nil, err
	}
	return sp, nil
}

func (sp *spModel) addNormalizer(n *hfComponent) error {
	switch n.Type {
	case "Sequence":
		for i := range n.Normalizers {
			if err := sp.addNormalizer(&n.Normalizers[i]); err != nil {
				return err
			}
		}
		return nil
	case "Prepend":
		if n.Prepend != "" {
			sp.norm = append(sp.norm, spNormStep{prepend: true, to: n.Prepend})
		}
		return nil
	case "Replace":
		if n.Pattern.Regex != "" || n.Pattern.String == "" {
			return errors.New("tokenizer.json: normalizer Replace is supported only with a non-empty String pattern")
		}
		sp.norm = append(sp.norm, spNormStep{from: n.Pattern.String, to: n.Content})
		return nil
	}
	return fmt.Errorf("tokenizer.json: normalizer %q is not supported (SentencePiece-style BPE supports Prepend and Replace)", n.Type)
}

func (sp *spModel) setMetaspace(p *hfComponent) error {
	if utf8.RuneCountInString(p.Replacement) != 1 {
		return fmt.Errorf("tokenizer.json: pre_tokenizer %q is not supported without a one-character replacement (got %q)", p.Type, p.Replacement)
	}
	sp.meta = p.Replacement
	sp.scheme = p.PrependScheme
	if sp.scheme == "" {
		sp.scheme = "always"
	}
	// Older files say add_prefix_space instead; false means never.
	if p.AddPrefixSpace != nil && !*p.AddPrefixSpace {
		sp.scheme = "never"
	}
	switch sp.scheme {
	case "always", "first", "never":
	default:
		return fmt.Errorf("tokenizer.json: Metaspace prepend_scheme %q is not supported", sp.scheme)
	}
	sp.splitWS = p.Split == nil || *p.Split
	return nil
}

// prepends reports whether encoding puts a space symbol before text, which
// decoding then strips.
func (sp *spModel) prepends() bool {
	for _, s := range sp.norm {
		if s.prepend {
			return true
		}
	}
	return sp.meta != "" && sp.scheme != "never"
}

// defaultDecoder is what transformers writes for these models, used when a
// file has no decoder (Hugging Face would join tokens with spaces, which no
// model wants).
func (sp *spModel) defaultDecoder() {
	if sp.space != " " {
		sp.dec = append(sp.dec, replaceStep(sp.space, " "))
	}
	sp.dec = append(sp.dec, byteFallbackStep, fuseStep)
	if sp.prepends() {
		sp.dec = append(sp.dec, stripStep(' ', 1, 0))
	}
}

func (sp *spModel) addDecoder(d *hfComponent) error {
	switch d.Type {
	case "Sequence":
		for i := range d.Decoders {
			if err := sp.addDecoder(&d.Decoders[i]); err != nil {
				return err
			}
		}
		return nil
	case "Replace":
		if d.Pattern.Regex != "" || d.Pattern.String == "" {
			return errors.New("tokenizer.json: decoder Replace is supported only with a non-empty String pattern")
		}
		sp.dec = append(sp.dec, replaceStep(d.Pattern.String, d.Content))
		return nil
	case "ByteFallback":
		sp.dec = append(sp.dec, byteFallbackStep)
		return nil
	case "Fuse":
		sp.dec = append(sp.dec, fuseStep)
		return nil
	case "Strip":
		r, n := utf8.DecodeRuneInString(d.Content)
		if n == 0 || n != len(d.Content) || d.Start < 0 || d.Stop < 0 {
			return fmt.Errorf("tokenizer.json: decoder Strip content %q start %d stop %d is not supported", d.Content, d.Start, d.Stop)
		}
		sp.dec = append(sp.dec, stripStep(r, d.Start, d.Stop))
		return nil
	case "Metaspace":
		var ms spModel
		if err := ms.setMetaspace(d); err != nil {
			return err
		}
		sp.dec = append(sp.dec, metaspaceStep(ms.meta, ms.scheme != "never"))
		return nil
	}
	return fmt.Errorf("tokenizer.json: decoder %q is not supported for SentencePiece-style BPE", d.Type)
}

func replaceStep(from, to string) func([]string) []string {
	return func(toks []string) []string {
		for i, s := range toks {
			toks[i] = strings.ReplaceAll(s, from, to)
		}
		return toks
	}
}

// byteFallbackStep turns runs of "<0xXX>" tokens into their bytes; a run
// that is not valid UTF-8 becomes one U+FFFD per token, as in Hugging Face.
func byteFallbackStep(toks []string) []string {
	out := toks[:0:0]
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, s := range toks {
		if b, ok := byteToken(s); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, s)
	}
	flush()
	return out
}

// byteToken parses "<0xXX>" (either case of hex digit).
func byteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexVal(s[3])
	lo, ok2 := hexVal(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func fuseStep(toks []string) []string { return []string{strings.Join(toks, "")} }

// stripStep removes up to start leading and stop trailing c from each token.
func stripStep(c rune, start, stop int) func([]string) []string {
	return func(toks []string) []string {
		for i, s := range toks {
			for n := 0; n < start && strings.HasPrefix(s, string(c)); n++ {
				s = s[utf8.RuneLen(c):]
			}
			for n := 0; n < stop && strings.HasSuffix(s, string(c)); n++ {
				s = s[:len(s)-utf8.RuneLen(c)]
			}
			toks[i] = s
		}
		return toks
	}
}

// metaspaceStep is the Metaspace decoder: meta becomes a space, except in
// the first token when encoding prepends it, where it is dropped.
func metaspaceStep(meta string, prepends bool) func([]string) []string {
	return func(toks []string) []string {
		for i, s := range toks {
			if i == 0 && prepends {
				toks[i] = strings.ReplaceAll(s, meta, "")
			} else {
				toks[i] = strings.ReplaceAll(s, meta, " ")
			}
		}
		return toks
	}
}

// encodeSP normalizes and pre-tokenizes text and merges each piece.
func (t *HF) encodeSP(text string) []int {
	sp := t.sp
	if text == "" {
		return nil
	}
	for _, s := range sp.norm {
		if s.prepend {
			text = s.to + text
		} else {
			text = strings.ReplaceAll(text, s.from, s.to)
		}
	}
	if sp.meta != "" {
		text = strings.ReplaceAll(text, " ", sp.meta)
		// "first" prepends to the first piece of the input only; added
		// tokens are not split out here, so the input is one piece.
		if sp.scheme != "never" && text != "" && !strings.HasPrefix(text, sp.meta) {
			text = sp.meta + text
		}
	}
	if !sp.splitWS {
		return append([]int(nil), t.spPiece(text)...)
	}
	// Split before each meta symbol, which stays with the word it opens.
	var ids []int
	for text != "" {
		_, w := utf8.DecodeRuneInString(text)
		i := strings.Index(text[w:], sp.meta)
		if i < 0 {
			ids = append(ids, t.spPiece(text)...)
			break
		}
		ids = append(ids, t.spPiece(text[:w+i])...)
		text = text[w+i:]
	}
	return ids
}

// spCacheMax is the longest piece kept in the cache, in bytes (Hugging
// Face's limit too): long pieces are whole prompts that never repeat.
const spCacheMax = 256

// spPiece returns the ids of one pre-token; the result may be shared and
// must not be modified.
func (t *HF) spPiece(p string) []int {
	if p == "" {
		return nil
	}
	if t.ignoreMrg {
		if id, ok := t.vocab[p]; ok {
			return []int{id}
		}
	}
	if len(p) < spCacheMax {
		if ids, ok := t.cached(p); ok {
			return ids
		}
	}
	ids := t.sp.mergeWord(t.vocab, p)
	if len(p) < spCacheMax {
		t.remember(p, ids)
	}
	return ids
}

// spSym is a symbol of a word being merged, in a doubly linked list over
// positions; a merged-away symbol is dead.
type spSym struct {
	id, prev, next int32
	dead           bool
}

// mergeWord splits p into characters, maps missing ones to byte tokens or
// unk, and applies merges lowest rank first, leftmost first among equal
// ranks — Hugging Face's merge_word and merge_all. That gives the same
// result as merging the best pair everywhere and repeating (encodePiece)
// whenever a merge's parts rank before it, as in every trained vocabulary,
// but costs O(n log n): with no pre-tokenizer a whole prompt is one piece.
func (sp *spModel) mergeWord(vocab map[string]int, p string) []int {
	syms := make([]spSym, 0, len(p))
	add := func(id int32) {
		n := int32(len(syms))
		if n > 0 {
			syms[n-1].next = n
		}
		syms = append(syms, spSym{id: id, prev: n - 1, next: -1})
	}
	// A pending unk is added when a known character follows or at the
	// end, and extended by the next unknown one when fused. As in Hugging
	// Face, byte-fallback tokens do not flush it (so they can come first).
	pendingUnk := false
	for i := 0; i < len(p); {
		_, w := utf8.DecodeRuneInString(p[i:])
		c := p[i : i+w]
		i += w
		if id, ok := vocab[c]; ok {
			if pendingUnk {
				add(sp.unk)
				pendingUnk = false
			}
			add(int32(id))
			continue
		}
		if sp.byteFallback && sp.allBytes(c) {
			for j := 0; j < len(c); j++ {
				add(sp.byteIDs[c[j]])
			}
			continue
		}
		if sp.unk < 0 {
			continue // Hugging Face drops the character too
		}
		if pendingUnk && !sp.fuseUnk {
			add(sp.unk)
		}
		pendingUnk = true
	}
	if pendingUnk {
		add(sp.unk)
	}

	var h spHeap
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := sp.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(spMerge{rank: m.rank, id: m.id, pos: int32(i)})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		s := &syms[top.pos]
		if s.dead || s.next < 0 {
			continue
		}
		right := syms[s.next]
		// The entry is stale when its pair has changed since it was queued.
		if m, ok := sp.merges[pairKey(s.id, right.id)]; !ok || m.id != top.id {
			continue
		}
		syms[s.next].dead = true
		s.id, s.next = top.id, right.next
		if s.next >= 0 {
			syms[s.next].prev = top.pos
		}
		if s.prev >= 0 {
			if m, ok := sp.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				h.push(spMerge{rank: m.rank, id: m.id, pos: s.prev})
			}
		}
		if s.next >= 0 {
			if m, ok := sp.merges[pairKey(s.id, syms[s.next].id)]; ok {
				h.push(spMerge{rank: m.rank, id: m.id, pos: top.pos})
			}
		}
	}
	ids := make([]int, 0, len(syms))
	for _, s := range syms {
		if !s.dead {
			ids = append(ids, int(s.id))
		}
	}
	return ids
}

func (sp *spModel) allBytes(c string) bool {
	for j := 0; j < len(c); j++ {
		if sp.byteIDs[c[j]] < 0 {
			return false
		}
	}
	return true
}

// spHeap is a binary min-heap of candidate merges by (rank, pos).
type spHeap []spMerge

func (h spHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}

func (h *spHeap) push(m spMerge) {
	*h = append(*h, m)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *spHeap) pop() spMerge {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// decodeSP maps ids to their tokens and runs the decoder steps.
func (t *HF) decodeSP(ids []int) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if s, ok := t.added[id]; ok {
			toks = append(toks, s)
		} else if id >= 0 && id < len(t.inverse) && t.inverse[id] != "" {
			toks = append(toks, t.inverse[id])
		}
	}
	for _, step := range t.sp.dec {
		toks = step(toks)
	}
	return strings.Join(toks, "")
}

// spVocabWords lists vocabulary entries that read as a space and a plain
// word once the space symbol is a space again ("▁word" → " word").
func (t *HF) spVocabWords() []string {
	var out []string
	for id, piece := range t.inverse {
		if _, special := t.added[id]; special {
			continue
		}
		if w := strings.ReplaceAll(piece, t.sp.space, " "); plainWord(w) {
			out = append(out, w)
		}
	}
	return out
}
