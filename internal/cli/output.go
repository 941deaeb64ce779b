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

// savedRun is a finished run's records file, read once for the outputs
// that need every request (--html, --save-detailed).
type savedRun struct {
	path string
	meta *runlog.Meta
	recs []runlog.Record
	read bool
}

// load reads the file on first use; flag names the output asking.
func (s *savedRun) load(env Env, flag string) error {
	if s.read {
		return nil
	}
	if s.path == "" {
		return usagef("%s needs the records file (drop --records none)", flag)
	}
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	meta, recs, warns, err := runlog.ReadAll(f, s.path)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	for _, w := range warns {
		fmt.Fprintln(env.Stderr, "goodput: "+w)
	}
	s.meta, s.recs, s.read = meta, recs, true
	return nil
}

// detailed is vLLM's --save-detailed: per-request lists in the result, in
// send order, times in seconds as vLLM writes them. Generated texts are not
// kept by goodput, so generated_texts is absent.
func detailed(env Env, run *savedRun, level int) (map[string]any, error) {
	if err := run.load(env, "--save-detailed"); err != nil {
		return nil, err
	}
	var kept []runlog.Record
	for _, r := range run.recs {
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
