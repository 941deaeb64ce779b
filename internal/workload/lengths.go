package workload

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/goodput/goodput/internal/tokenize"
)

// LengthsConfig configures a lengths dataset.
type LengthsConfig struct {
	Sampling
	// NumPrompts is the number of requests; 0 means one per row. Rows are
	// drawn in a seeded shuffle, with replacement beyond the row count.
	NumPrompts int
	// Seed makes the sampling and the text reproducible.
	Seed int64
	// Synth writes the prompts; nil means tokenize.Approx.
	Synth *tokenize.Synthesizer
}

// Column names recognised for prompt and output token counts, in order of
// preference: Sarathi/Vidur exports, the Azure traces, LLMServingSim and
// common spellings.
var (
	inputColumns  = []string{"num_prefill_tokens", "input_tokens", "prompt_tokens", "input_length", "input_len", "prompt_len", "prompt_length", "contexttokens", "input_toks"}
	outputColumns = []string{"num_decode_tokens", "output_tokens", "completion_tokens", "output_length", "output_len", "response_length", "generatedtokens", "output_toks"}
)

// LoadLengths reads a CSV of prompt and output token counts (e.g.
// num_prefill_tokens,num_decode_tokens); without a header, the first two
// columns are taken as prompt and output tokens.
func LoadLengths(path string, cfg LengthsConfig) (Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLengths(f, path, cfg)
}

// ReadLengths is LoadLengths over a reader; file names it in errors.
func ReadLengths(r io.Reader, file string, cfg LengthsConfig) (Dataset, error) {
	t, err := readTable(r, file)
	if err != nil {
		return nil, err
	}
	in, out := 0, 1
	if t.header != nil {
		in, out = t.firstColumn(inputColumns...), t.firstColumn(outputColumns...)
		if in < 0 || out < 0 {
			return nil, fmt.Errorf("%s:1: no prompt/output token columns in header %s (want e.g. num_prefill_tokens,num_decode_tokens)", file, t.describeColumns())
		}
	} else if t.width < 2 {
		return nil, fmt.Errorf("%s:1: %d column; want prompt and output token counts", file, t.width)
	}
	type pair struct{ in, out int }
	src := make([]pair, len(t.rows))
	for k, row := range t.rows {
		a, err := parseTokens(row.fields[in])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: prompt tokens: %w", file, row.line, err)
		}
		b, err := parseTokens(row.fields[out])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: output tokens: %w", file, row.line, err)
		}
		src[k] = pair{a, b}
	}
	d := &rows{name: "lengths:" + filepath.Base(file)}
	if d.text, err = newTexter(cfg.Seed, cfg.Synth); err != nil {
		return nil, err
	}
	for i, k := range sampleOrder(len(src), cfg.NumPrompts, cfg.Seed, cfg.Sampling) {
		d.shapes = append(d.shapes, Request{Index: i, PromptTokens: src[k].in, OutputTokens: src[k].out, OutputRecorded: src[k].out > 0})
	}
	return d, nil
}
