package watch

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteResults writes one line per probe (--once): the vendor, model and
// outcome, then the latencies of a successful probe or the error of a
// failed one.
func WriteResults(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s", r.Target, r.Model, r.Outcome)
		rec := r.Record
		switch {
		case rec != nil && rec.OK():
			for _, m := range []struct {
				name string
				get  func() (time.Duration, bool)
			}{{"ttft", rec.TTFT}, {"ttp", rec.TTP}, {"tpot", rec.TPOT}, {"e2e", rec.E2E}} {
				if d, ok := m.get(); ok {
					fmt.Fprintf(tw, "\t%s %s", m.name, shortMs(d))
				} else {
					fmt.Fprintf(tw, "\t%s -", m.name)
				}
			}
		case rec != nil:
			fmt.Fprintf(tw, "\t%s", oneLine(rec.Error))
		case r.Err != nil:
			fmt.Fprintf(tw, "\t%s", oneLine(r.Err.Error()))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteSummary writes one line per target of a watch that ended: its
// probes by outcome (ok first, then by name), the missed ones and the
// burn rates.
func WriteSummary(w io.Writer, sums []TargetSummary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range sums {
		outcomes := make([]string, 0, len(s.Outcomes))
		for k := range s.Outcomes {
			outcomes = append(outcomes, k)
		}
		slices.SortFunc(outcomes, func(a, b string) int {
			switch {
			case a == b:
				return 0
			case a == OutcomeOK:
				return -1
			case b == OutcomeOK:
				return 1
			}
			return strings.Compare(a, b)
		})
		var parts []string
		for _, k := range outcomes {
			parts = append(parts, fmt.Sprintf("%d %s", s.Outcomes[k], k))
		}
		burn := ""
		for _, win := range Windows {
			if v, ok := s.Burn[win.Label]; ok {
				burn += fmt.Sprintf("\tburn %s %.2f", win.Label, v)
			}
		}
		probes := fmt.Sprintf("%d probes", s.Probes)
		if s.Probes == 1 {
			probes = "1 probe"
		}
		if len(parts) > 0 {
			probes += ": " + strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d missed%s\n", s.Target, s.Model, probes, s.Missed, burn)
	}
	return tw.Flush()
}

// shortMs formats a latency in ms with three significant digits.
func shortMs(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.2fms", ms)
}

// oneLine is an error message on one line, cut to a readable length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}

// NotOK lists the probes whose outcome was not ok, as "TARGET: OUTCOME".
func NotOK(results []Result) []string {
	var failed []string
	for _, r := range results {
		if r.Outcome != OutcomeOK {
			failed = append(failed, r.Target+": "+r.Outcome)
		}
	}
	return failed
}

// Intervals says how often each target of cfg is probed: "NAME every
// INTERVAL", comma-separated.
func Intervals(cfg *Config) string {
	every := make([]string, 0, len(cfg.Targets))
	for _, t := range cfg.Targets {
		every = append(every, fmt.Sprintf("%s every %v", t.Name, t.Interval))
	}
	return strings.Join(every, ", ")
}
