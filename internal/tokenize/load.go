package tokenize

import (
	"fmt"
	"strings"
)

// Load returns the tokenizer a --tokenizer value names: "" or "approx" for
// [Approx], "tiktoken:o200k_base" or "tiktoken:cl100k_base" (offline), or
// the path of a Hugging Face tokenizer.json or of the directory holding it.
func Load(spec string) (Tokenizer, error) {
	switch {
	case spec == "" || strings.EqualFold(spec, "approx"):
		return Approx{}, nil
	case strings.HasPrefix(spec, "tiktoken:"):
		return Tiktoken(strings.TrimPrefix(spec, "tiktoken:"))
	}
	t, err := LoadHF(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return t, nil
}
