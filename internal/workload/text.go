package workload

import (
	"math/rand/v2"
	"strings"

	"github.com/goodput/goodput/internal/tokenize"
)

// DefaultHashBlockTokens is the block size, in tokens, of the BlockHashes
// this package makes itself (shared prefixes); it is vLLM's default KV block
// size. Traces that carry their own hashes keep their block size.
const DefaultHashBlockTokens = 16

// texter writes prompt text. Text is a pure function of (seed, i,
// PromptTokens, segments): a segment's text is drawn from a generator seeded
// by its key alone, so requests with equal leading segment keys get identical
// leading text, which is what prefix caches key on; the remaining tokens are
// drawn from request i's own generator.
type texter struct {
	seed  int64
	synth *tokenize.Synthesizer
	// additive: joined texts' counts add up exactly (Approx), so the total
	// needs no recount.
	additive bool
}

// segment is a run of tokens whose text depends only on key.
type segment struct {
	key    uint64
	tokens int
}

func newTexter(seed int64, synth *tokenize.Synthesizer) (texter, error) {
	if synth == nil {
		var err error
		if synth, err = tokenize.NewSynthesizer(nil); err != nil {
			return texter{}, err
		}
	}
	return texter{seed: seed, synth: synth, additive: synth.Additive()}, nil
}

// prompt fills r.Prompt with r.PromptTokens tokens of text: the segments'
// text first (cut at PromptTokens), then text unique to r.Index.
//
// With a calibrated synthesizer, r.PromptTokens stays the length the server
// should count and the written text is sized through the calibration.
func (t texter) prompt(r *Request, segs []segment) {
	cal := t.synth.Calibration()
	n := cal.Written(r.PromptTokens)
	if n <= 0 {
		return
	}
	if len(segs) == 0 {
		r.Prompt = t.synth.Text(n, rngFor(t.seed, streamText, r.Index))
		return
	}
	var b strings.Builder
	b.Grow(n * 6)
	left := n
	for _, s := range segs {
		if left <= 0 {
			break
		}
		k := min(left, cal.WrittenSpan(s.tokens))
		t.appendSegment(&b, s.key, k)
		left -= k
	}
	text := b.String()
	switch {
	case t.additive && left > 0:
		text = t.synth.ExtendCounted(text, n-left, n, rngFor(t.seed, streamText, r.Index))
	case !t.additive:
		text = t.synth.Extend(text, n, rngFor(t.seed, streamText, r.Index))
	}
	r.Prompt = text
}

// appendSegment writes k tokens of the text of segment key. The generator
// is sequential, so a cut segment's text is a prefix of the whole one's.
func (t texter) appendSegment(b *strings.Builder, key uint64, k int) {
	rng := rand.New(rand.NewPCG(mix(uint64(t.seed), streamBlock), mix(key, streamBlock)))
	if _, ok := t.synth.Tokenizer().(tokenize.Approx); ok {
		tokenize.AppendApprox(b, k, rng)
		return
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(t.synth.Text(k, rng))
}

// prefixHashes returns block hashes for a prompt of total tokens whose first
// shared tokens are the shared prefix identified by prefixID, the rest unique
// to request i. Only blocks wholly inside the prefix are shared, as in a
// paged prefix cache.
func prefixHashes(seed int64, prefixID uint64, shared, total, i int) []uint64 {
	const b = DefaultHashBlockTokens
	if total <= 0 {
		return nil
	}
	n := (total + b - 1) / b
	hs := make([]uint64, n)
	for j := range hs {
		if (j+1)*b <= shared {
			hs[j] = mix(mix(uint64(seed), prefixID), uint64(j)+streamPrefix<<56)
		} else {
			hs[j] = mix(mix(uint64(seed)^0x5bd1e995, uint64(i)), uint64(j)+streamShape<<56)
		}
	}
	return hs
}

// prefixKey is the segment key of shared prefix k.
func prefixKey(k int) uint64 { return mix(uint64(k), streamPrefix) }
