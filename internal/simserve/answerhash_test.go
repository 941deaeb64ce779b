package simserve

import (
	"slices"
	"testing"
)

// The hashes a request carries over its answer are the ones the next turn's
// prompt has when it resends that answer: every full block of prompt +
// answer, no more.
func TestAnswerHashesMatchResent(t *testing.T) {
	prompt := []string{"You are terse and exact in every answer.", "What does a paged KV cache store, and why page it?"}
	for _, tc := range []struct {
		seq uint64
		n   int
	}{{1, 0}, {2, 1}, {3, 15}, {4, 16}, {5, 40}, {9, 333}} {
		info := analyzePrompt(prompt, nil, 0, 16, true)
		got := answerHashes(info, tc.seq, tc.n, 16)
		answer := string(appendFiller(nil, tc.seq, 0, tc.n))
		resent := analyzePrompt(append(slices.Clone(prompt), answer, "And the next question?"), nil, 0, 16, true)
		full := (info.tokens + tc.n) / 16
		if len(got) != full {
			t.Errorf("seq %d, %d answer tokens: %d hashes; want %d (the full blocks of %d + %d tokens)", tc.seq, tc.n, len(got), full, info.tokens, tc.n)
			continue
		}
		if !slices.Equal(got, resent.hashes[:full]) {
			t.Errorf("seq %d, %d answer tokens: hashes differ from the resent history's", tc.seq, tc.n)
		}
	}
}
