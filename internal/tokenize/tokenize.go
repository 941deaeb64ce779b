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
//     with [LoadHF]. Its post_processor (BOS/EOS template) counts too: a
//     prompt's Count includes the special tokens the server adds.
//   - tiktoken's o200k_base and cl100k_base, offline, with [Tiktoken].
//
// [Synthesizer] builds prompts of exactly n tokens for any of them: text of
// n tokens of its own with [Synthesizer.Text], a whole prompt of n tokens,
// special tokens included, with [Synthesizer.Prompt].
//
// All tokenizers and synthesizers in this package are safe for concurrent use
// once built; a *rand.Rand passed in is not (use one per goroutine).
package tokenize

// Tokenizer turns text into token ids and back.
//
// Count counts text as a whole prompt, the way the server counts what it is
// sent: for a Hugging Face tokenizer.json whose post_processor adds special
// tokens (a BOS, [CLS] … [SEP]), those are included, as with
// add_special_tokens=True. Encode never adds them. So Count(s) equals
// len(Encode(s)) + [SpecialTokens](t), where a tokenizer that adds special
// tokens says how many with a method SpecialTokens() int; [CountText]
// counts text alone (a part of a prompt, a chat message, a reply).
type Tokenizer interface {
	// Name identifies the tokenizer in reports, e.g. "approx" or
	// "tiktoken:o200k_base".
	Name() string
	// Encode returns the token ids of text, without special tokens such as BOS.
	Encode(text string) []int
	// Decode returns the text of ids.
	Decode(ids []int) string
	// Count returns the number of tokens of text as a whole prompt,
	// special tokens included: len(Encode(text)) + SpecialTokens(t).
	Count(text string) int
}

// specialCounter is implemented by tokenizers that add special tokens to
// every prompt.
type specialCounter interface {
	SpecialTokens() int
}

var _ specialCounter = (*HF)(nil)

// SpecialTokens returns how many special tokens t adds to every prompt
// (Count(s) − len(Encode(s)) for any s): a tokenizer.json's BOS or
// [CLS]/[SEP]; 0 for [Approx], tiktoken and files without such a template.
func SpecialTokens(t Tokenizer) int {
	if s, ok := t.(specialCounter); ok {
		return s.SpecialTokens()
	}
	return 0
}

// CountText returns the number of tokens of text alone, without the
// special tokens Count adds to a whole prompt: what text adds to a prompt
// it is part of (0 for "").
func CountText(t Tokenizer, text string) int {
	if k := SpecialTokens(t); k != 0 {
		return t.Count(text) - k
	}
	return t.Count(text)
}
