package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Classes is a gateway's account of a level: each priority class's
// requests, TTFT and SLO attainment (records' Priority), and the requests
// it refused by rate limit or degraded (records' Degraded).
type Classes struct {
	// Rows are the classes from 0 to the highest seen, class c at c.
	Rows []ClassRow
	// RateLimited counts the measured attempts refused by a rate limit
	// (a 429 whose error starts "rate limited"), retried ones included.
	RateLimited int
	// Degraded counts the measured requests degraded, by how
	// (runlog.Record.Degraded: "max_tokens", "reasoning", "small_model").
	Degraded map[string]int
	// SLO is the SLO the attainment is against ("" none: no attainment).
	SLO string
}

// ClassRow is one priority class's share of a level.
type ClassRow struct {
	// Class is the priority class (0 interactive, 1 batch, ...).
	Class int
	// Requests counts its measured requests (a retried attempt counts in
	// its last attempt), Failed those that failed, RateLimited the
	// attempts a rate limit refused, Degraded those degraded.
	Requests, Failed, RateLimited, Degraded int
	// TTFTN counts its requests with a TTFT; TTFTP50 and TTFTP99 are their
	// percentiles, ms.
	TTFTN            int
	TTFTP50, TTFTP99 float64
	// SLOMet is the share of its requests meeting the SLO (failures
	// miss it); meaningful only with Classes.SLO set.
	SLOMet float64
}

// ClassCounter collects a level's records by priority class, for the
// Classes block. Set SLO before the first Add; the zero value otherwise
// is ready. It keeps one TTFT per record up to
// stats.ExactRequests of them, then a sketch (stats.Values).
type ClassCounter struct {
	// SLO is what the attainment is judged against (zero: none).
	SLO  stats.SLO
	rows []classAcc
	// limited and degraded count refusals and degradations; gateway says
	// a record showed one or named a class above 0.
	limited  int
	degraded map[string]int
	gateway  bool
}

type classAcc struct {
	requests, failed, limited, degraded, met int
	ttft                                     stats.Values // ms
}

// RateLimitedRecord reports whether r was refused by a rate limit: a 429
// saying so (a gateway's, as the simulated one words it).
func RateLimitedRecord(r *runlog.Record) bool {
	return r.Status == 429 && strings.HasPrefix(r.Error, "rate limited")
}

// Add counts r if it was measured.
func (c *ClassCounter) Add(r *runlog.Record) {
	if r.Warmup || r.Priority < 0 {
		return
	}
	for len(c.rows) <= r.Priority {
		c.rows = append(c.rows, classAcc{})
	}
	a := &c.rows[r.Priority]
	limited := RateLimitedRecord(r)
	if limited {
		a.limited++
		c.limited++
	}
	if r.Priority > 0 || limited || r.Degraded != "" {
		c.gateway = true
	}
	if r.Retried {
		return // an attempt: its request's outcome is its last attempt
	}
	a.requests++
	if r.Degraded != "" {
		a.degraded++
		if c.degraded == nil {
			c.degraded = map[string]int{}
		}
		c.degraded[r.Degraded]++
	}
	if !r.OK() {
		a.failed++
		return
	}
	if !c.SLO.IsZero() && c.SLO.Met(r) {
		a.met++
	}
	if d, ok := r.TTFT(); ok {
		a.ttft.Add(float64(d) / 1e6)
	}
}

// Summary is the block; nil unless a record named a class above 0, was
// rate limited or degraded (a run without a gateway has none).
func (c *ClassCounter) Summary() *Classes {
	if !c.gateway {
		return nil
	}
	out := &Classes{Rows: make([]ClassRow, len(c.rows)), RateLimited: c.limited, Degraded: c.degraded}
	if !c.SLO.IsZero() {
		out.SLO = c.SLO.String()
	}
	for i := range c.rows {
		a := &c.rows[i]
		row := ClassRow{Class: i, Requests: a.requests, Failed: a.failed, RateLimited: a.limited, Degraded: a.degraded, TTFTN: a.ttft.Len()}
		if a.ttft.Len() > 0 {
			row.TTFTP50, row.TTFTP99 = p50P99(&a.ttft)
		}
		if a.requests > 0 {
			row.SLOMet = float64(a.met) / float64(a.requests)
		}
		out.Rows[i] = row
	}
	return out
}

// degradedLine is the degraded counts as "N (max_tokens N, ...)", the
// actions in a fixed order.
func (c *Classes) degradedLine() string {
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
func ClassesTerminal(w io.Writer, c *Classes) error {
	if c == nil {
		return nil
	}
	t := &term{}
	t.header(" Gateway ", '=')
	t.line("Rate-limited attempts:", fmt.Sprint(c.RateLimited))
	t.line("Degraded requests:", c.degradedLine())
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
func ClassesJSON(c *Classes) map[string]any {
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
