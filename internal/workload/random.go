package workload

import (
	"errors"
	"fmt"
	"math"

	"github.com/goodput/goodput/internal/tokenize"
)

// RandomConfig configures the random dataset, with vllm bench serve's
// semantics: input and output lengths are uniform integers in
// [floor(len*(1-r)), ceil(len*(1+r))] (output at least 1), and every prompt
// starts with the same PrefixLen-token prefix, so prompts have
// PrefixLen + input length tokens.
type RandomConfig struct {
	// InputLen is the mean prompt length in tokens, before PrefixLen.
	InputLen int
	// OutputLen is the mean output length in tokens (max_tokens).
	OutputLen int
	// RangeRatio r in [0, 1) widens lengths to [len*(1-r), len*(1+r)].
	RangeRatio float64
	// PrefixLen is the length in tokens of a prefix shared by all prompts.
	PrefixLen int
	// NumPrompts is the number of distinct requests (Len).
	NumPrompts int
	// Seed makes the dataset reproducible.
	Seed int64
	// InputDist and OutputDist, when set, replace InputLen/OutputLen and
	// RangeRatio with a length distribution (see ParseDist).
	InputDist, OutputDist Dist
	// Synth writes the prompts; nil means tokenize.Approx.
	Synth *tokenize.Synthesizer
}

// Random is vLLM's random dataset: synthetic prompts of random lengths.
type Random struct {
	cfg     RandomConfig
	in, out Dist
	text    texter
}

var _ Dataset = (*Random)(nil)

// NewRandom validates cfg and returns the dataset.
func NewRandom(cfg RandomConfig) (*Random, error) {
	if cfg.NumPrompts <= 0 {
		return nil, fmt.Errorf("random dataset: number of prompts %d must be positive", cfg.NumPrompts)
	}
	if cfg.PrefixLen < 0 {
		return nil, fmt.Errorf("random dataset: prefix length %d must not be negative", cfg.PrefixLen)
	}
	if !(cfg.RangeRatio >= 0 && cfg.RangeRatio < 1) {
		return nil, fmt.Errorf("random dataset: range ratio %g must be in [0, 1)", cfg.RangeRatio)
	}
	d := &Random{cfg: cfg, in: cfg.InputDist, out: cfg.OutputDist}
	var err error
	if d.in == nil {
		if d.in, err = rangeDist(cfg.InputLen, cfg.RangeRatio, 0); err != nil {
			return nil, fmt.Errorf("random dataset: input length: %w", err)
		}
	}
	if d.out == nil {
		if d.out, err = rangeDist(cfg.OutputLen, cfg.RangeRatio, 1); err != nil {
			return nil, fmt.Errorf("random dataset: output length: %w", err)
		}
	}
	if d.text, err = newTexter(cfg.Seed, cfg.Synth); err != nil {
		return nil, err
	}
	return d, nil
}

// rangeDist is vLLM's uniform length range around n with ratio r, at least lo.
func rangeDist(n int, r float64, lo int) (Dist, error) {
	if n < 0 {
		return nil, errors.New("must not be negative")
	}
	a := max(int(math.Floor(float64(n)*(1-r))), lo)
	b := max(int(math.Ceil(float64(n)*(1+r))), a)
	if a == b {
		return Fixed(a), nil
	}
	return Uniform{Min: a, Max: b}, nil
}

// Name returns "random".
func (d *Random) Name() string { return "random" }

// Len returns the number of prompts.
func (d *Random) Len() int { return d.cfg.NumPrompts }

// Shape returns request i without text.
func (d *Random) Shape(i int) Request {
	rng := rngFor(d.cfg.Seed, streamShape, i)
	in := max(d.in.Sample(rng), 0)
	out := max(d.out.Sample(rng), 1)
	r := Request{Index: i, PromptTokens: d.cfg.PrefixLen + in, OutputTokens: out}
	if d.cfg.PrefixLen > 0 {
		r.BlockHashes = prefixHashes(d.cfg.Seed, 0, d.cfg.PrefixLen, r.PromptTokens, i)
		r.HashBlockTokens = DefaultHashBlockTokens
	}
	return r
}

// Request returns request i with its prompt.
func (d *Random) Request(i int) Request {
	r := d.Shape(i)
	var segs []segment
	if d.cfg.PrefixLen > 0 {
		segs = []segment{{key: prefixKey(0), tokens: d.cfg.PrefixLen}}
	}
	d.text.prompt(&r, segs)
	return r
}
