package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/costmodel"
	"github.com/goodput/goodput/internal/sim/fit"
)

// SimFitOptions configures "goodput sim fit": the deployment the records
// were measured on (the base GPU profile among it), the records files and
// where the fitted profile goes.
type SimFitOptions struct {
	Engine sim.Config
	// Files are the records files of bench runs against the server.
	Files []string
	// Output is the fitted profile's path ("" prints it only).
	Output string
	// Network is the share of a client-measured TTFT spent on the network
	// and HTTP, taken off where the server reported no timing.
	Network time.Duration
}

func newSimFitCmd(env Env) *cobra.Command {
	o := &SimFitOptions{Engine: sim.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "fit RECORDS...",
		Short: "Fit a GPU profile's sustained figures and fixed costs to bench records of a real server",
		Long: `Fit the base GPU profile's sustained GEMM rate, copy bandwidth, per-step and
per-request costs to bench records of your own server, so that
"goodput sim --gpu fitted.yaml" answers what-ifs for that machine. Lone
prefills (concurrency 1) time the prompt's steps; the gaps between tokens
time decode steps at the batch then running. Parameters the records do not
pin down keep the base profile's values, and the profile says so.`,
		Example: `  goodput bench --base-url http://gpu:8000 --max-concurrency 1 --random-input-len 4096 --records c1-long.jsonl
  goodput sim fit --gpu h100-sxm --model llama-3.1-8b c1-long.jsonl c1-short.jsonl c8.jsonl c32.jsonl -o fitted.yaml
  goodput sim --gpu fitted.yaml --model llama-3.1-8b --request-rate 10`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files = args
			return o.Run(cmd.Context(), env)
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

// Run reads the records, fits the profile, prints it with a table of
// observed against fitted times, and writes it to Output if set.
func (o *SimFitOptions) Run(_ context.Context, env Env) error {
	if len(o.Files) == 0 {
		return usagef("no records file: give the records of one or more bench runs")
	}
	if o.Network < 0 {
		return usagef("--network-latency %v: want ≥ 0", o.Network)
	}
	setup, err := o.setup()
	if err != nil {
		return err
	}
	files, err := readRecordsFiles(env, o.Files, runlog.ReadOptions{Merge: true})
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
		return usageError{err} // an unreadable records file is bad input too
	}
	var obs []fit.Observation
	n := 0
	for _, f := range files {
		n += len(f.Records)
		// Each file's records share one clock; files do not.
		got, err := fit.Observe(f.Records, fit.ObserveOptions{NetworkNs: o.Network.Nanoseconds()})
		if err != nil {
			continue
		}
		obs = append(obs, got...)
	}
	if len(obs) == 0 {
		return usagef("%d records in %d file(s) hold no successful streamed request to fit to", n, len(files))
	}
	res, err := fit.Fit(setup, obs)
	if err != nil {
		return usagef("fit: %v", err)
	}
	prof, err := fit.Profile(res, setup.GPU.Name)
	if err != nil {
		return err
	}
	if _, err := env.Stdout.Write(prof); err != nil {
		return err
	}
	writeFitTable(env, res)
	for _, e := range res.Estimates {
		if !e.Identified {
			fmt.Fprintf(env.Stderr, "goodput: warning: %s not identified, kept from %s: %s\n", e.Param, setup.GPU.Name, e.Why)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(env.Stderr, "goodput: warning: %s\n", w)
	}
	if o.Output != "" {
		if err := os.WriteFile(resolve(env, o.Output), prof, 0o644); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
	}
	return nil
}

// setup resolves the deployment as the simulator would (its defaults for
// the step budget and the CUDA-graph size), so the fit models the engine
// the records came from.
func (o *SimFitOptions) setup() (fit.Setup, error) {
	eng, err := sim.New(o.Engine)
	if err != nil {
		var ce *sim.ConfigError
		if errors.As(err, &ce) {
			return fit.Setup{}, usagef("--%s: %v", ce.Field, ce.Err)
		}
		return fit.Setup{}, usagef("%v", err)
	}
	m, err := costmodel.LookupModel(o.Engine.Model)
	if err != nil {
		return fit.Setup{}, usagef("--model: %v", err)
	}
	g, err := costmodel.LookupGPU(o.Engine.GPU)
	if err != nil {
		return fit.Setup{}, usagef("--gpu: %v", err)
	}
	d := eng.Describe()
	seqs, _ := d["max_num_seqs"].(int)
	budget, _ := d["max_num_batched_tokens"].(int)
	graph := costmodel.GraphCaptureTokens(seqs)
	if g.Efficiency != nil && g.Efficiency.GraphMaxTokens > 0 {
		graph = g.Efficiency.GraphMaxTokens
	}
	return fit.Setup{Model: m, GPU: g, TP: max(o.Engine.TP, 1), DType: o.Engine.DType, KVCacheDType: o.Engine.KVCacheDType,
		MaxBatchedTokens: budget, GraphMaxTokens: graph}, nil
}

// writeFitTable prints each observation beside the base and fitted
// models' times.
func writeFitTable(env Env, res *fit.Result) {
	fmt.Fprintf(env.Stdout, "\n# Observed vs modelled step times (fit RMS error %.1f %%)\n", 100*res.RMSRelErr)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "# kind\tbatch\tprompt\tcontext\trequests\tobserved ms\tbase ms\tfitted ms\terror")
	for i, ob := range res.Observations {
		ctx := "-"
		if ob.Kind == fit.Decode {
			ctx = fmt.Sprintf("%.0f", ob.Context)
		}
		fmt.Fprintf(tw, "# %s\t%d\t%.0f\t%s\t%d\t%.3f\t%.3f\t%.3f\t%+.1f %%\n", ob.Kind, ob.Batch, ob.Prompt, ctx, ob.Requests,
			ob.Seconds*1e3, res.BaseModelled[i]*1e3, res.Modelled[i]*1e3, 100*(res.Modelled[i]/ob.Seconds-1))
	}
	tw.Flush()
}
