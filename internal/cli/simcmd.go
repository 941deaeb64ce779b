package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// SimOptions configures "goodput sim": the engine, its own settings
// (runspec.VirtualSpec), plus bench's workload, load and output flags.
type SimOptions struct {
	Engine sim.Config
	runspec.VirtualSpec
	runFlags
	cluster clusterFlags
	gateway gatewayFlags
	publish publishFlags
}

func newSimCmd(env Env) *cobra.Command {
	return simCommand(env, &SimOptions{Engine: sim.DefaultConfig()})
}

// simCommand is sim's command filling o (see benchCommand).
func simCommand(env Env, o *SimOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "sim", Short: "Run a workload against the simulated engine in virtual time (no HTTP, no sleeping)",
		Long: helpText("sim"), Example: helpText("sim.examples"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runSim(cmd.Context(), env, o)
		}}
	fs := cmd.Flags()
	o.fs = fs
	group(fs, "Engine flags", func(fs *pflag.FlagSet) {
		fs.StringVar(&o.Engine.Model, "model", o.Engine.Model, "simulated model: llama-3.1-8b, llama-3.1-70b, mistral-7b, qwen2.5-7b, qwen3-32b, qwen3-30b-a3b, a HF id, a .yaml profile or a Hugging Face config.json path")
		registerEngineFlags(fs, &o.Engine)
		o.publish.register(fs)
		o.cluster.register(fs)
	})
	group(fs, "Load flags", func(fs *pflag.FlagSet) {
		o.load.register(fs)
		o.load.registerRetry(fs)
		fs.DurationVar(&o.Timeout, "timeout", 0, "limit on a whole request in virtual time, as bench's --timeout: a request not finished by then fails as a timeout (retried under --retries) and the engine drops it (0: none)")
		fs.BoolVar(&o.ServerIgnoresDisconnect, "server-ignores-disconnect", false, "with --timeout, leave a timed-out request running on the engine, as a server that does not notice the client left: wasted work that feeds a retry storm")
	})
	group(fs, "Gateway flags", o.gateway.register)
	group(fs, "Workload flags", func(fs *pflag.FlagSet) {
		o.work.register(fs)
		fs.BoolVar(&o.IgnoreEOS, "ignore-eos", false, "generate every request's full output length (as bench's --ignore-eos); lengths a dataset recorded are generated exactly even without it")
		fs.DurationVar(&o.ScrapeInterval, "scrape-interval", time.Second, "sample the engine's state (running, waiting, KV usage, token counters) this often in virtual time, as a scraper of its /metrics would (0: not)")
		fs.BoolVar(&o.NaturalStop, "natural-stop", false, "let requests stop early at a natural length even where the dataset recorded their output length (a trace, ShareGPT replies)")
	})
	group(fs, "Session flags (--dataset-name conversations or mooncake-sessions)", o.sessions.register)
	group(fs, "Output flags", func(fs *pflag.FlagSet) {
		o.out.register(fs)
		o.verdict.register(fs)
	})
	groupedUsage(cmd, "Flags", "Engine flags", "Load flags", "Gateway flags", "Workload flags", "Session flags (--dataset-name conversations or mooncake-sessions)", "Output flags")
	cmd.AddCommand(newSimFitCmd(env), newSimValidateCmd(env))
	return cmd
}

// Run runs the simulation the options describe and returns what it found,
// without printing it (the command's hook; tests call it directly).
func (o *SimOptions) Run(ctx context.Context, env Env) (*run.Result, error) {
	cfg, err := o.config(env, o.fleet)
	if err != nil {
		return nil, settingError(o.fs, o, err)
	}
	res, err := run.Run(ctx, cfg)
	return res, settingError(o.fs, o, err)
}

// fleet is the cluster the cluster and gateway flags describe over the
// engine (nil: the engine alone).
func (o *SimOptions) fleet() (*cluster.Config, error) {
	c, err := o.cluster.Config(o.Engine, flagfield.Given(o.fs, &o.cluster.Spec))
	if err != nil {
		return nil, err
	}
	return o.gateway.Apply(c, o.Engine)
}

// config is the run.Config the options describe, its cluster fleet's.
func (o *SimOptions) config(env Env, fleet func() (*cluster.Config, error)) (run.Config, error) {
	o.verdict.Repeats = o.load.Repeats
	if err := o.verdict.parse(&o.out, o.args); err != nil {
		return run.Config{}, err
	}
	cfg, err := o.runFlags.config(env, "sim", o.load.RequestRate, false)
	if err != nil {
		return run.Config{}, err
	}
	cfg.Engine, cfg.Virtual, cfg.Publish = o.Engine, true, o.publish.Policy
	if cfg.Cluster, err = fleet(); err != nil {
		return run.Config{}, err
	}
	return cfg, o.VirtualSpec.Apply(&cfg)
}

// runSim runs one level in virtual time and reports it like bench.
func runSim(ctx context.Context, env Env, o *SimOptions) error {
	if o.cluster.Ratios != "" {
		return runPDRatios(ctx, env, o)
	}
	res, err := o.Run(ctx, env)
	if res == nil {
		return err
	}
	out := outputs{out: &o.out, gate: o.verdict.gate,
		interrupted: func(*run.Result) string { return "the summary above covers what finished" },
		before: func(res *run.Result) {
			for _, l := range append(res.VirtualLines(), kernelTablesLine(o.Engine)) {
				if l == "" {
					continue
				}
				if !o.out.Quiet {
					fmt.Fprintln(env.Stderr, "goodput: "+l)
				}
			}
		}}
	return settingError(o.fs, o, out.finish(env, res, err))
}
