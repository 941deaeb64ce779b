package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// runHTML is what an --html report of a finished run needs.
type runHTML struct {
	path        string
	recordsPath string
	title       string
	meta        *runlog.Meta
	so          stats.Options
	findings    []report.Finding
	sla         string
	// kneeLevel and peakLevel mark a sweep's knee and goodput peak by
	// record level index; marks says whether to use them.
	marks                bool
	kneeLevel, peakLevel int
}

// write renders the run's HTML report from its records file, which holds
// every request (the run itself kept only compact samples).
func (h runHTML) write(env Env) error {
	if h.recordsPath == "" {
		return usagef("--html needs the records file (drop --records none)")
	}
	f, err := os.Open(h.recordsPath)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	defer f.Close()
	meta, recs, warns, err := runlog.ReadAll(f, h.recordsPath)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	for _, w := range warns {
		fmt.Fprintln(env.Stderr, "goodput: "+w)
	}
	if meta == nil {
		meta = h.meta
	}
	levels := report.SummarizeLevels(meta, recs, h.so)
	in := report.HTMLInput{
		Title: h.title, Meta: meta, Levels: levels, Records: report.Records(recs),
		Findings: h.findings, SLA: h.sla, Generated: env.Now(),
	}
	if h.marks {
		in.Sweep = &report.SweepMarks{Knee: -1, GoodputPeak: -1}
		for i, l := range levels {
			if l.Index == h.kneeLevel {
				in.Sweep.Knee = i
			}
			if l.Index == h.peakLevel {
				in.Sweep.GoodputPeak = i
			}
		}
	}
	if err := writeHTMLFile(h.path, func(w io.Writer) error { return report.HTML(w, in) }); err != nil {
		return fmt.Errorf("--html %s: %w", h.path, err)
	}
	fmt.Fprintf(env.Stderr, "goodput: HTML report in %s\n", h.path)
	return nil
}

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
