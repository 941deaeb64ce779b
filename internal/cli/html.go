package cli

import (
	"fmt"
	"io"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// runHTML is what an --html report of a finished run needs.
type runHTML struct {
	path     string
	run      *savedRun
	title    string
	meta     *runlog.Meta
	so       stats.Options
	findings []report.Finding
	sla      string
	// kneeLevel and peakLevel mark a sweep's knee and goodput peak by
	// record level index; marks says whether to use them.
	marks                bool
	kneeLevel, peakLevel int
}

// write renders the run's HTML report from its saved records, which hold
// every request (the run itself kept only compact samples).
func (h runHTML) write(env Env) error {
	if err := h.run.load(env, "--html"); err != nil {
		return err
	}
	meta, recs := h.run.meta, h.run.recs
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
	if err := writeHTMLFile(h.path, func(w io.Writer) error { return report.HTML(env.secrets.Writer(w), in) }); err != nil {
		return fmt.Errorf("--html %s: %w", h.path, err)
	}
	fmt.Fprintf(env.Stderr, "goodput: HTML report in %s\n", h.path)
	return nil
}
