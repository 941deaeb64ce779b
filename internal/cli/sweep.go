package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sweep"
)

// defaultSweepSLO is the SLO a sweep ranks goodput by when --goodput is
// not given: a goodput peak needs one.
const defaultSweepSLO = "ttft:2000 tpot:50"

// SweepOptions is everything "goodput sweep" needs: bench's flag groups
// plus the sweep's own.
type SweepOptions struct {
	BenchOptions
	Concurrency      string
	TargetRate       float64
	Levels           string
	Sim              bool
	KneeK            float64
	Search           bool
	SLOAttainment    float64
	MaxMedianQueueMs float64
	Precision        float64
	MaxErrorRate     float64
	SaturationStop   bool
	ReadingSpeedMs   float64
	FailIf           []string
	LevelReports     bool
	// Pareto is --pareto: input:output length pairs to cross with the
	// concurrencies.
	Pareto string
	gate   gate.Gate
	// cluster puts --sim's engine behind a router as several replicas
	// (--replicas, --cluster, ...), as in "goodput sim".
	cluster clusterFlags
}

func newSweepCmd(env Env) *cobra.Command { return sweepCommand(env, &SweepOptions{}) }

// sweepCommand is sweep's command filling o (see benchCommand).
func sweepCommand(env Env, o *SweepOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sweep",
		Short:   "Run bench (or the simulator) at a series of loads: the knee, the goodput peak, the max load within SLO",
		Long:    helpText("sweep"),
		Example: helpText("sweep.examples"),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			o.load.numSet = cmd.Flags().Changed("num-prompts")
			if cmd.Flags().Changed("max-concurrency") && o.Concurrency != "" {
				return usagef("--max-concurrency and --concurrency: give one (--concurrency is the swept list)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd.Context(), env, o) },
	}
	fs := cmd.Flags()
	group(fs, "Target flags", func(fs *pflag.FlagSet) {
		o.target.register(fs)
		o.target.registerScrape(fs)
	})
	group(fs, "Load flags", func(fs *pflag.FlagSet) {
		o.load.register(fs)
		o.load.registerShard(fs)
		o.load.registerRetry(fs)
	})
	group(fs, "Workload flags", o.work.register)
	group(fs, "Output flags", o.out.register)
	group(fs, "Simulator flags (--sim, or no --base-url)", func(fs *pflag.FlagSet) {
		o.sim.register(fs)
		o.cluster.register(fs)
	})
	groupedUsage(cmd, "Sweep flags", "Target flags", "Load flags", "Workload flags", "Output flags", "Simulator flags (--sim, or no --base-url)")
	fs.Lookup("request-rate").Usage = "arrival rates to sweep, requests/s, e.g. 1,2,4,8 (or one rate with --concurrency)"
	fs.StringVar(&o.Concurrency, "concurrency", "", "concurrencies to sweep, e.g. 1,8,16,32,64")
	fs.StringVar(&o.Pareto, "pareto", "", "with --concurrency: also sweep these input:output length pairs (tokens), e.g. 1024:128,4096:512, and judge the levels' Pareto frontier of goodput per GPU against tokens/s per user")
	fs.Float64Var(&o.TargetRate, "target-rate", 0, "target rate in requests/s that --levels multiplies")
	fs.StringVar(&o.Levels, "levels", "", "multiples of --target-rate, e.g. 0.5x,1x,1.5x,2x (default 0.25x,0.5x,0.75x,1x,1.25x,1.5x,2x)")
	fs.BoolVar(&o.Sim, "sim", false, "run every level on the simulated engine in virtual time (engine flags: --sim-model, --gpu, ...)")
	fs.Float64Var(&o.KneeK, "knee-k", sweep.DefaultKneeK, "knee: a level's P99 TTFT slope must exceed this multiple of the low-load slope")
	fs.BoolVar(&o.Search, "search", false, "bisect between the lowest and highest level for the highest load meeting --slo-attainment")
	fs.Float64Var(&o.SLOAttainment, "slo-attainment", sweep.DefaultAttainment, "share of requests that must meet the --goodput SLO for a load to be within SLO (0-1)")
	fs.Float64Var(&o.MaxMedianQueueMs, "max-median-queue-ms", 0, "also cap the median queueing delay within SLO, ms (Sarathi-Serve's capacity; 0: none)")
	fs.Float64Var(&o.Precision, "precision", 0, "--search stops when the bracket is this narrow, in the axis' unit (0: 1/32 of the range)")
	fs.Float64Var(&o.MaxErrorRate, "max-error-rate", sweep.DefaultMaxErrorRate, "a level whose failed share exceeds this is saturated (0-1)")
	fs.BoolVar(&o.SaturationStop, "saturation-stop", true, "stop a saturated level early and end the sweep there")
	fs.Float64Var(&o.ReadingSpeedMs, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
	fs.StringArrayVar(&o.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'sweep.goodput_peak.request_goodput<10' (repeatable; dotted keys reach nested values)")
	fs.BoolVar(&o.LevelReports, "level-reports", false, "print the full bench report of every level")
	return cmd
}

// sweepPlan is what to sweep, from the flags.
type sweepPlan struct {
	axis   sweep.Axis
	levels []runlog.Level
	// auto: no level flags were given; the levels are fractions of the
	// capacity a probe measures first (run.AutoFractions).
	auto bool
}

// paretoLevels crosses the concurrency levels with --pareto's length
// pairs, pair by pair.
func paretoLevels(spec string, levels []runlog.Level) ([]runlog.Level, error) {
	var out []runlog.Level
	for _, pair := range strings.Split(spec, ",") {
		in, outLen, ok := strings.Cut(strings.TrimSpace(pair), ":")
		i, err1 := strconv.Atoi(in)
		o, err2 := strconv.Atoi(outLen)
		if !ok || err1 != nil || err2 != nil || i < 1 || o < 1 || i > 1<<24 || o > 1<<24 {
			return nil, usagef("--pareto %q: want input:output token pairs, e.g. 1024:128,4096:512", pair)
		}
		for _, l := range levels {
			l.InputLen, l.OutputLen = i, o
			l.Label = fmt.Sprintf("%s in=%d out=%d", l.Label, i, o)
			out = append(out, l)
		}
	}
	return out, nil
}

// plan reads the level flags.
func (o *SweepOptions) plan(base runlog.Level) (sweepPlan, error) {
	rateText := strings.TrimSpace(o.load.RequestRate)
	rateSet := rateText != "" && !strings.EqualFold(rateText, "inf")
	switch {
	case o.Concurrency != "":
		cs, err := sweep.ParseList(o.Concurrency)
		if err != nil {
			return sweepPlan{}, usagef("--concurrency: %v", err)
		}
		for _, c := range cs {
			if c != float64(int(c)) || c > 1<<20 {
				return sweepPlan{}, usagef("--concurrency %v: want whole numbers of requests", c)
			}
		}
		if o.TargetRate > 0 {
			return sweepPlan{}, usagef("--target-rate sweeps rates: not with --concurrency")
		}
		rate, err := o.load.rate()
		if err != nil {
			return sweepPlan{}, usagef("--request-rate %q: with --concurrency give one rate (or inf)", o.load.RequestRate)
		}
		levels := sweep.Levels(sweep.AxisConcurrency, cs, atRate(base, rate))
		if o.Pareto != "" {
			if levels, err = paretoLevels(o.Pareto, levels); err != nil {
				return sweepPlan{}, err
			}
		}
		return sweepPlan{axis: sweep.AxisConcurrency, levels: levels}, nil
	case o.TargetRate > 0:
		if rateSet {
			return sweepPlan{}, usagef("--target-rate and --request-rate: give one")
		}
		spec := o.Levels
		if spec == "" {
			spec = "0.25x,0.5x,0.75x,1x,1.25x,1.5x,2x"
		}
		ms, err := sweep.ParseMultiples(spec)
		if err != nil {
			return sweepPlan{}, usagef("--levels: %v", err)
		}
		rates := make([]float64, len(ms))
		for i, m := range ms {
			rates[i] = m * o.TargetRate
		}
		return sweepPlan{axis: sweep.AxisRate, levels: sweep.Levels(sweep.AxisRate, rates, base)}, nil
	case o.Levels != "":
		return sweepPlan{}, usagef("--levels needs --target-rate")
	case rateSet:
		rs, err := sweep.ParseList(rateText)
		if err != nil {
			return sweepPlan{}, usagef("--request-rate: %v", err)
		}
		return sweepPlan{axis: sweep.AxisRate, levels: sweep.Levels(sweep.AxisRate, rs, base)}, nil
	}
	return sweepPlan{axis: sweep.AxisRate, auto: true}, nil
}

// atRate is l at the request rate r.
func atRate(l runlog.Level, r float64) runlog.Level {
	l.RequestRate = r
	return l
}

// Run runs the sweep the options describe and returns what it found; the
// curve's lines print as levels finish (the command's hook; tests call it
// directly).
func (o *SweepOptions) Run(ctx context.Context, env Env) (*run.Result, error) {
	if err := notSessions(o.work.o.DatasetName, "in sweeps"); err != nil {
		return nil, err
	}
	base, err := o.load.levelWith("inf")
	if err != nil {
		return nil, err
	}
	pl, err := o.plan(base)
	if err != nil {
		return nil, err
	}
	g, err := gate.Parse(o.FailIf)
	if err != nil {
		return nil, flagError(err, "")
	}
	if err := validateSweepGate(g, o); err != nil {
		return nil, err
	}
	if err := o.checkSweepFlags(); err != nil {
		return nil, err
	}
	o.gate = g
	if len(o.out.Goodput) == 0 && len(o.args) == 0 {
		o.out.Goodput = []string{defaultSweepSLO}
		fmt.Fprintf(env.Stderr, "goodput: no --goodput: ranking goodput by the SLO %s\n", defaultSweepSLO)
	}
	if o.out.ResultFilename == "" {
		o.out.ResultFilename = fmt.Sprintf("sweep-%s-%s.json", pl.axis, env.Now().Format("20060102-150405"))
	}
	var cfg run.Config
	if o.Sim {
		if cfg, err = virtualConfig(env, "sweep", &o.load, "inf", &o.work, &o.out, o.args); err != nil {
			return nil, err
		}
		// The engine's state, sampled as a scraper of its /metrics would.
		if cfg.Scrape, err = o.target.scrapeConfig(); err != nil {
			return nil, err
		}
	} else {
		rates := o.load.RequestRate
		o.load.RequestRate = "inf" // the list is the plan's; each level sets its own
		cfg, err = o.runConfig(env, "sweep")
		o.load.RequestRate = rates
		if err != nil {
			return nil, err
		}
	}
	if o.Sim {
		cfg.Engine, cfg.IgnoreEOS = o.sim.cfg, o.target.IgnoreEOS
		if o.cluster.pd.ratios != "" {
			return nil, usagef("--pd-ratios compares splits at one load: run it with goodput sim (a sweep takes one split, --prefill-replicas and --decode-replicas)")
		}
		if cfg.Cluster, err = o.cluster.config(o.sim.cfg); err != nil {
			return nil, err
		}
	} else if err := o.cluster.onlySim(); err != nil {
		return nil, err
	}
	cfg.ReadingSpeedMs = o.ReadingSpeedMs
	sat := sweep.Saturation{MaxErrorRate: o.MaxErrorRate, Off: !o.SaturationStop}
	crit := sweep.Criteria{Attainment: o.SLOAttainment, MaxMedianQueueMs: o.MaxMedianQueueMs}
	if o.Pareto != "" {
		switch {
		case o.Concurrency == "":
			return nil, usagef("--pareto crosses --concurrency levels with length pairs: give --concurrency")
		case o.Search:
			return nil, usagef("--pareto and --search: a frontier has no one load to bisect for; give one")
		}
		sat.Off = true // a saturated pair must not end the other pairs' levels
	}
	cfg.Sweep = &run.Sweep{Axis: pl.axis, Levels: pl.levels, KneeK: o.KneeK, Criteria: crit, Saturation: sat,
		Search: o.Search, Precision: o.Precision, Pareto: o.Pareto != ""}
	if pl.auto {
		cfg.Sweep.Fractions = run.AutoFractions
		fmt.Fprintf(env.Stdout, "goodput sweep: no levels given: measuring capacity first, then sweeping %s of it\n", fractionsText(run.AutoFractions))
	}
	cfg.Hooks.Sweep = func(p run.Plan) {
		mode := "wall clock"
		if p.Virtual {
			mode = "virtual time"
		}
		if pr := p.Probe; pr != nil {
			fmt.Fprintf(env.Stdout, "goodput sweep: capacity probe: %d requests completed in %.1f s, %.3g requests/s\n",
				pr.Completed, pr.DurationS, pr.RequestThroughput)
		}
		if p.Search {
			fmt.Fprintf(env.Stdout, "goodput sweep: bisecting %s (%s) in [%g, %g] for SLO attainment ≥ %g %% (%s)\n",
				p.Axis, p.Axis.Unit(), p.Lo, p.Hi, 100*o.SLOAttainment, mode)
			return
		}
		fmt.Fprintf(env.Stdout, "goodput sweep: %d levels of %s (%s), %s\n", len(p.Levels), p.Axis, p.Axis.Unit(), mode)
	}
	cfg.Hooks.Point = func(p sweep.Point, saturated string, meets *run.Meets) {
		line := report.SweepLevelLine(p, saturated)
		if meets != nil {
			verdict := "within SLO"
			if !meets.OK {
				verdict = "misses: " + meets.Why
			}
			line += " | " + verdict
		}
		fmt.Fprintln(env.Stdout, line)
	}
	res, err := run.Run(ctx, cfg)
	return res, runError(clusterFlagError(err), &o.target, "--sim-model", o.work.group(), o.load.group())
}

// runSweep runs the sweep (or the search) and reports it.
func runSweep(ctx context.Context, env Env, o *SweepOptions) error {
	res, err := o.Run(ctx, env)
	if res == nil {
		return err
	}
	out := outputs{out: &o.out, gate: o.gate, levelReports: o.LevelReports, interrupted: func(res *run.Result) string {
		return fmt.Sprintf("after %d levels; the curve above covers them", len(res.Levels))
	}}
	return out.finish(env, res, err)
}

// checkSweepFlags validates the sweep's own numeric flags, before any
// request is sent.
func (o *SweepOptions) checkSweepFlags() error {
	switch {
	case o.SLOAttainment <= 0 || o.SLOAttainment > 1:
		return usagef("--slo-attainment %v: want a share in (0, 1]", o.SLOAttainment)
	case o.KneeK <= 0:
		return usagef("--knee-k %v: want > 0", o.KneeK)
	case o.Precision < 0 || o.MaxMedianQueueMs < 0:
		return usagef("--precision and --max-median-queue-ms: want ≥ 0")
	case o.MaxErrorRate <= 0 || o.MaxErrorRate > 1:
		return usagef("--max-error-rate %v: want a share in (0, 1]", o.MaxErrorRate)
	}
	return nil
}

// fractionsText writes shares as "20 %, 40 %, …, 110 %".
func fractionsText(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = strconv.FormatFloat(math.Round(1000*f)/10, 'f', -1, 64) + " %"
	}
	return strings.Join(parts, ", ")
}
