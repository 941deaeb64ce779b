package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/stats"
)

// RepeatsTerminal prints a repeated load's run-to-run spread: for each
// figure its mean over the repeats, how far one run's figure moves between
// runs (±, at the level), what each run's own interval claimed, and the
// ratio of the two. Nothing for no figures.
func RepeatsTerminal(w io.Writer, figs []stats.RepeatFigure, level float64) error {
	if len(figs) == 0 {
		return nil
	}
	t := &term{}
	t.header(fmt.Sprintf("Run-to-run spread (%d repeats)", len(figs[0].Values)), '-')
	fmt.Fprintf(&t.b, "± are %s%% half-widths: between runs (t over the repeats' figures) and within a run (the mean of its own intervals)\n", levelText(level))
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmean\tmin\tmax\tbetween ±\twithin ±\tratio")
	for _, f := range figs {
		fmt.Fprintln(tw, strings.Join(repeatCells(f, f2), "\t"))
	}
	_ = tw.Flush()
	if worst := worstRatio(figs); worst != nil && worst.Ratio > 1 {
		fmt.Fprintf(&t.b, "A single run's intervals understate a rerun's difference by up to %s× (%s): quote the between-run ±.\n",
			f2(worst.Ratio), worst.Key)
	}
	_, err := w.Write(t.b.Bytes())
	return err
}

// worstRatio is the figure whose between-run spread most exceeds its
// within-run interval; nil when none has a ratio.
func worstRatio(figs []stats.RepeatFigure) *stats.RepeatFigure {
	var w *stats.RepeatFigure
	for i := range figs {
		if f := &figs[i]; !math.IsNaN(f.Ratio) && (w == nil || f.Ratio > w.Ratio) {
			w = f
		}
	}
	return w
}

// RepeatsJSON renders the spread for the result's "repeats" key: the
// repeat count and, per figure, its values, mean, SD, both half-widths,
// their ratio (null without a within-run interval) and the mean's
// interval.
func RepeatsJSON(figs []stats.RepeatFigure, level float64) map[string]any {
	if len(figs) == 0 {
		return nil
	}
	out := make([]any, len(figs))
	for i, f := range figs {
		var ratio any
		if !math.IsNaN(f.Ratio) {
			ratio = pyFloat(f.Ratio)
		}
		vals := make([]pyFloat, len(f.Values))
		for j, v := range f.Values {
			vals[j] = pyFloat(v)
		}
		out[i] = newObject().set("key", f.Key).set("values", vals).set("mean", pyFloat(f.Mean)).set("sd", pyFloat(f.SD)).
			set("between_half_width", pyFloat(f.Between)).set("within_half_width", pyFloat(f.Within)).set("ratio", ratio).
			set("mean_ci", []pyFloat{pyFloat(f.MeanCI.Lo), pyFloat(f.MeanCI.Hi)})
	}
	return map[string]any{"repeats": len(figs[0].Values), "confidence_level": level, "figures": out,
		"note": "between_half_width is how far one run's figure moves between runs; within_half_width what a run's own interval claimed (" + strconv.FormatFloat(100*level, 'g', 4, 64) + " %)"}
}

// RepeatVerdictKeys puts each repeated figure in doc under its single-run
// key (p99_ttft_ms, request_goodput; a median under p50_… too), its value
// the repeats' mean, so that a --fail-if gate reads a repeated run as it
// reads one run; with intervals, "<key>_ci" beside it is the verdict's
// interval (stats.RepeatFigure.Verdict), the larger of the between- and
// within-run ones.
func RepeatVerdictKeys(doc map[string]any, figs []stats.RepeatFigure, intervals bool) {
	for _, f := range figs {
		keys := []string{f.Key}
		if rest, ok := strings.CutPrefix(f.Key, "median_"); ok {
			keys = append(keys, "p50_"+rest)
		}
		for _, k := range keys {
			doc[k] = pyFloat(f.Mean)
			if intervals {
				v := f.Verdict()
				doc[k+"_ci"] = []pyFloat{pyFloat(v.Lo), pyFloat(v.Hi)}
			}
		}
	}
}

// repeatsTable is the spread as an HTML table; nil for none.
func repeatsTable(figs []stats.RepeatFigure) *table {
	if len(figs) == 0 {
		return nil
	}
	t := &table{Caption: fmt.Sprintf("%d repeats: how far one run's figure moves between runs, beside what its own interval claimed", len(figs[0].Values)),
		Head: []string{"figure", "mean", "min", "max", "between-run ±", "within-run ±", "ratio"}}
	for _, f := range figs {
		var row []cell
		for _, c := range repeatCells(f, fmtMs) {
			row = append(row, cell{Text: c})
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// repeatCells are a figure's row, its numbers formatted by num: key, mean,
// min, max, between ±, within ± ("–" without one), ratio ("–" without
// one).
func repeatCells(f stats.RepeatFigure, num func(float64) string) []string {
	within, ratio := "–", "–"
	if f.Within > 0 {
		within = num(f.Within)
	}
	if !math.IsNaN(f.Ratio) {
		ratio = f2(f.Ratio) + "×"
	}
	return []string{f.Key, num(f.Mean), num(slices.Min(f.Values)), num(slices.Max(f.Values)), num(f.Between), within, ratio}
}
