package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/breakdown"
)

func init() { RegisterSection("gateway", ClassesTerminal, ClassesJSON, exampleClasses) }

// exampleClasses is a gateway's block with every figure known.
func exampleClasses(breakdown.Options) *breakdown.Classes {
	row := breakdown.ClassRow{Requests: 1, TTFTN: 1}
	return &breakdown.Classes{Rows: []breakdown.ClassRow{row}, Degraded: map[string]int{"max_tokens": 1}, SLO: "x"}
}

// degradedLine is the degraded counts as "N (max_tokens N, ...)", the
// actions in a fixed order.
func degradedLine(c *breakdown.Classes) string {
	total := 0
	var parts []string
	for _, k := range []string{"max_tokens", "reasoning", "small_model"} {
		if n := c.Degraded[k]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	for k, n := range c.Degraded {
		if k != "max_tokens" && k != "reasoning" && k != "small_model" {
			total += n
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// ClassesTerminal writes the Gateway block: refusals and degradations,
// then one row per priority class; nothing for nil.
func ClassesTerminal(w io.Writer, c *breakdown.Classes) error {
	if c == nil {
		return nil
	}
	t := &term{}
	t.header(" Gateway ", '=')
	t.line("Rate-limited attempts:", fmt.Sprint(c.RateLimited))
	t.line("Degraded requests:", degradedLine(c))
	if c.SLO != "" {
		t.line("SLO (per class):", c.SLO)
	}
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Class\tRequests\tFailed\tLimited\tDegraded\tTTFT P50\tTTFT P99\tSLO met %")
	for _, row := range c.Rows {
		p50, p99 := "-", "-"
		if row.TTFTN > 0 {
			p50, p99 = f2(row.TTFTP50), f2(row.TTFTP99)
		}
		slo := "-"
		if c.SLO != "" && row.Requests > 0 {
			slo = f2(100 * row.SLOMet)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", row.Class, row.Requests, row.Failed, row.RateLimited, row.Degraded, p50, p99, slo)
	}
	// Flush only fails if its writer does, and that is a bytes.Buffer.
	_ = tw.Flush()
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// ClassesJSON is the block for the result JSON; nil for nil. A figure not
// known (no TTFT; no SLO) is left out of its class's object.
func ClassesJSON(c *breakdown.Classes) map[string]any {
	if c == nil {
		return nil
	}
	rows := make([]map[string]any, len(c.Rows))
	for i, row := range c.Rows {
		m := map[string]any{"class": row.Class, "requests": row.Requests, "failed": row.Failed,
			"rate_limited": row.RateLimited, "degraded": row.Degraded}
		if row.TTFTN > 0 {
			m["median_ttft_ms"], m["p99_ttft_ms"] = row.TTFTP50, row.TTFTP99
		}
		if c.SLO != "" && row.Requests > 0 {
			m["slo_attainment"] = row.SLOMet
		}
		rows[i] = m
	}
	deg := map[string]any{}
	for k, n := range c.Degraded {
		deg[k] = n
	}
	m := map[string]any{"rate_limited": c.RateLimited, "degraded": deg, "per_class": rows}
	if c.SLO != "" {
		m["slo"] = c.SLO
	}
	return m
}
