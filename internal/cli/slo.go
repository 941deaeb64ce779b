package cli

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/stats"
)

// SLOOptions is everything "goodput slo list" and "goodput slo show" need.
type SLOOptions struct {
	// Name is the preset "show" prints ("" for list).
	Name string
	// JSON prints JSON instead of text.
	JSON bool
	// Sources prints each preset's sources under the list.
	Sources bool
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
	cmd.AddCommand(newSLOListCmd(env), newSLOShowCmd(env))
	return cmd
}

func newSLOListCmd(env Env) *cobra.Command {
	var o SLOOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print every SLO preset: its constraints in --goodput and --session-goodput syntax",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			return runSLOList(env, &o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the presets as a JSON array, sources included")
	cmd.Flags().BoolVar(&o.Sources, "sources", false, "print each preset's sources and unsourced defaults under the table")
	return cmd
}

func newSLOShowCmd(env Env) *cobra.Command {
	var o SLOOptions
	cmd := &cobra.Command{
		Use:       "show NAME",
		Short:     "Print one SLO preset with its sources",
		ValidArgs: stats.PresetNames(),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("give one preset name (%s); got %d argument(s)", strings.Join(stats.PresetNames(), ", "), len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			o.Name = args[0]
			return runSLOShow(env, &o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the preset as a JSON object")
	return cmd
}

// runSLOList prints every preset.
func runSLOList(env Env, o *SLOOptions) error {
	if o.JSON {
		return report.PresetsJSON(env.Stdout, stats.Presets())
	}
	return report.PresetsTerminal(env.Stdout, stats.Presets(), o.Sources)
}

// runSLOShow prints the preset o.Name.
func runSLOShow(env Env, o *SLOOptions) error {
	p, err := stats.LookupPreset(o.Name)
	if errors.Is(err, stats.ErrUnknownPreset) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return report.PresetJSON(env.Stdout, p)
	}
	return report.PresetTerminal(env.Stdout, p)
}
