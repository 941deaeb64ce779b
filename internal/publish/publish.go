// Package publish models the publish path: what stands between the tokens a
// model emits and the tokens its user sees. An output filter or safety
// check that buffers a sentence, a block or the whole answer before
// releasing it, and a moderation call on each release, push the client's
// first visible token (TTP) later even when the engine is fast. Policy is
// a pure function of the engine's emission times; the simulator applies it
// after the engine, so the server's own first-token time is unchanged.
package publish

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/workload"
)

// Mode is what a publisher waits for before it releases buffered output.
type Mode uint8

const (
	// None releases every chunk as the engine emits it (no buffering).
	None Mode = iota
	// Sentence releases at each sentence end.
	Sentence
	// Whole releases the whole answer at its end.
	Whole
	// Chars releases once at least N characters are buffered.
	Chars
	// Tokens releases once at least N tokens are buffered.
	Tokens
)

// SentenceTokens are the sentence lengths assumed, in turn, where the
// output has no text to find sentence ends in (the virtual-time
// simulator's records): 20 tokens on average, about an English sentence's
// words, varying as prose does so a buffered stream's bursts vary too.
var SentenceTokens = [...]int{20, 14, 26, 17, 23}

// CharsPerToken converts tokens to characters where there is no text, the
// ratio tokenize.Approx assumes.
const CharsPerToken = 4

// Policy is a publish policy: when buffered output is released, and the
// moderation delay each release waits. The zero Policy publishes as the
// engine emits.
type Policy struct {
	Mode Mode
	// N is the block size of Chars and Tokens.
	N int
	// Moderation, when set, is each release's moderation delay in ms,
	// drawn per release. Releases are moderated one at a time in stream
	// order, as a filter in the stream path does: a release waits for its
	// boundary and for the previous release, then for its own check.
	Moderation workload.Dist
}

// Parse parses the publish policy flag (none, sentence, whole, chars:N,
// tokens:N) and the moderation delay (a distribution in ms, as
// workload.ParseDist; "" for none).
func Parse(policy, moderation string) (Policy, error) {
	var p Policy
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(policy), ":")
	switch strings.ToLower(kind) {
	case "", "none":
		p.Mode = None
	case "sentence":
		p.Mode = Sentence
	case "whole":
		p.Mode = Whole
	case "chars":
		p.Mode = Chars
	case "tokens":
		p.Mode = Tokens
	default:
		return Policy{}, fmt.Errorf("publish policy %q: want none, sentence, whole, chars:N or tokens:N", policy)
	}
	if p.Mode == Chars || p.Mode == Tokens {
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n < 1 {
			return Policy{}, fmt.Errorf("publish policy %q: want %s:N with N ≥ 1", policy, kind)
		}
		p.N = n
	} else if hasArg {
		return Policy{}, fmt.Errorf("publish policy %q: %s takes no argument", policy, kind)
	}
	if strings.TrimSpace(moderation) != "" {
		d, err := workload.ParseDist(moderation)
		if err != nil {
			return Policy{}, fmt.Errorf("moderation delay: %w", err)
		}
		p.Moderation = d
	}
	return p, nil
}

// String gives the policy in Parse's syntax (without the moderation delay).
func (p Policy) String() string {
	switch p.Mode {
	case Sentence:
		return "sentence"
	case Whole:
		return "whole"
	case Chars:
		return "chars:" + strconv.Itoa(p.N)
	case Tokens:
		return "tokens:" + strconv.Itoa(p.N)
	}
	return "none"
}

// Active reports whether the policy changes anything.
func (p Policy) Active() bool { return p.Mode != None || p.Moderation != nil }

// Describe adds the policy to a simulated engine's description (the
// records' Meta.Simulated, shown in Conditions), when it is active.
func (p Policy) Describe(d *runlog.Engine) {
	if !p.Active() {
		return
	}
	d.Publish = p.String()
	if p.Moderation != nil {
		d.ModerationDelayMs = p.Moderation.String()
	}
}

// Piece is a run of visible output: emitted by the engine at T (ns), or
// released to the client at T.
type Piece struct {
	T      int64
	Tokens int
	// Text is the piece's text; "" where it is not known, when sentence
	// ends are assumed every SentenceTokens tokens and characters are
	// counted as CharsPerToken a token.
	Text string
}

// Release returns the releases the client receives for pieces emitted as
// given (in time order): each release carries the pieces buffered since
// the previous one, at the time its boundary piece was emitted, or the
// previous release went out if later, plus its moderation delay drawn from
// rng. A boundary is the piece that ends a sentence (Sentence), brings the
// buffer to N characters or tokens (Chars, Tokens), or every piece (None);
// whatever is left at the end is released with the last piece. rng may be
// nil when the policy has no moderation delay.
func (p Policy) Release(pieces []Piece, rng *rand.Rand) []Piece {
	var out []Piece
	var buf Piece
	var prev int64
	b := p.Buffer()
	for i, pc := range pieces {
		buf.Tokens += pc.Tokens
		buf.Text += pc.Text
		if b.Boundary(pc.Tokens, pc.Text) || i == len(pieces)-1 {
			at := max(pc.T, prev)
			if p.Moderation != nil {
				at += int64(p.Moderation.Sample(rng)) * 1e6
			}
			buf.T, prev = at, at
			out = append(out, buf)
			buf = Piece{}
		}
	}
	return out
}

// Buffer is one answer's publisher state, for a server that publishes as
// it streams (goodput serve): Boundary says, piece by piece, whether the
// output buffered so far is released with this piece.
type Buffer struct {
	p             Policy
	tokens, chars int
	sinceSentence int // tokens since the last assumed sentence end
	sentence      int // the assumed sentence's index
}

// Buffer returns a fresh publisher state for one answer.
func (p Policy) Buffer() *Buffer { return &Buffer{p: p} }

// Boundary adds a visible piece of tokens (its text, "" when unknown) and
// reports whether it ends a release: every piece (None), a sentence end
// (Sentence), N characters or tokens buffered (Chars, Tokens), never
// before the end (Whole: the caller releases the rest at the end).
func (b *Buffer) Boundary(tokens int, text string) bool {
	b.tokens += tokens
	if text != "" {
		b.chars += len(text)
	} else {
		b.chars += tokens * CharsPerToken
	}
	boundary := false
	switch b.p.Mode {
	case None:
		boundary = true
	case Sentence:
		if text != "" {
			boundary = endsSentence(text)
		} else {
			b.sinceSentence += tokens
			if n := SentenceTokens[b.sentence%len(SentenceTokens)]; b.sinceSentence >= n {
				boundary, b.sinceSentence = true, b.sinceSentence-n
				b.sentence++
			}
		}
	case Chars:
		boundary = b.chars >= b.p.N
	case Tokens:
		boundary = b.tokens >= b.p.N
	}
	if boundary {
		b.tokens, b.chars = 0, 0
	}
	return boundary
}

// endsSentence reports whether text holds a sentence end: '.', '!' or '?'
// followed by a space or closing the text (after closing quotes and
// brackets), or a line break.
func endsSentence(text string) bool {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			return true
		case '.', '!', '?':
			j := i + 1
			for j < len(text) && strings.IndexByte(`"')]`, text[j]) >= 0 {
				j++
			}
			if j == len(text) || text[j] == ' ' || text[j] == '\n' {
				return true
			}
		}
	}
	return false
}

// ApplyRecord re-times rec's visible chunks as the policy releases them
// (hidden chunks, which the user never sees, are left where they are) and
// moves its end to the last release when that is later: the client's
// TTFT, TTP, ITL and E2E move, the server's timing (rec.Server) does not.
// rng draws the moderation delays.
func (p Policy) ApplyRecord(rec *runlog.Record, rng *rand.Rand) {
	if !p.Active() || len(rec.Chunks) == 0 {
		return
	}
	var pieces []Piece
	kept := rec.Chunks[:0:0]
	for _, c := range rec.Chunks {
		if c.Visible {
			pieces = append(pieces, Piece{T: c.T, Tokens: int(c.Tokens)})
		} else {
			kept = append(kept, c)
		}
	}
	if len(pieces) == 0 {
		return
	}
	for _, r := range p.Release(pieces, rng) {
		kept = append(kept, runlog.Chunk{T: r.T, Tokens: int32(r.Tokens), Visible: true})
		rec.End = max(rec.End, r.T)
	}
	slices.SortStableFunc(kept, func(a, b runlog.Chunk) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	rec.Chunks = kept
}
