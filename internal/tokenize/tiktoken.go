package tokenize

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// tiktokenOnce installs the offline BPE loader, whose rank files are
// embedded in the binary, so no encoding is ever downloaded.
var tiktokenOnce sync.Once

// TiktokenTokenizer is one of OpenAI's tiktoken encodings, loaded offline.
type TiktokenTokenizer struct {
	name string
	enc  *tiktoken.Tiktoken
	size int // number of ordinary token ids
}

var _ Tokenizer = (*TiktokenTokenizer)(nil)

// Tiktoken returns the encoding o200k_base or cl100k_base, from rank files
// embedded in the binary (no network).
func Tiktoken(name string) (*TiktokenTokenizer, error) {
	size := map[string]int{"o200k_base": 199998, "cl100k_base": 100256}[name]
	if size == 0 {
		return nil, fmt.Errorf("tiktoken encoding %q: want o200k_base or cl100k_base", name)
	}
	tiktokenOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, fmt.Errorf("tiktoken encoding %q: %w", name, err)
	}
	return &TiktokenTokenizer{name: "tiktoken:" + name, enc: enc, size: size}, nil
}

// Name returns "tiktoken:" and the encoding's name.
func (t *TiktokenTokenizer) Name() string { return t.name }

// Encode returns the ordinary tokens of text (special tokens are not
// recognised: "<|endoftext|>" in text is plain text).
func (t *TiktokenTokenizer) Encode(text string) []int { return t.enc.EncodeOrdinary(text) }

// Decode returns the text of ids.
func (t *TiktokenTokenizer) Decode(ids []int) string { return t.enc.Decode(ids) }

// Count returns the number of tokens in text.
func (t *TiktokenTokenizer) Count(text string) int { return len(t.enc.EncodeOrdinary(text)) }

func (t *TiktokenTokenizer) vocabWords() []string {
	var out []string
	for id := range t.size {
		if w := t.enc.Decode([]int{id}); plainWord(w) {
			out = append(out, w)
		}
	}
	return out
}

// plainWord reports whether w is a space and 2..8 lowercase ASCII letters.
func plainWord(w string) bool {
	if len(w) < 3 || len(w) > 9 || w[0] != ' ' {
		return false
	}
	for i := 1; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
