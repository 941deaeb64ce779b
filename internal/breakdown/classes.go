package breakdown

import (
	"strings"

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

// Rank is the block's place among a level's breakdowns.
func (*Classes) Rank() int { return RankClasses }

func init() {
	Register(func(o Options) Accumulator { return &ClassCounter{SLO: o.SLO} })
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

// Breakdown is Summary as a Breakdown (nil without a gateway).
func (c *ClassCounter) Breakdown() Breakdown {
	if out := c.Summary(); out != nil {
		return out
	}
	return nil
}
