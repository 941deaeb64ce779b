package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/goodput/goodput/internal/findings"
)

// FindingsTerminal writes the findings as a block for a terminal: one entry per
// finding with its severity, message and evidence; critical ones stand out.
// It writes nothing for no findings and returns the writer's error.
func FindingsTerminal(w io.Writer, fs []findings.Finding) error {
	if len(fs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("-------------------------------Findings-------------------------------\n")
	for _, f := range fs {
		mark := "  "
		if f.Severity == findings.Critical {
			mark = "!!"
		}
		fmt.Fprintf(&b, "%s [%s] %s: %s\n", mark, f.Severity, f.ID, f.Message)
		if ev := termEvidence(f.Evidence); ev != "" && f.ID != "sla" {
			fmt.Fprintf(&b, "     evidence: %s\n", ev)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// evidenceText renders evidence as sorted key=value pairs.
func termEvidence(ev map[string]any) string {
	keys := make([]string, 0, len(ev))
	for k := range ev {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+termValue(ev[k]))
	}
	return strings.Join(parts, ", ")
}

func termValue(v any) string {
	switch t := v.(type) {
	case float64:
		return findings.Num(t)
	case map[string]any:
		return "{" + termEvidence(t) + "}"
	case map[string]float64:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = x
		}
		return "{" + termEvidence(m) + "}"
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = x
		}
		return "{" + termEvidence(m) + "}"
	}
	return fmt.Sprint(v)
}
