package workload

import (
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/tokenize"
)

// PrefixRepetitionConfig configures vLLM's prefix-repetition dataset:
// NumPrefixes distinct prefixes of PrefixLen tokens, each followed by a
// random SuffixLen-token suffix, spread evenly over the requests in a
// seeded order.
type PrefixRepetitionConfig struct {
	// PrefixLen and SuffixLen are token counts; prompts have their sum.
	PrefixLen, SuffixLen int
	// NumPrefixes is the number of distinct prefixes (at least 1).
	NumPrefixes int
	// OutputLen is every request's output length in tokens.
	OutputLen int
	// NumPrompts is the number of requests.
	NumPrompts int
	// Seed makes the dataset reproducible.
	Seed int64
	// Synth writes the prompts; nil means tokenize.Approx.
	Synth *tokenize.Synthesizer
}

// prefixed is a dataset whose request i starts with shared prefix
// which[i] of prefixLen tokens.
type prefixed struct {
	name      string
	n         int
	prefixLen int
	which     func(i int) int
	shape     func(i int) Request // lengths without the prefix
	inner     Dataset             // the wrapped dataset, nil for prefix-repetition
	text      texter
}

// NewPrefixRepetition returns vLLM's prefix-repetition dataset.
func NewPrefixRepetition(c PrefixRepetitionConfig) (Dataset, error) {
	if c.NumPrompts <= 0 || c.NumPrefixes <= 0 || c.PrefixLen < 0 || c.SuffixLen < 0 || c.OutputLen < 0 {
		return nil, fmt.Errorf("prefix-repetition dataset: want positive prompts (%d) and prefixes (%d), non-negative lengths (%d, %d, %d)",
			c.NumPrompts, c.NumPrefixes, c.PrefixLen, c.SuffixLen, c.OutputLen)
	}
	// Prefix k serves requests perm[j] for j ≡ k (mod NumPrefixes): even
	// use, seeded order, as vLLM builds then shuffles its request list.
	which := make([]int, c.NumPrompts)
	for j, i := range rngFor(c.Seed, streamSample, 0).Perm(c.NumPrompts) {
		which[i] = j % c.NumPrefixes
	}
	d := &prefixed{
		name: "prefix-repetition", n: c.NumPrompts, prefixLen: c.PrefixLen,
		which: func(i int) int { return which[i] },
		shape: func(i int) Request {
			return Request{Index: i, PromptTokens: c.SuffixLen, OutputTokens: c.OutputLen}
		},
	}
	var err error
	if d.text, err = newTexter(c.Seed, c.Synth); err != nil {
		return nil, err
	}
	return d, nil
}

// WithSharedPrefix returns ds with one of numPrefixes shared "system
// prompts" of prefixLen tokens (chosen per request by the seed) before
// every prompt, to exercise prefix caches. Prompt lengths grow by
// prefixLen. Chat requests get the prefix as a leading system message.
// The requests' BlockHashes describe the new prompts at
// DefaultHashBlockTokens granularity; hashes of ds's own are dropped.
func WithSharedPrefix(ds Dataset, prefixLen, numPrefixes int, seed int64, synth *tokenize.Synthesizer) (Dataset, error) {
	if prefixLen <= 0 {
		return ds, nil
	}
	if numPrefixes <= 0 {
		return nil, fmt.Errorf("shared prefix: number of prefixes %d must be positive", numPrefixes)
	}
	d := &prefixed{
		name: fmt.Sprintf("%s+shared-prefix:%dx%d", ds.Name(), numPrefixes, prefixLen),
		n:    ds.Len(), prefixLen: prefixLen,
		which: func(i int) int { return rngFor(seed, streamPrefix, i).IntN(numPrefixes) },
		shape: ds.Shape,
		inner: ds,
	}
	var err error
	if d.text, err = newTexter(seed, synth); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *prefixed) Name() string { return d.name }
func (d *prefixed) Len() int     { return d.n }

func (d *prefixed) Shape(i int) Request {
	r := d.shape(i)
	r.PromptTokens += d.prefixLen
	r.BlockHashes = prefixHashes(d.text.seed, uint64(d.which(i)), d.prefixLen, r.PromptTokens, i)
	r.HashBlockTokens = DefaultHashBlockTokens
	return r
}

func (d *prefixed) Request(i int) Request {
	r := d.Shape(i)
	seg := []segment{{key: prefixKey(d.which(i)), tokens: d.prefixLen}}
	if d.inner == nil {
		d.text.prompt(&r, seg)
		return r
	}
	in := d.inner.Request(i)
	// The prefix is a span of the prompt, not a prompt of its own: sized
	// without the special tokens (BOS) and calibration overhead that the
	// inner prompt already carries.
	var b strings.Builder
	d.text.appendSegment(&b, seg[0].key, d.text.synth.Calibration().WrittenSpan(d.prefixLen))
	prefix := b.String()
	if in.Messages != nil {
		r.Messages = append([]Message{{Role: "system", Content: prefix}}, in.Messages...)
	} else {
		r.Prompt = joinPrompt(prefix, in.Prompt)
	}
	return r
}

func joinPrompt(prefix, prompt string) string {
	if prompt == "" {
		return prefix
	}
	return prefix + " " + prompt
}

// bustTokens is the length in tokens of the unique prefix WithCacheBust
// adds: 8 words from a list of ~300 give ~10^19 prefixes, and a difference
// in the first token already defeats block-chained prefix caches.
const bustTokens = 8

// WithCacheBust returns ds with a unique random 8-token prefix before every
// prompt (the first message's content for chat requests), so that prefix
// caches cannot hit; PromptTokens grow by 8 and BlockHashes are cleared (no
// sharing).
func WithCacheBust(ds Dataset, seed int64, synth *tokenize.Synthesizer) (Dataset, error) {
	t, err := newTexter(seed, synth)
	if err != nil {
		return nil, err
	}
	return &busted{inner: ds, text: t}, nil
}

type busted struct {
	inner Dataset
	text  texter
}

func (d *busted) Name() string { return d.inner.Name() + "+cache-bust" }
func (d *busted) Len() int     { return d.inner.Len() }

func (d *busted) Shape(i int) Request {
	r := d.inner.Shape(i)
	r.PromptTokens += bustTokens
	r.BlockHashes, r.HashBlockTokens = nil, 0
	return r
}

func (d *busted) Request(i int) Request {
	r := d.inner.Request(i)
	r.PromptTokens += bustTokens
	r.BlockHashes, r.HashBlockTokens = nil, 0
	bust := d.text.synth.Text(bustTokens, rngFor(d.text.seed, streamBust, i))
	if len(r.Messages) > 0 {
		r.Messages[0].Content = joinPrompt(bust, r.Messages[0].Content)
	} else {
		r.Prompt = joinPrompt(bust, r.Prompt)
	}
	return r
}
