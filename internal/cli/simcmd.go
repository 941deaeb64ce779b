package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// SimOptions configures "goodput sim": the engine, plus bench's workload,
// load and output flags.
type SimOptions struct {
	Engine sim.Config
	// IgnoreEOS generates every request's full output length; without it
	// a request may stop early at its natural length, as bench's requests
	// to the simulated server do.
	IgnoreEOS bool
	// NaturalStop lets requests whose dataset recorded their output length
	// (traces, ShareGPT replies, lengths files) stop early at a natural
	// length too; by default the recorded length is generated exactly.
	NaturalStop bool
	load        loadFlags
	work        workloadFlags
	out         outputFlags
	verdict     verdictFlags
	args        []string
}

func newSimCmd(env Env) *cobra.Command {
	o := SimOptions{Engine: sim.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a workload against the simulated engine in virtual time (no HTTP, no sleeping)",
		Long: `Run the same workload and load as "goodput bench" against the simulated engine
in virtual time: no HTTP and no sleeping, so an hour of traffic takes seconds.
It produces the same records (plus the engine's own queue, prefill and decode
times per request) and the same report as bench, deterministically for a seed.`,
		Example: `  goodput sim --model llama-3.1-8b --gpu h100-sxm --request-rate 10 --num-prompts 5000
  goodput sim --model qwen3-32b --gpu h200 --tp 2 --dataset-name lengths --dataset-path sharegpt.csv --request-rate 4 --goodput ttft:2000 tpot:50`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			o.load.numSet = cmd.Flags().Changed("num-prompts")
			return runSim(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	group(fs, "Engine flags", func(fs *pflag.FlagSet) {
		fs.StringVar(&o.Engine.Model, "model", o.Engine.Model, "simulated model: llama-3.1-8b, llama-3.1-70b, mistral-7b, qwen2.5-7b, qwen3-32b, qwen3-30b-a3b, a HF id or a .yaml profile")
		o.Engine.RegisterFlags(fs)
	})
	group(fs, "Load flags", o.load.register)
	group(fs, "Workload flags", func(fs *pflag.FlagSet) {
		o.work.register(fs)
		fs.BoolVar(&o.IgnoreEOS, "ignore-eos", false, "generate every request's full output length (as bench's --ignore-eos); lengths a dataset recorded are generated exactly even without it")
		fs.BoolVar(&o.NaturalStop, "natural-stop", false, "let requests stop early at a natural length even where the dataset recorded their output length (a trace, ShareGPT replies)")
	})
	group(fs, "Output flags", func(fs *pflag.FlagSet) {
		o.out.register(fs)
		o.verdict.register(fs)
	})
	groupedUsage(cmd, "Flags", "Engine flags", "Load flags", "Workload flags", "Output flags")
	return cmd
}

// runSim runs one level in virtual time and reports it like bench.
func runSim(ctx context.Context, env Env, o *SimOptions) error {
	so, err := o.out.statsOptions(o.args)
	if err != nil {
		return err
	}
	if o.IgnoreEOS && o.NaturalStop {
		return usagef("--ignore-eos and --natural-stop contradict each other: choose one")
	}
	if err := o.verdict.parse(); err != nil {
		return err
	}
	lv, err := o.load.level()
	if err != nil {
		return err
	}
	meta, err := parseKV("--metadata", o.out.Metadata)
	if err != nil {
		return err
	}
	eng, err := sim.New(o.Engine)
	if err != nil {
		return simConfigError(err, "--model")
	}
	ds, err := virtualDataset(&o.work, &o.load, &lv)
	if err != nil {
		return err
	}
	desc := eng.Describe()
	model := fmt.Sprint(desc["model"])
	m := &runlog.Meta{
		Tool: "goodput", Version: Version, Command: "sim", Started: env.Now().UTC(),
		Target: "virtual-time", Backend: "sim", Model: model, Dataset: ds.Name(), Seed: o.load.Seed,
		Simulated: desc, Metadata: meta,
	}
	resultPath, recordsPath := outputPaths(env, &o.out, "sim", model, lv.MaxConcurrency, lv.Rate, env.Now().Format("20060102-150405"))
	f, rw, err := openRecords(env, &o.out, &resultPath, &recordsPath, m)
	if err != nil {
		return err
	}
	if f != nil {
		defer f.Close()
	}
	acc := stats.NewAccumulator(so)
	tracker := findings.NewTracker()
	wall := time.Now()
	res, runErr := simrun.Run(ctx, eng, ds, simrun.Load{
		RequestRate: lv.Rate, Burstiness: lv.Burstiness, MaxConcurrency: lv.MaxConcurrency,
		NumPrompts: lv.NumPrompts, NumWarmups: lv.NumWarmups, Duration: lv.Duration, Seed: o.load.Seed,
		NaturalStop: !o.IgnoreEOS, NaturalStopRecorded: o.NaturalStop,
	}, func(r *runlog.Record) error {
		if rw != nil {
			if err := rw.Write(r); err != nil {
				return fmt.Errorf("records file %s: %w", recordsPath, err)
			}
		}
		acc.Add(r)
		tracker.Add(r)
		return nil
	})
	elapsed := time.Since(wall)
	m.Levels = []runlog.Level{{
		RequestRate: lv.Rate, Burstiness: lv.Burstiness, MaxConcurrency: lv.MaxConcurrency,
		NumPrompts: lv.NumPrompts, DurationS: lv.Duration.Seconds(), NumWarmups: lv.NumWarmups,
		DelayedArrivals: res.DelayedArrivals,
	}}
	if rw != nil {
		if err := rw.WriteEnd(m); err != nil {
			return fmt.Errorf("records file %s: %w", recordsPath, err)
		}
	}
	cancelled := runErr != nil && errors.Is(runErr, context.Canceled)
	if runErr != nil && !cancelled {
		return fmt.Errorf("simulation: %w", runErr)
	}
	sum := acc.Summary()
	fs := o.verdict.analyze(&sum, m, &m.Levels[0], tracker, 0)
	if err := report.Terminal(env.Stdout, &sum, m, report.TermOptions{TTY: env.TTY, NoColor: env.Getenv("NO_COLOR") != ""}); err != nil {
		return err
	}
	if err := findings.Render(env.Stdout, fs); err != nil {
		return err
	}
	if !o.out.Quiet {
		fmt.Fprintf(env.Stderr, "goodput: simulated %.1f s of %s in %.2f s (%d engine steps)\n",
			time.Duration(res.End).Seconds(), describeSim(desc), elapsed.Seconds(), res.Steps)
	}
	if rw != nil {
		fmt.Fprintf(env.Stderr, "goodput: %d records in %s\n", rw.Count(), recordsPath)
	}
	extra := map[string]any{"records_file": recordsPath, "findings": nonNil(fs)}
	if cancelled {
		extra["interrupted"] = true
	}
	if o.out.SaveDetailed {
		// vLLM's per-request lists, as bench writes them (no text: the
		// simulated engine writes none).
		d, err := detailed(env, &savedRun{path: recordsPath}, 0)
		if err != nil {
			return err
		}
		maps.Copy(extra, d)
	}
	b, err := report.ResultJSON(&sum, m, extra)
	if err != nil {
		return err
	}
	if o.out.SaveResult {
		path, err := writeResult(env, &o.out, resultPath, b)
		if err != nil {
			return fmt.Errorf("--save-result: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", path)
	}
	if o.out.HTML != "" {
		h := runHTML{path: o.out.HTML, run: &savedRun{path: recordsPath}, title: "goodput sim", meta: m, so: so,
			findings: htmlFindings(fs), sla: findings.SLASentence(findings.Input{Summary: &sum, Meta: m})}
		if err := h.write(env); err != nil {
			return err
		}
	}
	if cancelled {
		return interruptedError{"the summary above covers what finished"}
	}
	if err := allFailed(&sum); err != nil {
		return err
	}
	return o.verdict.check(b)
}

// virtualDataset builds the workload of a virtual-time run of lv: a trace
// replays whole unless --num-prompts was given, and warm-ups get requests
// of their own beyond the measured ones.
func virtualDataset(w *workloadFlags, l *loadFlags, lv *levelSpec) (workload.Dataset, error) {
	wo := w.o
	wo.Seed = l.Seed
	wo.NumPrompts = lv.NumPrompts
	if isTraceName(wo.DatasetName) && !l.numSet {
		wo.NumPrompts, lv.NumPrompts = 0, 0
	}
	if wo.NumPrompts > 0 {
		wo.NumPrompts += lv.NumWarmups
	}
	ds, err := workload.FromOptions(wo)
	if err != nil {
		return nil, datasetError(err)
	}
	if wo.NoOversample && isFileDataset(wo.DatasetName) && lv.NumPrompts+lv.NumWarmups > ds.Len() {
		// Each row once: as many requests as the file has.
		lv.NumPrompts = max(ds.Len()-lv.NumWarmups, 1)
	}
	return ds, nil
}

// datasetError makes a workload error a usage error that names the flag:
// a file that cannot be opened is --dataset-path's.
func datasetError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && !strings.Contains(err.Error(), "--") {
		return usagef("--dataset-path %s: %v", pe.Path, pe.Err)
	}
	return usageError{err}
}
