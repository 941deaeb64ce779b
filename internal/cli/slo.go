package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/stats"
)

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
	list := &cobra.Command{
		Use:   "list",
		Short: "Print every SLO preset: its constraints in --goodput and --session-goodput syntax",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			if listJSON {
				return report.PresetsJSON(env.Stdout, stats.Presets())
			}
			return report.PresetsTerminal(env.Stdout, stats.Presets(), sources)
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the presets as a JSON array, sources included")
	list.Flags().BoolVar(&sources, "sources", false, "print each preset's sources and unsourced defaults under the table")
	show := &cobra.Command{
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
			p, err := stats.LookupPreset(args[0])
			switch {
			case err != nil: // only an unknown name
				return usageError{err}
			case showJSON:
				return report.PresetJSON(env.Stdout, p)
			}
			return report.PresetTerminal(env.Stdout, p)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the preset as a JSON object")
	cmd.AddCommand(list, show)
	return cmd
}
