package cli

import (
	"fmt"
	"io"
	"os"

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
