package tokenize

import (
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Approx is a rule-based token counter for when the server's tokenizer is not
// at hand. It averages about four characters of English per token, as BPE
// tokenizers do, by these rules (whitespace itself is free):
//
//   - a run of letters counts one token per started 5 letters
//     ("the" 1, "token" 1, "tokens" 2, "approximation" 3);
//   - a run of ASCII digits counts one token per started 3 digits, because
//     tiktoken and Llama-3 split numbers into groups of up to three;
//   - each Han, Hiragana, Katakana or Hangul character counts one token;
//   - every other character (punctuation, symbols, emoji) counts one token.
//
// Counts add up over whitespace: Count(a+" "+b) == Count(a)+Count(b). The
// embedded simulated server counts prompt tokens with Approx, so prompts made
// by [Approx.Synthesize] are exact against it.
//
// Encode gives one id per counted piece: the index of the piece in Approx's
// fixed word list when it is one of those words, else a stable hash above
// the list. Decode maps every id back to a word of the list, so
// Count(Decode(ids)) == len(ids) always, but text round-trips only when it was
// built from the list. The zero value is ready to use.
type Approx struct{}

var _ Tokenizer = Approx{}

// approxIDSpace is the size of Approx's id space: ids at or above len(words)
// are hashes of pieces outside the word list.
const approxIDSpace = 1 << 17

// Name returns "approx".
func (Approx) Name() string { return "approx" }

// Count returns the approximate number of tokens in text.
func (Approx) Count(text string) int {
	n := 0
	approxPieces(text, func(string) { n++ })
	return n
}

// Encode returns one id per token piece of text; see [Approx].
func (Approx) Encode(text string) []int {
	var ids []int
	approxPieces(text, func(p string) {
		if id, ok := wordIndex[p]; ok {
			ids = append(ids, id)
			return
		}
		// FNV-1a: a stable, dependency-free hash.
		h := uint32(2166136261)
		for i := 0; i < len(p); i++ {
			h ^= uint32(p[i])
			h *= 16777619
		}
		ids = append(ids, len(words)+int(h%uint32(approxIDSpace-len(words))))
	})
	return ids
}

// Decode returns the words of ids separated by single spaces. Ids outside the
// word list (and negative ids) map onto it modulo its length.
func (Approx) Decode(ids []int) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		if id < 0 {
			id = -id
		}
		b.WriteString(words[id%len(words)])
	}
	return b.String()
}

// Synthesize returns English-looking text of exactly n Approx tokens (none
// for n <= 0): words from a fixed list of common short words, each one token,
// in sentences that start with a capital and end with a period (one token).
// The text never starts or ends with whitespace, so prompts can be joined
// with a single space and their counts add up.
func (Approx) Synthesize(n int, rng *rand.Rand) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n * 5)
	AppendApprox(&b, n, rng)
	return b.String()
}

// AppendApprox writes exactly n Approx tokens of text to b, as
// [Approx.Synthesize] returns them; it saves a copy when building long
// prompts from parts. A space is written first when b is not empty.
func AppendApprox(b *strings.Builder, n int, rng *rand.Rand) {
	sentence := 0 // tokens left in the current sentence, period included
	for n > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if sentence == 0 {
			sentence = 6 + rng.IntN(12)
			w := words[rng.IntN(len(words))]
			b.WriteByte(w[0] - 'a' + 'A')
			b.WriteString(w[1:])
		} else {
			b.WriteString(words[rng.IntN(len(words))])
		}
		n--
		sentence--
		// Close the sentence with a period when it is due and a token is
		// left for it; a period is one token and needs no space.
		if sentence == 1 && n > 0 {
			b.WriteByte('.')
			n--
			sentence = 0
		}
	}
}

// approxPieces calls emit with each token piece of text, by Approx's rules.
func approxPieces(text string, emit func(string)) {
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r < utf8.RuneSelf && (r == ' ' || r == '\n' || r == '\t' || r == '\r'):
			i += size
		case r >= '0' && r <= '9':
			j := i
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			for k := i; k < j; k += 3 {
				emit(text[k:min(k+3, j)])
			}
			i = j
		case isCJK(r):
			emit(text[i : i+size])
			i += size
		case isLetter(r):
			// Split the run every 5 letters (runes, not bytes).
			start, letters, j := i, 0, i
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isLetter(r2) || isCJK(r2) {
					break
				}
				if letters == 5 {
					emit(text[start:j])
					start, letters = j, 0
				}
				letters++
				j += s2
			}
			emit(text[start:j])
			i = j
		case unicode.IsSpace(r):
			i += size
		default:
			emit(text[i : i+size])
			i += size
		}
	}
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.Is(unicode.Mn, r)
}

func isCJK(r rune) bool {
	return r >= 0x1100 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r))
}

// words are common English words of at most five lowercase letters, so each
// is exactly one Approx token (and one token in most real BPE vocabularies
// when preceded by a space).
var words = wordList(`
the of and to in is was it for on that with as he be at by this had not are
but from or have an they which one you were her all she there would their we
him been has when who will more no if out so said what up its about into than
them can only other new some could time these two may then do first any my
now such like our over man me even most made after also did many before must
through back years where much your way well down should because each just
those people how too little state good very make world still own see men work
long get here both life being under never day same last might great year since
off come came thing place while found house world point hand water small large
again next house often night early young light after city order river story
open close green white black right left end part line word name group number
round plan table chair music money paper field power cause reason level short
form sound voice price value learn teach build drive write read speak start
stand move carry bring think answer green bread fruit sugar salt stone glass
metal wood cloth horse bird fish tree plant seed flower grass rain snow wind
cloud storm sun moon star sky sea lake hill road town farm school class friend
child woman color heart mind body head face eye ear mouth arm leg foot board
ship train plane wheel door floor wall roof room bed shirt shoe hat coat bag
box cup dish fork knife spoon clock phone radio game sport team match goal
`)

// wordList splits list into words, dropping repeats and words too long to be
// one Approx token, so the list above can be edited freely.
func wordList(list string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.Fields(list) {
		if len(w) <= 5 && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// wordIndex maps each word of the list to its index.
var wordIndex = func() map[string]int {
	m := make(map[string]int, len(words))
	for i, w := range words {
		m[w] = i
	}
	return m
}()
