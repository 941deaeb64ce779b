package validate

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// columns are the matrix's columns, in every rendering.
var columns = []string{"run", "figure", "truth", "sim", "error", "TOST ±10%", "KS"}

// row is one cell's columns as text.
func (c *Cell) row() []string {
	tost, ks := "", ""
	if c.TOST != nil {
		tost = string(c.TOST.Verdict)
		if !math.IsInf(c.TOST.Lo, 0) && !math.IsNaN(c.TOST.Lo) {
			tost += fmt.Sprintf(" [%s, %s]", pct(c.TOST.Lo), pct(c.TOST.Hi))
		}
	}
	if c.KS != nil && !math.IsNaN(c.KS.D) {
		ks = fmt.Sprintf("%s (D=%.3f p=%.3g)", c.KS.Verdict, c.KS.D, c.KS.P)
	}
	return []string{c.Run, c.Label(), num(c.Truth, c.Unit), num(c.Sim, c.Unit), pct(c.Error), tost, ks}
}

// num prints a figure with its unit, to a precision its size deserves.
func num(x float64, unit string) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.0f %s", x, unit)
	case math.Abs(x) >= 10:
		return fmt.Sprintf("%.1f %s", x, unit)
	}
	return fmt.Sprintf("%.2f %s", x, unit)
}

// pct prints a relative figure as a signed percentage.
func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// title is a section's heading.
func (s *Section) title() string {
	if s.Profile != "" {
		return s.Name + " (profile " + s.Profile + ")"
	}
	return s.Name
}

// mapeLine is a section's MAPE in one line.
func (s *Section) mapeLine() string {
	var parts []string
	for _, r := range s.MAPE() {
		parts = append(parts, fmt.Sprintf("%s %.1f%% (%d)", strings.ReplaceAll(r.Metric, "_", " "), r.Percent, r.Cells))
	}
	if len(parts) == 0 {
		return "MAPE: no figure"
	}
	return "MAPE (figures): " + strings.Join(parts, ", ")
}

// WriteText prints the matrix as aligned columns, one block per section,
// each closed by its MAPE over the set.
func (m *Matrix) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range m.Sections {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "Simulator vs real: %s\n", s.title())
		fmt.Fprintln(tw, strings.Join(columns, "\t"))
		for _, c := range s.Cells {
			fmt.Fprintln(tw, strings.Join(c.row(), "\t"))
		}
		tw.Flush()
		fmt.Fprintln(tw, s.mapeLine())
	}
	return tw.Flush()
}

// WriteMarkdown prints the matrix as Markdown tables, one per section,
// each followed by its MAPE: the form docs/simulator.md publishes.
func (m *Matrix) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for i, s := range m.Sections {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "**%s**\n\n", s.title())
		b.WriteString("| " + strings.Join(columns, " | ") + " |\n")
		b.WriteString(strings.Repeat("|---", len(columns)) + "|\n")
		for _, c := range s.Cells {
			b.WriteString("| " + strings.Join(c.row(), " | ") + " |\n")
		}
		fmt.Fprintf(&b, "\n%s\n", s.mapeLine())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonNum is a figure in JSON: null where it is not a finite number.
func jsonNum(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

type jsonTOST struct {
	Truth   *float64 `json:"truth"`
	Sim     *float64 `json:"sim"`
	Lo      *float64 `json:"lo"`
	Hi      *float64 `json:"hi"`
	P       *float64 `json:"p,omitempty"`
	Verdict Verdict  `json:"verdict"`
}

type jsonKS struct {
	D       *float64 `json:"d"`
	P       *float64 `json:"p"`
	N       int      `json:"n"`
	M       int      `json:"m"`
	Verdict Verdict  `json:"verdict"`
}

type jsonCell struct {
	Run    string    `json:"run"`
	Metric string    `json:"metric"`
	Stat   string    `json:"stat,omitempty"`
	Unit   string    `json:"unit"`
	Truth  *float64  `json:"truth"`
	Sim    *float64  `json:"sim"`
	Error  *float64  `json:"error"`
	TOST   *jsonTOST `json:"tost,omitempty"`
	KS     *jsonKS   `json:"ks,omitempty"`
}

type jsonMAPE struct {
	Metric  string   `json:"metric"`
	Percent *float64 `json:"percent"`
	Cells   int      `json:"cells"`
}

type jsonSection struct {
	Name    string     `json:"name"`
	Profile string     `json:"profile,omitempty"`
	Cells   []jsonCell `json:"cells"`
	MAPE    []jsonMAPE `json:"mape"`
}

// WriteJSON prints the matrix as one JSON object: {"sections": [{"name",
// "profile", "cells": [{run, metric, stat, unit, truth, sim, error (signed,
// relative), tost, ks}], "mape": [{metric, percent, cells}]}]}; a figure
// that is not a finite number is null.
func (m *Matrix) WriteJSON(w io.Writer) error {
	out := struct {
		Margin   float64       `json:"margin"`
		Alpha    float64       `json:"alpha"`
		Sections []jsonSection `json:"sections"`
	}{Margin: Margin, Alpha: Alpha, Sections: []jsonSection{}}
	for _, s := range m.Sections {
		js := jsonSection{Name: s.Name, Profile: s.Profile, Cells: []jsonCell{}, MAPE: []jsonMAPE{}}
		for _, c := range s.Cells {
			jc := jsonCell{Run: c.Run, Metric: c.Metric, Stat: c.Stat, Unit: c.Unit, Truth: jsonNum(c.Truth), Sim: jsonNum(c.Sim), Error: jsonNum(c.Error)}
			if t := c.TOST; t != nil {
				jc.TOST = &jsonTOST{Truth: jsonNum(t.Truth), Sim: jsonNum(t.Sim), Lo: jsonNum(t.Lo), Hi: jsonNum(t.Hi), P: jsonNum(t.P), Verdict: t.Verdict}
			}
			if k := c.KS; k != nil {
				jc.KS = &jsonKS{D: jsonNum(k.D), P: jsonNum(k.P), N: k.N, M: k.M, Verdict: k.Verdict}
			}
			js.Cells = append(js.Cells, jc)
		}
		for _, r := range s.MAPE() {
			js.MAPE = append(js.MAPE, jsonMAPE{Metric: r.Metric, Percent: jsonNum(r.Percent), Cells: r.Cells})
		}
		out.Sections = append(out.Sections, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

var htmlPage = template.Must(template.New("validate").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>goodput sim validate</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:1em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,td:nth-child(2),th{text-align:left}
.equivalent{background:#e6f4ea}.not-equivalent{background:#fde7e9}.too-few{background:#f1f3f4}
</style></head><body>
<h1>Simulator vs real runs</h1>
<p>Signed error = (simulated − real) / real. TOST: equivalence of the figure within ±10 % of the real one (90 % interval of sim/real − 1). KS: two-sample Kolmogorov–Smirnov of the metric's per-request values at α = 0.05.</p>
{{range .Sections}}<h2>{{.Title}}</h2>
<table><tr>{{range $.Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>
<p>{{.MAPE}}</p>
{{end}}</body></html>
`))

// WriteHTML prints the matrix as one self-contained HTML page (no
// scripts, no external resources), verdicts shaded.
func (m *Matrix) WriteHTML(w io.Writer) error {
	type td struct{ Text, Class string }
	type section struct {
		Title, MAPE string
		Rows        [][]td
		Columns     []string
	}
	var data []section
	for _, s := range m.Sections {
		sec := section{Title: "Simulator vs real: " + s.title(), MAPE: s.mapeLine()}
		for _, c := range s.Cells {
			var r []td
			for i, txt := range c.row() {
				cls := ""
				switch {
				case i == 5 && c.TOST != nil:
					cls = verdictClass(c.TOST.Verdict)
				case i == 6 && c.KS != nil:
					cls = verdictClass(c.KS.Verdict)
				}
				r = append(r, td{txt, cls})
			}
			sec.Rows = append(sec.Rows, r)
		}
		data = append(data, sec)
	}
	return htmlPage.Execute(w, struct {
		Sections []section
		Columns  []string
	}{data, columns})
}

func verdictClass(v Verdict) string {
	switch v {
	case Equivalent:
		return "equivalent"
	case NotEquivalent:
		return "not-equivalent"
	}
	return "too-few"
}
