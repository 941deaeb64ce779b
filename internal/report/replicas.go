package report

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Replicas is how a simulated cluster's requests spread over its replicas
// (records' Replica): each replica's requests, TTFT and cache hits, and
// the routing imbalance.
type Replicas struct {
	// Router is the routing policy ("" when not known, as in a report of
	// records).
	Router string
	// Rows are the replicas in order, replica i+1 at i.
	Rows []ReplicaRow
	// MaxRequests is the most requests one replica served, MeanRequests
	// the mean over the replicas and Imbalance their ratio (1: even).
	MaxRequests  int
	MeanRequests float64
	Imbalance    float64
	// Autoscale is what the cluster's autoscaler did (nil: none, or a
	// report of records, which do not carry it).
	Autoscale *Autoscale
}

// ReplicaRow is one replica's share of a level.
type ReplicaRow struct {
	// Replica is its number, from 1.
	Replica int
	// Requests counts the measured requests it served (warm-ups aside);
	// Failed those that failed.
	Requests, Failed int
	// TTFTN counts its requests with a TTFT; TTFTP50 and TTFTP99 are their
	// percentiles, ms.
	TTFTN            int
	TTFTP50, TTFTP99 float64
	// CachedShare is the share of its successful requests' prompt tokens
	// served from its prefix cache.
	CachedShare float64
	// KVPeak is the highest KV cache usage it reached (0..1), or -1 when
	// not known: a report of records, which do not carry it.
	KVPeak float64
}

// ReplicaCounter collects a level's records by replica, for the Replicas
// block. The zero value is ready; it keeps one TTFT per record.
type ReplicaCounter struct {
	rows []replicaAcc
}

type replicaAcc struct {
	requests, failed int
	ttft             []float64 // ms
	prompt, cached   int64
}

// Add counts r if a replica served it (Replica > 0) and it was measured.
func (c *ReplicaCounter) Add(r *runlog.Record) {
	if r.Replica <= 0 || r.Warmup {
		return
	}
	for len(c.rows) < r.Replica {
		c.rows = append(c.rows, replicaAcc{})
	}
	a := &c.rows[r.Replica-1]
	a.requests++
	if !r.OK() {
		a.failed++
		return
	}
	if d, ok := r.TTFT(); ok {
		a.ttft = append(a.ttft, float64(d)/1e6)
	}
	a.prompt += int64(r.PromptTokens)
	a.cached += int64(r.CachedTokens)
}

// Summary is the block's figures over replicas 1 to the highest seen
// (replicas given nothing after it are not known from records: see
// SetReplicas); nil unless a record named a replica above 1.
func (c *ReplicaCounter) Summary() *Replicas {
	if len(c.rows) < 2 {
		return nil
	}
	out := &Replicas{Rows: make([]ReplicaRow, len(c.rows))}
	for i := range c.rows {
		a := &c.rows[i]
		row := ReplicaRow{Replica: i + 1, Requests: a.requests, Failed: a.failed, TTFTN: len(a.ttft), KVPeak: -1}
		if len(a.ttft) > 0 {
			m := stats.SummarizeValues(stats.MetricTTFT, []float64{50, 99}, a.ttft)
			row.TTFTP50, _ = m.P(50)
			row.TTFTP99, _ = m.P(99)
		}
		if a.prompt > 0 {
			row.CachedShare = float64(a.cached) / float64(a.prompt)
		}
		out.Rows[i] = row
	}
	out.balance()
	return out
}

// SetReplicas completes r with what the run itself knew: the router, and
// each replica's KV peak (kvPeaks[i] for replica i+1), which also says
// how many replicas there were, so replicas that served nothing count in
// the mean. A nil r stays nil.
func (r *Replicas) SetReplicas(router string, kvPeaks []float64) {
	if r == nil {
		return
	}
	r.Router = router
	for len(r.Rows) < len(kvPeaks) {
		r.Rows = append(r.Rows, ReplicaRow{Replica: len(r.Rows) + 1, KVPeak: -1})
	}
	for i, p := range kvPeaks {
		r.Rows[i].KVPeak = p
	}
	r.balance()
}

// balance sets the imbalance figures from the rows.
func (r *Replicas) balance() {
	total := 0
	r.MaxRequests = 0
	for _, row := range r.Rows {
		total += row.Requests
		r.MaxRequests = max(r.MaxRequests, row.Requests)
	}
	r.MeanRequests = float64(total) / float64(len(r.Rows))
	r.Imbalance = 0
	if total > 0 {
		r.Imbalance = float64(r.MaxRequests) / r.MeanRequests
	}
}

// ReplicasTerminal writes the Replicas block: the imbalance, then one row
// per replica; nothing for nil (a run of one engine).
func ReplicasTerminal(w io.Writer, r *Replicas) error {
	if r == nil {
		return nil
	}
	t := &term{}
	t.header(" Replicas ", '=')
	if r.Router != "" {
		t.line("Replicas, router:", fmt.Sprintf("%d, %s", len(r.Rows), r.Router))
	} else {
		t.line("Replicas:", strconv.Itoa(len(r.Rows)))
	}
	t.line("Requests per replica max / mean:", fmt.Sprintf("%d / %s (imbalance %s)", r.MaxRequests, f2(r.MeanRequests), f2(r.Imbalance)))
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Replica\tRequests\tFailed\tTTFT P50\tTTFT P99\tCached %\tKV peak %")
	for _, row := range r.Rows {
		p50, p99 := "-", "-"
		if row.TTFTN > 0 {
			p50, p99 = f2(row.TTFTP50), f2(row.TTFTP99)
		}
		kv := "-"
		if row.KVPeak >= 0 {
			kv = f2(100 * row.KVPeak)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\n", row.Replica, row.Requests, row.Failed, p50, p99, f2(100*row.CachedShare), kv)
	}
	// Flush only fails if its writer does, and that is a bytes.Buffer.
	_ = tw.Flush()
	if r.Autoscale != nil {
		autoscaleTerminal(t, r.Autoscale)
	}
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// ReplicasJSON is the block for the result JSON; nil for nil. A figure
// not known (no TTFT, a KV peak a report of records cannot know) is left
// out of its replica's object.
func ReplicasJSON(r *Replicas) map[string]any {
	if r == nil {
		return nil
	}
	rows := make([]map[string]any, len(r.Rows))
	for i, row := range r.Rows {
		m := map[string]any{"replica": row.Replica, "requests": row.Requests, "failed": row.Failed, "cached_share": row.CachedShare}
		if row.TTFTN > 0 {
			m["median_ttft_ms"], m["p99_ttft_ms"] = row.TTFTP50, row.TTFTP99
		}
		if row.KVPeak >= 0 {
			m["kv_peak"] = row.KVPeak
		}
		rows[i] = m
	}
	m := map[string]any{"count": len(r.Rows), "max_requests": r.MaxRequests, "mean_requests": r.MeanRequests,
		"imbalance": r.Imbalance, "per_replica": rows}
	if r.Router != "" {
		m["router"] = r.Router
	}
	if r.Autoscale != nil {
		m["autoscale"] = autoscaleJSON(r.Autoscale)
	}
	return m
}
