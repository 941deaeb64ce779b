package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

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
// send order, times in seconds as vLLM writes them: input_lens,
// output_lens, ttfts, itls, latencies (E2E, 0 for a failed request),
// start_times (the send, from the run's start where vLLM's are
// perf_counter readings), queue_times (send − intended send: the client's
// own wait), generated_texts (what the records kept, "" where nothing) and
// errors; plus rtfx, vLLM's audio real-time factor (seconds of input audio
// per second of run), 0.0 for text. A whole answer (--no-stream) has ttft
// 0 and no itls: its record measures neither.
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
	n := len(kept)
	in, out := make([]int, n), make([]int, n)
	ttfts, lat, starts, queues := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	texts, errs := make([]string, n), make([]string, n)
	itls := make([][]float64, n)
	var gaps []time.Duration
	for i := range kept {
		r := &kept[i]
		in[i], errs[i], texts[i] = r.PromptTokens, r.Error, r.GeneratedText
		starts[i] = time.Duration(r.Sent).Seconds()
		queues[i] = r.SendLag().Seconds()
		if r.OK() {
			out[i] = r.OutputTokens()
			if d, ok := r.E2E(); ok {
				lat[i] = d.Seconds()
			}
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
	return map[string]any{
		"input_lens": in, "output_lens": out, "ttfts": ttfts, "itls": itls, "latencies": lat,
		"start_times": starts, "queue_times": queues, "generated_texts": texts, "errors": errs,
		// A float, as vLLM writes it (0.0, not 0).
		"rtfx": json.RawMessage("0.0"),
	}, nil
}

// appendResult appends a result to path as vLLM's --append-result does:
// one JSON line, after a newline when the file already has content.
func appendResult(env Env, path string, b []byte) error {
	b = env.secrets.Bytes(b)
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		_, err = f.Write([]byte("\n"))
		if err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(line.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
