package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/review"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/stats"
)

// summaryFlags say how records are summarised and priced, with bench's
// names and meanings.
type summaryFlags struct{ review.SummarySpec }

// sessionSLO is spec, bench's --session-goodput (bound to its session
// flags, not to SessionGoodput), over --slo-preset's session constraints.
func (s *summaryFlags) sessionSLO(spec string) (stats.SessionSLO, error) {
	c := s.Spec
	c.SessionGoodput = spec
	slo, err := c.SessionSLO()
	if se := (*setting.Error)(nil); errors.As(err, &se) && se.Field == "SessionGoodput" {
		return slo, usagef("%s", se.Render(func(string) string { return "--session-goodput" }))
	}
	return slo, err
}

// registerSummary adds the summary flags, with bench's names, meanings
// and defaults.
func registerSummary(fs *pflag.FlagSet, s *review.SummarySpec) {
	fs.StringArrayVar(&s.Goodput, "goodput", nil, "SLO for goodput, e.g. --goodput ttft:2000 tpot:50 (ms; ttft, tpot, e2el, ttp)")
	fs.StringVar(&s.SLOPreset, "slo-preset", "", "a product's SLO ("+strings.Join(stats.PresetNames(), ", ")+"; goodput slo list); --goodput and --session-goodput override it constraint by constraint")
	fs.Float64Var(&s.GPUCostPerHour, "gpu-cost-per-hour", 0, "what one GPU costs an hour (any currency): adds the cost of 1M output tokens and, with scraped GPU power, the energy per token")
	fs.IntVar(&s.NumGPUs, "num-gpus", 0, "GPUs serving the run, for per-GPU goodput and cost (default: the simulated engine's tensor parallelism, else 1)")
	fs.StringVar(&s.PercentileMetrics, "percentile-metrics", defaultPercentileMetrics, "metrics to report percentiles for (response: E2E from the intended send, the backlog included)")
	fs.StringVar(&s.MetricPercentiles, "metric-percentiles", "50,90,95,99", "percentiles to report")
	fs.StringVar(&s.Buckets, "buckets", "1024,8192", "input-length bucket edges in tokens (none for no buckets)")
	fs.Float64Var(&s.Confidence, "confidence", stats.DefaultConfidence, "confidence level of the intervals on every mean, percentile, throughput, goodput and attainment, in (0, 1); 0 for none")
}

// resolve makes a relative path relative to env.Dir.
func resolve(env Env, p string) string { return files(env).Path(p) }

// defaultPercentileMetrics are the metrics summarised unless
// --percentile-metrics says otherwise.
const defaultPercentileMetrics = "ttft,tpot,itl,e2el,ttp,response"

func newReportCmd(env Env) *cobra.Command {
	var o review.ReportSpec
	cmd := &cobra.Command{
		Use:     "report RECORDS.jsonl...",
		Short:   "Re-summarise saved records; write HTML, CSV, JSON or per-request rows",
		Long:    helpText("report"),
		Example: helpText("report.examples"),
		Args:    atLeast(1, "give one or more records files (or result JSONs) to report on"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files, o.SLOWords = files(env).SplitArgs(args, len(o.Summary.Goodput) > 0)
			term := run.TerminalOptions{TermOptions: termOptions(env), Headed: true}
			return savedRunError(cmd.Flags(), &o, o.Read, review.Report(&o, flagfield.Given(cmd.Flags(), &o), term, files(env)))
		},
	}
	fs := cmd.Flags()
	registerSummary(fs, &o.Summary)
	fs.BoolVar(&o.Force, "force", false, "merge records files even when they come from incompatible runs")
	readFlags(fs, &o.Read)
	fs.StringVar(&o.PerRequest, "per-request", "", "print one row per request instead of the summary: csv or jsonl")
	fs.StringVar(&o.CSVDir, "csv", "", "write summary.csv, metrics.csv, buckets.csv and requests.csv (and, with sessions, turns.csv and sessions.csv) into this directory")
	fs.StringVar(&o.HTML, "html", "", "write a self-contained HTML report to this file")
	fs.StringVar(&o.JSON, "json", "", "write the result JSON (vLLM's keys) to this file; for several levels one object holding each level's (\"levels\") and, for a sweep, its verdict (\"sweep\")")
	fs.StringVar(&o.Title, "title", "", "title of the HTML report")
	registerReadingSpeed(fs, &o.ReadingSpeedMs)
	registerSessionGoodput(fs, &o.Summary.SessionGoodput)
	return cmd
}

// readFlags registers the flags that say how records files are read,
// shared by report and compare.
func readFlags(fs *pflag.FlagSet, o *runlog.ReadOptions) {
	fs.BoolVar(&o.SkipBadLines, "skip-bad-lines", false, "skip (and name in a warning) every records line that does not parse or holds a value out of range, instead of stopping at the first")
	fs.BoolVar(&o.Merge, "merge", false, "accept a records file holding several runs (files concatenated) and merge its runs, each on its own clock")
}

// savedRunError is a saved run's error as the user reads it: a bad line
// says how to skip it; a run of whole answers names the streaming metric
// asked of it.
func savedRunError(fs *pflag.FlagSet, root any, read runlog.ReadOptions, err error) error {
	if bad := (*runlog.BadLineError)(nil); errors.As(err, &bad) && !read.SkipBadLines {
		return fmt.Errorf("%w (--skip-bad-lines skips such lines, naming each in a warning)", err)
	}
	return settingError(fs, root, wholeAnswersError(err, "a run of whole answers"))
}

// files are the user's files, relative to env.Dir, and the streams.
func files(env Env) review.Files { return review.DirFiles(env.Dir, env.Stdout, env.Stderr, env.Now) }

func newCompareCmd(env Env) *cobra.Command {
	var o review.CompareSpec
	cmd := &cobra.Command{
		Use:     "compare A B",
		Short:   "Judge run B against the baseline run A: deltas with bootstrap confidence intervals",
		Long:    helpText("compare"),
		Example: helpText("compare.examples"),
		Args:    atLeast(2, "give two runs to compare, A then B: records files or result JSONs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.SetArgs(args, files(env))
			if err == nil {
				err = review.Compare(&o, files(env))
			}
			return savedRunError(cmd.Flags(), &o, o.Read, err)
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

func newSimFitCmd(env Env) *cobra.Command {
	o := &review.FitSpec{Engine: sim.DefaultConfig()}
	cmd := &cobra.Command{
		Use:     "fit RECORDS...",
		Short:   "Fit a GPU profile's sustained figures and fixed costs to bench records of a real server",
		Long:    helpText("sim-fit"),
		Example: helpText("sim-fit.examples"),
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files = args
			err := review.Fit(o, files(env))
			if we := (*setting.OutputError)(nil); err == nil || errors.As(err, &we) {
				return settingError(cmd.Flags(), o, err)
			}
			return usageError{savedRunError(cmd.Flags(), o, runlog.ReadOptions{}, err)} // bad input too
		},
	}
	fs := cmd.Flags()
	group(fs, "Engine flags (the measured deployment)", func(fs *pflag.FlagSet) {
		fs.StringVar(&o.Engine.Model, "model", o.Engine.Model, "the model served: a built-in name, a HF id, a .yaml profile or a Hugging Face config.json path")
		registerEngineFlags(fs, &o.Engine)
	})
	fs.StringVarP(&o.Output, "output", "o", "", "write the fitted GPU profile to this .yaml file (default: print only)")
	fs.DurationVar(&o.Network, "network-latency", 0, "share of TTFT spent on the network and HTTP, taken off where the server reported no timing of its own")
	return cmd
}

func newSLOCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "slo",
		Short:   "List the SLO presets by product (chat, voice, code-completion, batch, agent)",
		Long:    helpText("slo"),
		Example: helpText("slo.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q (want list or show)", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var listJSON, sources, showJSON bool
	list := &cobra.Command{Use: "list", Short: "Print every SLO preset: its constraints in --goodput and --session-goodput syntax", Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return report.Presets(env.Stdout, listJSON, sources) }}
	list.Flags().BoolVar(&listJSON, "json", false, "print the presets as a JSON array, sources included")
	list.Flags().BoolVar(&sources, "sources", false, "print each preset's sources and unsourced defaults under the table")
	show := &cobra.Command{Use: "show NAME", Short: "Print one SLO preset with its sources", ValidArgs: stats.PresetNames(),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("give one preset name (%s); got %d argument(s)", strings.Join(stats.PresetNames(), ", "), len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			err := report.Preset(env.Stdout, args[0], showJSON)
			if errors.Is(err, stats.ErrUnknownPreset) {
				return usageError{err}
			}
			return err
		}}
	show.Flags().BoolVar(&showJSON, "json", false, "print the preset as a JSON object")
	cmd.AddCommand(list, show)
	return cmd
}
