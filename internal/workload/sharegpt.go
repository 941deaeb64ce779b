package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/goodput/goodput/internal/tokenize"
)

// ShareGPTConfig configures the sharegpt dataset.
type ShareGPTConfig struct {
	Sampling
	// NumPrompts is the number of requests; 0 means every valid
	// conversation. Conversations are drawn in a seeded shuffle.
	NumPrompts int
	// Seed makes the sampling reproducible.
	Seed int64
	// OutputLen, when positive, replaces every reply's length as the output
	// length in tokens (vllm's --sharegpt-output-len).
	OutputLen int
	// Tokenizer counts prompt and reply tokens; nil means tokenize.Approx.
	Tokenizer tokenize.Tokenizer
}

// vLLM's ShareGPT filter: prompts and replies of at least 4 tokens (the
// reply check is skipped when OutputLen is set), prompts of at most 1024 and
// prompt+reply of at most 2048 tokens.
const (
	shareGPTMinLen       = 4
	shareGPTMaxPromptLen = 1024
	shareGPTMaxTotalLen  = 2048
)

type shareGPTItem struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// LoadShareGPT reads a ShareGPT JSON file (an array of {"conversations":
// [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}) as
// vllm bench serve does: the first turn is the prompt, the second turn's
// length the output length; conversations with fewer than two turns or
// outside vLLM's length filter are skipped.
func LoadShareGPT(path string, cfg ShareGPTConfig) (Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadShareGPT(f, path, cfg)
}

// ReadShareGPT is LoadShareGPT over a reader; file names it in errors.
func ReadShareGPT(r io.Reader, file string, cfg ShareGPTConfig) (Dataset, error) {
	tok := cfg.Tokenizer
	if tok == nil {
		tok = tokenize.Approx{}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var items []shareGPTItem
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, lineAt(data, jsonOffset(err)), jsonError(err))
	}
	var valid []Request
	for _, it := range items {
		if len(it.Conversations) < 2 {
			continue
		}
		prompt := it.Conversations[0].Value
		in := tok.Count(prompt)
		out := cfg.OutputLen
		if out <= 0 {
			out = tok.Count(it.Conversations[1].Value)
			if out < shareGPTMinLen {
				continue
			}
		}
		if in < shareGPTMinLen || in > shareGPTMaxPromptLen || in+out > shareGPTMaxTotalLen {
			continue
		}
		// The reply's length is recorded; --sharegpt-output-len is a cap.
		valid = append(valid, Request{Prompt: prompt, PromptTokens: in, OutputTokens: out, OutputRecorded: cfg.OutputLen <= 0})
	}
	if len(valid) == 0 {
		return nil, fmt.Errorf("%s: no usable conversations (%d in file; need two turns, prompt 4..1024 tokens, prompt+reply <= 2048)", file, len(items))
	}
	d := &Custom{name: "sharegpt:" + filepath.Base(file)}
	for i, k := range sampleOrder(len(valid), cfg.NumPrompts, cfg.Seed, cfg.Sampling) {
		r := valid[k]
		r.Index = i
		d.reqs = append(d.reqs, r)
	}
	return d, nil
}

func jsonOffset(err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return 0
}

// lineAt returns the 1-based line holding byte offset off of data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}
