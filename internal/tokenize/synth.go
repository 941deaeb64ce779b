package tokenize

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Synthesizer builds text of an exact token length for one tokenizer.
// For [Approx] it writes words of its list directly. For a real tokenizer it
// draws from the tokenizer's own "stable words" — vocabulary entries that are
// a space followed by 2–8 lowercase ASCII letters and encode to one token,
// also when repeated — so joined words re-encode to one token each.
// NewSynthesizer checks that on a long sample; when it holds, texts are
// exact by construction and need no re-encoding (that is what makes 100,000
// prompts fast). Otherwise every text is re-encoded and trimmed or padded
// until its count is exact.
//
// Text, Extend and ExtendCounted count a text's own tokens: the special
// tokens a tokenizer.json's post_processor adds to a whole prompt (a BOS)
// are not among them, so texts join into one prompt. [Synthesizer.Prompt]
// writes a whole prompt, and [Synthesizer.Calibration] tells callers that
// build prompts from parts how many tokens to write.
//
// A Synthesizer is safe for concurrent use; each call needs its own rng.
type Synthesizer struct {
	tok      Tokenizer
	approx   bool
	additive bool
	// special is the number of special tokens tok adds to a prompt.
	special int
	// words are stable single-token words of tok, each with a leading
	// space; first are words without the space that are one token too, to
	// start a text.
	words, first []string
	// cal maps server-counted lengths to tok's Count of a prompt (see
	// WithCalibration); Calibration composes it with special.
	cal Calibration
}

// Calibration relates a prompt's length as the server counts it to the
// length this package writes, fitted by the caller from the server (its
// /tokenize endpoint or the usage of probe requests):
//
//	server tokens ≈ Overhead + PerToken × written tokens
//
// Overhead is what the server adds to every prompt (BOS, a chat template);
// PerToken is how many of its tokens one written token makes. The zero value
// is the identity.
type Calibration struct {
	Overhead float64
	PerToken float64
}

// IsZero reports whether c is the identity.
func (c Calibration) IsZero() bool { return c.Overhead == 0 && (c.PerToken == 0 || c.PerToken == 1) }

// Written returns how many tokens to write so the server counts about n
// (at least 1 for n ≥ 1).
func (c Calibration) Written(n int) int {
	if n <= 0 || c.IsZero() {
		return n
	}
	r := c.PerToken
	if r <= 0 {
		r = 1
	}
	return max(1, int(math.Round((float64(n)-c.Overhead)/r)))
}

// WrittenSpan is Written for a part of a prompt (a shared prefix), which
// carries no per-prompt overhead.
func (c Calibration) WrittenSpan(k int) int {
	if k <= 0 || c.PerToken <= 0 || c.PerToken == 1 {
		return k
	}
	return max(1, int(math.Round(float64(k)/c.PerToken)))
}

// WithCalibration returns a copy of s whose callers (package workload) map
// wanted lengths through c. Here c's written tokens are what the
// Tokenizer's Count says of a whole prompt, special tokens included (as a
// caller fits it from Count and the server's counts of the same prompts);
// [Synthesizer.Calibration] adds the special tokens on top.
func (s *Synthesizer) WithCalibration(c Calibration) *Synthesizer {
	cp := *s
	cp.cal = c
	return &cp
}

// Calibration returns how many tokens of text to write for a prompt the
// server should count n tokens (Written) or for a part of one (WrittenSpan):
// the calibration set with WithCalibration, composed with the special tokens
// the tokenizer adds to every prompt. Without either it is the identity
// (zero); for a tokenizer.json adding a BOS and no calibration it is
// {Overhead: 1, PerToken: 1}.
func (s *Synthesizer) Calibration() Calibration {
	if s.special == 0 {
		return s.cal
	}
	r := s.cal.PerToken
	if r <= 0 {
		r = 1
	}
	// server ≈ Overhead + r × (written + special)
	return Calibration{Overhead: s.cal.Overhead + r*float64(s.special), PerToken: r}
}

// SpecialTokens returns the number of special tokens the tokenizer adds to
// every prompt (see the package function [SpecialTokens]).
func (s *Synthesizer) SpecialTokens() int { return s.special }

// ErrNoStableWords means a tokenizer's vocabulary has too few plain
// lowercase words to synthesize text from (e.g. a character-level model).
var ErrNoStableWords = errors.New("tokenizer has too few single-token lowercase words to synthesize prompts")

// maxStableWords bounds the word list; more adds no realism, only setup time.
const maxStableWords = 4096

// NewSynthesizer prepares a Synthesizer for t; a nil t means [Approx].
func NewSynthesizer(t Tokenizer) (*Synthesizer, error) {
	if t == nil {
		t = Approx{}
	}
	if _, ok := t.(Approx); ok {
		return &Synthesizer{tok: t, approx: true, additive: true}, nil
	}
	s := &Synthesizer{tok: t, special: SpecialTokens(t)}
	count := s.count
	var cands []string
	if v, ok := t.(vocabLister); ok {
		cands = v.vocabWords()
	} else {
		for _, w := range words {
			cands = append(cands, " "+w)
		}
	}
	for _, w := range cands {
		if len(s.words) == maxStableWords {
			break
		}
		// A word must be one token, also when repeated. A normalizer
		// that prepends "▁" to every input (SentencePiece "legacy", e.g.
		// Llama 2) makes a lone " w" two symbols "▁▁w", yet " w" after
		// text is one token: there, measure it after its unspaced form,
		// the way texts use it.
		if plainWord(w) && (count(w) == 1 && count(w+w) == 2 ||
			count(w[1:]+w) == 2 && count(w[1:]+w+w) == 3) {
			s.words = append(s.words, w)
			if count(w[1:]) == 1 && count(w[1:]+w) == 2 {
				s.first = append(s.first, w[1:])
			}
		}
	}
	if len(s.words) < 64 || len(s.first) < 8 {
		return nil, fmt.Errorf("%s: %w (found %d)", t.Name(), ErrNoStableWords, len(s.words))
	}
	// Check additivity on a sample: a 2,000-token text, and two texts
	// joined by a space.
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := s.build(2000, rng), s.build(37, rng)
	s.additive = count(a) == 2000 && count(a+" "+b) == 2037
	return s, nil
}

// count returns the tokens of text alone (without special tokens).
func (s *Synthesizer) count(text string) int { return s.tok.Count(text) - s.special }

// vocabLister is implemented by tokenizers that can list the decoded text of
// their plain word tokens (each " word"), to pick synthesis words from.
type vocabLister interface {
	vocabWords() []string
}

// Tokenizer returns the tokenizer the Synthesizer counts with.
func (s *Synthesizer) Tokenizer() Tokenizer { return s.tok }

// Additive reports whether texts from Text joined with one space count as
// the sum of their counts, which saves re-encoding joined texts.
func (s *Synthesizer) Additive() bool { return s.additive }

// Text returns text of exactly n tokens of its own (empty for n <= 0), not
// starting or ending with whitespace: CountText(Tokenizer(), text) == n,
// and a tokenizer that adds special tokens counts n + SpecialTokens() for
// it as a whole prompt. Use Prompt for a whole prompt of n tokens.
func (s *Synthesizer) Text(n int, rng *rand.Rand) string {
	if n <= 0 {
		return ""
	}
	if s.approx {
		return Approx{}.Synthesize(n, rng)
	}
	text := s.build(n, rng)
	if s.additive {
		return text
	}
	return s.fix(text, 0, n, rng)
}

// Prompt returns a whole prompt that the server counts as n tokens: the
// special tokens the tokenizer adds (and the calibration, if any) are taken
// off what it writes, so Tokenizer().Count(Prompt(n)) == n without a
// calibration. It writes at least one token, so a prompt asked to be no
// longer than the special tokens comes out longer (empty for n <= 0).
func (s *Synthesizer) Prompt(n int, rng *rand.Rand) string {
	return s.Text(s.Calibration().Written(n), rng)
}

// Extend returns prefix followed by synthesized text, n tokens of text in
// all (special tokens not included, as in Text). When prefix alone has n
// tokens or more, it returns prefix unchanged.
func (s *Synthesizer) Extend(prefix string, n int, rng *rand.Rand) string {
	return s.ExtendCounted(prefix, s.count(prefix), n, rng)
}

// ExtendCounted is Extend for a prefix whose count the caller knows
// (have tokens of text, as Text counts), e.g. because it was joined from
// Text results of an additive Synthesizer; it then needs no encoding.
func (s *Synthesizer) ExtendCounted(prefix string, have, n int, rng *rand.Rand) string {
	if n <= have {
		return prefix
	}
	if prefix == "" {
		return s.Text(n, rng)
	}
	var b strings.Builder
	b.Grow(len(prefix) + (n-have)*7)
	b.WriteString(prefix)
	if s.approx {
		AppendApprox(&b, n-have, rng)
		return b.String()
	}
	for range n - have {
		b.WriteString(s.words[rng.IntN(len(s.words))])
	}
	if s.additive {
		return b.String()
	}
	return s.fix(b.String(), len(prefix), n, rng)
}

// build joins one first word and n−1 stable words.
func (s *Synthesizer) build(n int, rng *rand.Rand) string {
	var b strings.Builder
	b.Grow(n * 7)
	b.WriteString(s.first[rng.IntN(len(s.first))])
	for range n - 1 {
		b.WriteString(s.words[rng.IntN(len(s.words))])
	}
	return b.String()
}

// fix re-encodes text and pads or trims words after byte keep until it has
// n tokens. Words nearly always add one token each, so it rarely loops.
func (s *Synthesizer) fix(text string, keep, n int, rng *rand.Rand) string {
	for range 64 {
		got := s.count(text)
		switch {
		case got == n:
			return text
		case got < n:
			var b strings.Builder
			b.WriteString(text)
			for range n - got {
				b.WriteString(s.words[rng.IntN(len(s.words))])
			}
			text = b.String()
		default:
			for range got - n {
				i := strings.LastIndexByte(text, ' ')
				if i <= keep {
					return text
				}
				text = text[:i]
			}
		}
	}
	return text
}
