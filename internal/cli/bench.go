package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
)

// BenchOptions is everything "goodput bench" needs.
type BenchOptions struct {
	runFlags
	target targetFlags
	sim    simFlags
	// compareDirect is --compare-direct: the same requests sent direct
	// to this URL too, to measure what the target (a hop) adds.
	compareDirect string
}

func newBenchCmd(env Env) *cobra.Command { return benchCommand(env, &BenchOptions{}) }

// benchCommand is bench's command filling o: its flags, the words after
// them (vLLM's SLO terms), then the run.
func benchCommand(env Env, o *BenchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Load-test an OpenAI-compatible streaming endpoint (default: the embedded simulator)",
		Long:    helpText("bench"),
		Example: helpText("bench.examples"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runBench(cmd.Context(), env, o)
		},
	}
	fs := cmd.Flags()
	o.fs = fs
	group(fs, "Target flags", func(fs *pflag.FlagSet) {
		o.target.register(fs)
		fs.BoolVar(&o.target.NoStream, "no-stream", false, `send "stream": false and measure whole answers: E2E only (TTFT, TTP, TPOT and ITL are not measured, so not reported), usage from the body`)
		o.target.registerScrape(fs)
		fs.StringVar(&o.compareDirect, "compare-direct", "", "also send the same requests, interleaved, direct to this base URL (the server behind the --base-url gateway or proxy) and report what the hop adds to TTFT and TTP and whether it re-chunks the stream")
	})
	group(fs, "Load flags", func(fs *pflag.FlagSet) {
		o.load.register(fs)
		fs.StringVar(&o.load.RampUpStrategy, "ramp-up-strategy", "", "raise the request rate over the run instead of --request-rate: linear or exponential, from --ramp-up-start-rps to --ramp-up-end-rps across --num-prompts requests (gaps gamma-distributed as --burstiness says), as vLLM does")
		fs.Var(optional(&o.load.RampUpStartRPS), "ramp-up-start-rps", "ramp-up: the first request's rate, requests/s (> 0)")
		fs.Var(optional(&o.load.RampUpEndRPS), "ramp-up-end-rps", "ramp-up: the last request's rate, requests/s (≥ the start)")
		o.load.registerShard(fs)
		o.load.registerRetry(fs)
	})
	group(fs, "Workload flags", func(fs *pflag.FlagSet) {
		o.work.register(fs)
		fs.Var(lengths([]*int{&o.work.CustomOutputLen}, false, &o.work.outputSet), "custom-output-len", "custom dataset: output tokens asked of every request (0 or -1: the file's output_tokens, else the server's choice)")
	})
	group(fs, "Output flags", func(fs *pflag.FlagSet) {
		o.out.register(fs)
		fs.StringVar(&o.out.Label, "label", "", "name the result file after this instead of the backend, and store it as the result's label (as vLLM's --label)")
		fs.BoolVar(&o.out.AppendResult, "append-result", false, "save the result by appending it, as one JSON line, to the result file (as vLLM does; implies --save-result)")
		o.verdict.register(fs)
		fs.StringVar(&o.out.MetricsListen, "metrics-listen", "", "serve the client's view as Prometheus /metrics on this address during the run (goodput proxy's metric names), e.g. 127.0.0.1:9465")
	})
	group(fs, "Session flags (--dataset-name conversations or mooncake-sessions)", o.sessions.register)
	group(fs, "Embedded simulator flags (used without --base-url)", o.sim.register)
	groupedUsage(cmd, "Flags", "Target flags", "Load flags", "Workload flags", "Output flags",
		"Session flags (--dataset-name conversations or mooncake-sessions)", "Embedded simulator flags (used without --base-url)")
	return cmd
}

// Run runs the benchmark the options describe and returns what it found,
// without printing it (the command's hook; tests call it directly).
func (o *BenchOptions) Run(ctx context.Context, env Env) (*run.Result, error) {
	res, err := o.run(ctx, env)
	return res, settingError(o.fs, o, err)
}

func (o *BenchOptions) run(ctx context.Context, env Env) (*run.Result, error) {
	o.verdict.Repeats = o.load.Repeats
	if err := o.verdict.parse(&o.out, o.args); err != nil {
		return nil, err
	}
	cfg, err := o.runConfig(env, "bench")
	if err != nil {
		return nil, err
	}
	start, stop := o.out.Live(cfg.Stats, func(s string) { fmt.Fprintln(env.Stderr, "goodput: "+s) })
	defer stop()
	cfg.Hooks.Start = start
	if o.compareDirect != "" {
		if cfg.Target.BaseURL == "" {
			return nil, usagef("--compare-direct needs --base-url: the target whose hop it measures")
		}
		res, hop, err := runCompared(ctx, cfg, o.compareDirect)
		for _, l := range hop.Lines(cfg.Target.BaseURL, o.compareDirect) {
			fmt.Fprintln(env.Stderr, "goodput: "+l)
		}
		return res, err
	}
	res, err := run.Run(ctx, cfg)
	return res, err
}

// runBench measures one load level and reports it.
func runBench(ctx context.Context, env Env, o *BenchOptions) error {
	if recordsToStdout(o.out.Records) {
		// Stdout carries the records (a Kubernetes pod's log, a pipe into
		// goodput report), so everything else goes to stderr, every line
		// marked as goodput's own (notes, the embedded simulator's log,
		// the summary): where a log merges the streams again, the records
		// reader skips those lines.
		env.Stderr = &prefixLines{w: env.Stderr, prefix: runlog.OwnLinePrefix}
		env.console, env.TTY = report.NewConsole(env.Stderr, false), false
	}
	res, err := o.Run(ctx, env)
	if res == nil {
		return err
	}
	out := outputs{out: &o.out, gate: o.verdict.gate, interrupted: func(res *run.Result) string {
		return fmt.Sprintf("%d requests sent; the summary above covers what finished", res.Sent)
	}}
	return settingError(o.fs, o, out.finish(env, res, err))
}
