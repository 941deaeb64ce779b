package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
)

// worstClock is the shard whose clock is furthest from the target's, and
// the spread between the shards' offsets (ns); ok is false when no shard
// measured its clock.
func worstClock(rows []breakdown.ShardRow) (worst breakdown.ShardRow, spread int64, ok bool) {
	var lo, hi int64
	for _, r := range rows {
		c := r.Clock
		if c == nil {
			continue
		}
		if !ok || abs64(c.OffsetNs) > abs64(worst.Clock.OffsetNs) {
			worst = r
		}
		if !ok {
			lo, hi = c.OffsetNs, c.OffsetNs
		}
		lo, hi, ok = min(lo, c.OffsetNs), max(hi, c.OffsetNs), true
	}
	return worst, hi - lo, ok
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// msText is ns as milliseconds, e.g. "12.35 ms".
func msText(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e6, 'f', 2, 64) + " ms"
}

// signedMs is ns as signed milliseconds, e.g. "+0.41".
func signedMs(ns int64) string {
	s := strconv.FormatFloat(float64(ns)/1e6, 'f', 2, 64)
	if ns >= 0 {
		s = "+" + s
	}
	return s
}

// ShardsTerminal prints the shards of a run split over several processes:
// a head line (how many are in, the shared start, the worst clock offset)
// and a row per shard with its records against its share, whether it
// ended, its send lag, its client's CPU and its clock; then a line for
// each shard missing, short or client-bound. Nothing without rows.
func ShardsTerminal(w io.Writer, rows []breakdown.ShardRow) error {
	if len(rows) == 0 {
		return nil
	}
	count, present := rows[0].Count, 0
	var start time.Time
	for _, r := range rows {
		if !r.Missing {
			present++
		}
		if start.IsZero() && !r.StartAt.IsZero() {
			start = r.StartAt
		}
	}
	head := fmt.Sprintf("Shards: %d of %d in these figures", present, count)
	if len(rows) == 1 && count > 1 && rows[0].Name == "" && !rows[0].Missing {
		// A shard's own run, before any merge.
		head = fmt.Sprintf("Shard %d of %d: these figures are its share only (goodput report merges the shards' records)", rows[0].Index, count)
	}
	if !start.IsZero() {
		head += "; schedule started at " + start.UTC().Format(time.RFC3339Nano)
	} else {
		head += "; no shared start (each shard started on its own)"
	}
	fmt.Fprintln(w, head)
	if worst, spread, ok := worstClock(rows); ok {
		fmt.Fprintf(w, "Clock offsets against the target: worst %s ± %s (shard %d), spread %s between shards (Date header, 1 s resolution narrowed by %d samples)\n",
			signedMs(worst.Clock.OffsetNs)+" ms", msText(worst.Clock.ErrorNs), worst.Index, msText(spread), worst.Clock.Samples)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  shard\trecords\tof share\tsent\tended\tsend lag ms P50/P99/max\tclient CPU\tclock offset ms")
	for _, r := range rows {
		if r.Missing {
			fmt.Fprintf(tw, "  %d\t-\t-\t-\t-\tmissing\t\t\n", r.Index)
			continue
		}
		share, sent, ended := "?", "?", "no"
		if r.ExpectedSessions > 0 {
			share = strconv.Itoa(r.ExpectedSessions) + " sessions"
		} else if r.Expected > 0 {
			share = strconv.Itoa(r.Expected)
		}
		if r.Sent >= 0 {
			sent = strconv.Itoa(r.Sent)
		}
		if r.Ended {
			ended = "yes"
		}
		lag := "-"
		if r.SendLag.N > 0 {
			p50, _ := r.SendLag.P(50)
			p99, ok := r.SendLag.P(99)
			if !ok {
				p99 = r.SendLag.Max
			}
			lag = f2(p50) + "/" + f2(p99) + "/" + f2(r.SendLag.Max)
		}
		cpu := "-"
		if r.ClientCPU > 0 {
			cpu = strconv.FormatFloat(100*r.ClientCPU, 'f', 1, 64) + " %"
		}
		if r.ClientBound {
			cpu += " CLIENT-BOUND"
		}
		clock := "-"
		if c := r.Clock; c != nil {
			clock = signedMs(c.OffsetNs) + " ± " + strconv.FormatFloat(float64(c.ErrorNs)/1e6, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, r.Records, share, sent, ended, lag, cpu, clock)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		unit, want := "requests", r.Expected
		if r.ExpectedSessions > 0 {
			unit, want = "sessions", r.ExpectedSessions
		}
		switch {
		case r.Missing:
			fmt.Fprintf(w, "  shard %d: missing — no records file of it, so its share of the load is not in these figures\n", r.Index)
		case r.Short > 0 && want > 0:
			why := "it stopped early"
			if !r.Ended {
				why = "no end line: it stopped before its end"
			}
			fmt.Fprintf(w, "  shard %d: %d of its %d %s short (%s; %s)\n", r.Index, r.Short, want, unit, pctText(float64(r.Short)/float64(want)), why)
		case !r.Ended:
			fmt.Fprintf(w, "  shard %d: no end line: it stopped before its end; its %d finished records are in\n", r.Index, r.Records)
		}
		if r.ClientBound {
			fmt.Fprintf(w, "  shard %d: CLIENT-BOUND: its load generator could not keep its schedule; its requests describe its client, not the server\n", r.Index)
		}
	}
	fmt.Fprintln(w)
	return nil
}

// ShardsJSON is the shards for the result JSON: the count and shards
// present, the shared start, the worst clock offset and each shard's row
// (nil without rows).
func ShardsJSON(rows []breakdown.ShardRow) map[string]any {
	if len(rows) == 0 {
		return nil
	}
	present := 0
	out := make([]map[string]any, 0, len(rows))
	var start time.Time
	for _, r := range rows {
		m := map[string]any{"index": r.Index, "missing": r.Missing}
		if !r.Missing {
			present++
			m["file"], m["ended"], m["records"], m["short"] = r.Name, r.Ended, r.Records, r.Short
			if r.Sent >= 0 {
				m["sent"] = r.Sent
			}
			if r.Expected > 0 {
				m["expected"] = r.Expected
			}
			if r.ExpectedSessions > 0 {
				m["expected_sessions"], m["sessions"] = r.ExpectedSessions, r.Sessions
			}
			if r.SendLag.N > 0 {
				p50, _ := r.SendLag.P(50)
				p99, ok := r.SendLag.P(99)
				if !ok {
					p99 = r.SendLag.Max
				}
				m["send_lag_p50_ms"], m["send_lag_p99_ms"], m["send_lag_max_ms"] = round3(p50), round3(p99), round3(r.SendLag.Max)
			}
			if r.ClientCPU > 0 {
				m["client_cpu"] = round3(r.ClientCPU)
			}
			m["client_bound"] = r.ClientBound
			if c := r.Clock; c != nil {
				m["clock_offset_ms"], m["clock_error_ms"], m["clock_samples"] = round3(float64(c.OffsetNs)/1e6), round3(float64(c.ErrorNs)/1e6), c.Samples
			}
			m["delayed_arrivals"] = r.DelayedArrivals
		}
		if start.IsZero() && !r.StartAt.IsZero() {
			start = r.StartAt
		}
		out = append(out, m)
	}
	doc := map[string]any{"count": rows[0].Count, "present": present, "shards": out}
	if !start.IsZero() {
		doc["start_at"] = start.UTC().Format(time.RFC3339Nano)
	}
	if worst, spread, ok := worstClock(rows); ok {
		doc["worst_clock_offset_ms"], doc["worst_clock_error_ms"], doc["worst_clock_shard"] = round3(float64(worst.Clock.OffsetNs)/1e6),
			round3(float64(worst.Clock.ErrorNs)/1e6), worst.Index
		doc["clock_offset_spread_ms"] = round3(float64(spread) / 1e6)
	}
	return doc
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
