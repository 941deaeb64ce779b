package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/stats"
)

func newCompareCmd(env Env) *cobra.Command {
	var o run.CompareSpec
	cmd := &cobra.Command{
		Use:     "compare A B",
		Short:   "Judge run B against the baseline run A: deltas with bootstrap confidence intervals",
		Long:    helpText("compare"),
		Example: helpText("compare.examples"),
		Args:    atLeast(2, "give two runs to compare, A then B: records files or result JSONs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			names, slo := splitSLOArgs(env, args, len(o.Goodput) > 0)
			if len(names) != 2 {
				return usagef("compare takes two files, A and B; got %d", len(names))
			}
			o.A, o.B = names[0], names[1]
			o.Goodput = append(o.Goodput, slo...)
			return savedRunError(cmd.Flags(), &o, o.Read, run.Compare(&o, files(env)))
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Goodput, "goodput", nil, "SLO judging both runs' goodput, e.g. --goodput ttft:2000 tpot:50 (ms)")
	fs.StringVar(&o.SLOPreset, "slo-preset", "", "a product's SLO for both runs ("+strings.Join(stats.PresetNames(), ", ")+"); --goodput and --session-goodput override it constraint by constraint")
	fs.StringVar(&o.SessionGoodput, "session-goodput", "", "session SLO judging both runs' sessions, e.g. 'ttp:2000 turn_ttft_p95:800' (default: the one both runs stored)")
	fs.StringVar(&o.MetricPercentiles, "metric-percentiles", "50,90,99", "percentiles to compare")
	fs.StringVar(&o.PercentileMetrics, "percentile-metrics", "ttft,ttp,tpot,e2el,response", "metrics to compare (per-request ones: ttft, ttp, tpot, e2el, response)")
	fs.IntVar(&o.Resamples, "resamples", compare.DefaultResamples, "bootstrap resamples")
	fs.Float64Var(&o.Confidence, "confidence", compare.DefaultConfidence, "confidence level of the intervals, in (0, 1)")
	fs.Uint64Var(&o.Seed, "seed", compare.DefaultSeed, "bootstrap seed (the same seed gives the same intervals)")
	fs.Float64Var(&o.ReadingSpeedMs, "reading-speed-ms", float64(compare.DefaultReadingSpeed)/1e6, "time a user takes to read one token, ms: a TPOT below it is invisible to a reader")
	fs.StringVar(&o.HTML, "html", "", "write a self-contained side-by-side HTML report to this file")
	readFlags(fs, &o.Read)
	fs.BoolVar(&o.Force, "force", false, "with --merge, merge a file's runs even when they come from incompatible runs")
	return cmd
}
