package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/sweep"
)

// SweepOptions is everything "goodput sweep" needs: bench's flag groups
// plus the sweep's own.
type SweepOptions struct {
	BenchOptions
	sweep.Spec
	Sim bool
	runspec.VerdictSpec
	LevelReports bool
	gate         gate.Gate
	// cluster puts --sim's engine behind a router as several replicas
	// (--replicas, --cluster, ...), as in "goodput sim".
	cluster clusterFlags
	// publish is --sim's publish path after the engine.
	publish publishFlags
}

func newSweepCmd(env Env) *cobra.Command { return sweepCommand(env, &SweepOptions{}) }

// sweepCommand is sweep's command filling o (see benchCommand).
func sweepCommand(env Env, o *SweepOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sweep",
		Short:   "Run bench (or the simulator) at a series of loads: the knee, the goodput peak, the max load within SLO",
		Long:    helpText("sweep"),
		Example: helpText("sweep.examples"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			res, err := o.Run(cmd.Context(), env)
			if res == nil {
				return err
			}
			out := outputs{out: &o.out, gate: o.gate, levelReports: o.LevelReports, interrupted: func(res *run.Result) string {
				return fmt.Sprintf("after %d levels; the curve above covers them", len(res.Levels))
			}}
			return settingError(o.fs, o, out.finish(env, res, err))
		},
	}
	fs := cmd.Flags()
	o.fs = fs
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
		o.publish.register(fs)
		o.cluster.register(fs)
	})
	groupedUsage(cmd, "Sweep flags", "Target flags", "Load flags", "Workload flags", "Output flags", "Simulator flags (--sim, or no --base-url)")
	fs.Lookup("request-rate").Usage = "arrival rates to sweep, requests/s, e.g. 1,2,4,8 (or one rate with --concurrency)"
	fs.StringVar(&o.Concurrency, "concurrency", "", "concurrencies to sweep, e.g. 1,8,16,32,64")
	fs.StringVar(&o.Pareto, "pareto", "", "with --concurrency: also sweep these input:output length pairs (tokens), e.g. 1024:128,4096:512, and judge the levels' Pareto frontier of goodput per GPU against tokens/s per user")
	fs.Float64Var(&o.TargetRate, "target-rate", 0, "target rate in requests/s that --levels multiplies")
	fs.StringVar(&o.Levels, "levels", "", "multiples of --target-rate, e.g. 0.5x,1x,1.5x,2x (default "+sweep.DefaultMultiples+")")
	fs.BoolVar(&o.Sim, "sim", false, "run every level on the simulated engine in virtual time (engine flags: --sim-model, --gpu, ...)")
	fs.Float64Var(&o.KneeK, "knee-k", sweep.DefaultKneeK, "knee: a level's P99 TTFT slope must exceed this multiple of the low-load slope")
	fs.BoolVar(&o.Search, "search", false, "bisect between the lowest and highest level for the highest load meeting --slo-attainment")
	fs.Float64Var(&o.SLOAttainment, "slo-attainment", sweep.DefaultAttainment, "share of requests that must meet the --goodput SLO for a load to be within SLO (0-1)")
	fs.Float64Var(&o.MaxMedianQueueMs, "max-median-queue-ms", 0, "also cap the median queueing delay within SLO, ms (Sarathi-Serve's capacity; 0: none)")
	fs.Float64Var(&o.Precision, "precision", 0, "--search stops when the bracket is this narrow, in the axis' unit (0: 1/32 of the range)")
	fs.Float64Var(&o.MaxErrorRate, "max-error-rate", sweep.DefaultMaxErrorRate, "a level whose failed share exceeds this is saturated (0-1)")
	fs.BoolVar(&o.SaturationStop, "saturation-stop", true, "stop a saturated level early and end the sweep there")
	fs.Float64Var(&o.ReadingSpeedMs, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
	fs.StringArrayVar(&o.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'sweep.goodput_peak.request_goodput<10' (repeatable; dotted keys reach nested values); exit 4 when the figure's interval straddles the bound")
	fs.BoolVar(&o.LevelReports, "level-reports", false, "print the full bench report of every level")
	return cmd
}

// Run runs the sweep the options describe and returns what it found; the
// curve's lines print as levels finish (the command's hook; tests call it
// directly).
func (o *SweepOptions) Run(ctx context.Context, env Env) (*run.Result, error) {
	res, err := o.run(ctx, env)
	return res, settingError(o.fs, o, err)
}

func (o *SweepOptions) run(ctx context.Context, env Env) (*run.Result, error) {
	if d := o.work.o.DatasetName; runspec.IsSessionDataset(d) {
		return nil, usagef("--dataset-name %s: sessions run with goodput bench (over HTTP, the embedded simulator included), not yet in sweeps", d)
	}
	base, err := o.load.levelWith("inf")
	if err != nil {
		return nil, err
	}
	pl, err := o.Plan(base, o.load.RequestRate, flagfield.Given(o.fs, o))
	if err != nil {
		return nil, err
	}
	so, err := o.out.Options(o.args)
	if err != nil {
		return nil, err
	}
	if o.gate, err = o.CheckSweep(so, &o.out.OutputSpec, o.Search); err != nil {
		return nil, err
	}
	if len(o.out.Goodput) == 0 && len(o.args) == 0 {
		o.out.Goodput = []string{sweep.DefaultSLO}
		fmt.Fprintf(env.Stderr, "goodput: no --goodput: ranking goodput by the SLO %s\n", sweep.DefaultSLO)
	}
	if o.out.ResultFilename == "" {
		o.out.ResultFilename = fmt.Sprintf("sweep-%s-%s.json", pl.Axis, env.Now().Format("20060102-150405"))
	}
	var cfg run.Config
	if o.publish.Policy.Active() && !o.Sim {
		return nil, usagef("--publish and --moderation-delay simulate the publish path in virtual time: add --sim")
	}
	if o.Sim {
		if cfg, err = o.config(env, "sweep", "inf", false); err != nil {
			return nil, err
		}
		// The engine's state, sampled as a scraper of its /metrics would.
		if cfg.Scrape, err = run.ScrapeFor(&o.target.Spec); err != nil {
			return nil, err
		}
		cfg.Engine, cfg.IgnoreEOS, cfg.Virtual = o.sim.Engine, o.target.IgnoreEOS, true
		cfg.Publish = o.publish.Policy
		// --timeout limits a whole request in virtual time too, as sim's
		// does (its default hour guards a real server's trickle, not this).
		if o.fs.Changed("timeout") {
			cfg.ClientTimeout = o.target.Timeout
		}
		if o.cluster.Ratios != "" {
			return nil, usagef("--pd-ratios compares splits at one load: run it with goodput sim (a sweep takes one split, --prefill-replicas and --decode-replicas)")
		}
		if cfg.Cluster, err = o.cluster.config(o.sim.Engine); err != nil {
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
		if err := o.cluster.onlySim(); err != nil {
			return nil, err
		}
	}
	cfg.ReadingSpeedMs = o.ReadingSpeedMs
	cfg.Sweep = run.SweepOf(pl)
	cfg.Hooks.Sweep, cfg.Hooks.Point = cfg.Sweep.Lines(env.Stdout)
	res, err := run.Run(ctx, cfg)
	return res, err
}
