// Package tokenize counts tokens and synthesizes prompts of an exact token
// length.
//
// Three kinds of tokenizer satisfy [Tokenizer]:
//
//   - [Approx], a rule-based approximation needing no files. It is what the
//     embedded simulated server counts with, so prompts built with it are
//     exact against that server, and within ~20 % of real BPE tokenizers on
//     English text.
//   - a Hugging Face tokenizer.json (byte-level BPE, or SentencePiece-style BPE
//     with byte fallback as in Llama 2 and Mistral) loaded from a local path
//     with [LoadHF].
//   - tiktoken's o200k_base and cl100k_base, offline, with [Tiktoken].
//
// [Synthesizer] builds prompts of exactly n tokens for any of them.
//
// All tokenizers and synthesizers in this package are safe for concurrent use
// once built; a *rand.Rand passed in is not (use one per goroutine).
package tokenize

// Tokenizer turns text into token ids and back. Count(s) equals
// len(Encode(s)); implementations may compute it faster.
type Tokenizer interface {
	// Name identifies the tokenizer in reports, e.g. "approx" or
	// "tiktoken:o200k_base".
	Name() string
	// Encode returns the token ids of text, without special tokens such as BOS.
	Encode(text string) []int
	// Decode returns the text of ids.
	Decode(ids []int) string
	// Count returns the number of tokens in text (len(Encode(text))).
	Count(text string) int
}
