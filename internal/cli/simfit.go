package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
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
		Use:     "fit RECORDS...",
		Short:   "Fit a GPU profile's sustained figures and fixed costs to bench records of a real server",
		Long:    helpText("sim-fit"),
		Example: helpText("sim-fit.examples"),
		Args:    cobra.ArbitraryArgs,
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
	setup, err := run.FitSetup(o.Engine)
	if err != nil {
		return flagError(err, "--model")
	}
	files, err := readRecordsFiles(env, o.Files, runlog.ReadOptions{Merge: true})
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
		return usageError{err} // an unreadable records file is bad input too
	}
	res, err := run.FitFiles(setup, files, o.Network)
	switch {
	case errors.Is(err, run.ErrNoFitData):
		return usageError{err}
	case err != nil:
		return usagef("fit: %v", err)
	}
	prof, err := fit.Profile(res, setup.GPU.Name)
	if err != nil {
		return err
	}
	if _, err := env.Stdout.Write(prof); err != nil {
		return err
	}
	if err := report.FitTable(env.Stdout, res); err != nil {
		return err
	}
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
