package report

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/goodput/goodput/internal/stats"
)

// PresetsJSON writes the SLO presets as a JSON array: each preset's
// constraints in flag syntax and in milliseconds by name, its sources and
// its unsourced defaults.
func PresetsJSON(w io.Writer, ps []stats.Preset) error {
	out := make([]presetJSON, len(ps))
	for i, p := range ps {
		out[i] = toPresetJSON(p)
	}
	return writeIndentedJSON(w, out)
}

// PresetJSON writes one SLO preset as PresetsJSON writes each.
func PresetJSON(w io.Writer, p stats.Preset) error { return writeIndentedJSON(w, toPresetJSON(p)) }

// PresetsTerminal writes the SLO presets as a table (constraints in
// --goodput and --session-goodput syntax), with each one's sources under
// it when sources is set.
func PresetsTerminal(out io.Writer, ps []stats.Preset, sources bool) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREQUEST (--goodput)\tSESSION (--session-goodput)\tSUMMARY")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, orNone(p.Request.String()), orNone(p.Session.String()), p.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !sources {
		_, err := fmt.Fprintln(out, "\nLimits in ms. Sources: goodput slo list --sources, or goodput slo show NAME.")
		return err
	}
	for _, p := range ps {
		fmt.Fprintf(out, "\n%s (%s)\n", p.Name, p.Product)
		writeSources(out, p)
	}
	return nil
}

// PresetTerminal writes one SLO preset: what it is for, its constraints
// and its sources.
func PresetTerminal(w io.Writer, p stats.Preset) error {
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

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Presets writes every SLO preset to w, as JSON or as a table (with
// sources: each preset's sources under it).
func Presets(w io.Writer, asJSON, sources bool) error {
	if asJSON {
		return PresetsJSON(w, stats.Presets())
	}
	return PresetsTerminal(w, stats.Presets(), sources)
}

// Preset writes the preset named name to w, as JSON or as text; an
// unknown name is stats.ErrUnknownPreset.
func Preset(w io.Writer, name string, asJSON bool) error {
	p, err := stats.LookupPreset(name)
	switch {
	case err != nil:
		return err
	case asJSON:
		return PresetJSON(w, p)
	}
	return PresetTerminal(w, p)
}
