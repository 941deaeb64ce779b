package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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
		Use:   "slo",
		Short: "List the SLO presets by product (chat, voice, code-completion, batch, agent)",
		Long: `An SLO preset is a documented set of constraints for one kind of product:
request constraints (judging goodput, as --goodput) and session constraints
(judging session goodput, as --session-goodput), each number with the public
source it comes from, or marked as goodput's own default where no source
sets it.

"--slo-preset NAME" applies one; explicit --goodput and --session-goodput
constraints override it field by field, e.g. "--slo-preset chat --goodput
ttft:300" is chat with a 300 ms TTFT limit. See docs/slo.md.`,
		Example: `  goodput slo list
  goodput slo list --sources
  goodput slo show voice
  goodput slo list --json`,
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
	ps := stats.Presets()
	if o.JSON {
		out := make([]presetJSON, len(ps))
		for i, p := range ps {
			out[i] = toPresetJSON(p)
		}
		return writeJSON(env.Stdout, out)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREQUEST (--goodput)\tSESSION (--session-goodput)\tSUMMARY")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, orNone(p.Request.String()), orNone(p.Session.String()), p.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !o.Sources {
		_, err := fmt.Fprintln(env.Stdout, "\nLimits in ms. Sources: goodput slo list --sources, or goodput slo show NAME.")
		return err
	}
	for _, p := range ps {
		fmt.Fprintf(env.Stdout, "\n%s (%s)\n", p.Name, p.Product)
		writeSources(env.Stdout, p)
	}
	return nil
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
		return writeJSON(env.Stdout, toPresetJSON(p))
	}
	w := env.Stdout
	fmt.Fprintf(w, "%s: %s\n  %s\n\n", p.Name, p.Product, p.Summary)
	req, sess := p.Request.String(), p.Session.String()
	if req == "" {
		req = "none: every successful request counts toward goodput"
	}
	if sess == "" {
		sess = "none"
	}
	fmt.Fprintf(w, "request (--goodput):          %s\n", req)
	fmt.Fprintf(w, "session (--session-goodput):  %s\n", sess)
	fmt.Fprintln(w, "(limits in ms; explicit --goodput and --session-goodput constraints override them field by field)")
	fmt.Fprintln(w)
	writeSources(w, p)
	return nil
}

// writeSources prints p's sources and its unsourced defaults.
func writeSources(w io.Writer, p stats.Preset) {
	fmt.Fprintln(w, "  sources:")
	for i, s := range p.Sources {
		fmt.Fprintf(w, "  %d. %s\n     %s\n     %s\n", i+1, s.Title, s.URL, s.Claim)
	}
	if len(p.Defaults) > 0 {
		fmt.Fprintln(w, "  goodput defaults (no source sets these):")
		for _, d := range p.Defaults {
			fmt.Fprintf(w, "  - %s\n", d)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// presetJSON is a preset as --json prints it: constraints both in flag
// syntax and as numbers of milliseconds keyed by constraint name.
type presetJSON struct {
	Name           string             `json:"name"`
	Product        string             `json:"product"`
	Summary        string             `json:"summary"`
	Goodput        string             `json:"goodput"`
	SessionGoodput string             `json:"session_goodput"`
	RequestMs      map[string]float64 `json:"request_ms"`
	SessionMs      map[string]float64 `json:"session_ms"`
	Sources        []sourceJSON       `json:"sources"`
	Defaults       []string           `json:"defaults"`
}

type sourceJSON struct {
	Claim string `json:"claim"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

func toPresetJSON(p stats.Preset) presetJSON {
	out := presetJSON{
		Name: p.Name, Product: p.Product, Summary: p.Summary,
		Goodput: p.Request.String(), SessionGoodput: p.Session.String(),
		RequestMs: limitsMs(map[string]time.Duration{
			stats.MetricTTFT: p.Request.TTFT, stats.MetricTPOT: p.Request.TPOT,
			stats.MetricE2E: p.Request.E2E, stats.MetricTTP: p.Request.TTP,
		}),
		SessionMs: limitsMs(map[string]time.Duration{
			"ttp": p.Session.TTP, "turn_ttft_p95": p.Session.TurnTTFTP95, "duration": p.Session.Duration,
		}),
		Sources:  []sourceJSON{},
		Defaults: append([]string{}, p.Defaults...),
	}
	for _, s := range p.Sources {
		out.Sources = append(out.Sources, sourceJSON(s))
	}
	return out
}

// limitsMs keeps the set limits, in ms.
func limitsMs(m map[string]time.Duration) map[string]float64 {
	out := map[string]float64{}
	for k, d := range m {
		if d != 0 {
			out[k] = float64(d) / float64(time.Millisecond)
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
