package cli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// writeResult writes a result file, creating its directory (--result-dir)
// if needed.
func writeResult(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// detailed is vLLM's --save-detailed: per-request lists in the result, in
// send order, times in seconds as vLLM writes them. Generated texts are not
// kept by goodput, so generated_texts is absent.
func detailed(recordsPath string, level int) (map[string]any, error) {
	if recordsPath == "" {
		return nil, usagef("--save-detailed needs the records file (drop --records none)")
	}
	f, err := os.Open(recordsPath)
	if err != nil {
		return nil, fmt.Errorf("--save-detailed: %w", err)
	}
	defer f.Close()
	_, recs, _, err := runlog.ReadAll(f, recordsPath)
	if err != nil {
		return nil, fmt.Errorf("--save-detailed: %w", err)
	}
	kept := recs[:0]
	for _, r := range recs {
		if !r.Warmup && r.Level == level {
			kept = append(kept, r)
		}
	}
	slices.SortStableFunc(kept, func(a, b runlog.Record) int { return cmp.Compare(a.Sent, b.Sent) })
	in, out := make([]int, len(kept)), make([]int, len(kept))
	ttfts, errs := make([]float64, len(kept)), make([]string, len(kept))
	itls := make([][]float64, len(kept))
	var gaps []time.Duration
	for i := range kept {
		r := &kept[i]
		in[i], errs[i] = r.PromptTokens, r.Error
		if r.OK() {
			out[i] = r.OutputTokens()
		}
		if d, ok := r.TTFT(); ok {
			ttfts[i] = d.Seconds()
		}
		gaps = r.ITLs(gaps[:0])
		itls[i] = make([]float64, len(gaps))
		for j, g := range gaps {
			itls[i][j] = g.Seconds()
		}
	}
	return map[string]any{"input_lens": in, "output_lens": out, "ttfts": ttfts, "itls": itls, "errors": errs}, nil
}
