package cli

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

func newSimFitCmd(env Env) *cobra.Command {
	o := &run.FitSpec{Engine: sim.DefaultConfig()}
	cmd := &cobra.Command{
		Use:     "fit RECORDS...",
		Short:   "Fit a GPU profile's sustained figures and fixed costs to bench records of a real server",
		Long:    helpText("sim-fit"),
		Example: helpText("sim-fit.examples"),
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files = args
			err := run.Fit(o, files(env))
			var (
				ce *sim.ConfigError
				we *run.WriteError
			)
			switch {
			case errors.As(err, &ce):
				return flagError(err, "--model")
			case err == nil || errors.As(err, &we):
				return savedRunError(cmd.Flags(), o, runlog.ReadOptions{}, err)
			}
			// An unreadable records file is bad input too.
			return usageError{savedRunError(cmd.Flags(), o, runlog.ReadOptions{}, err)}
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
