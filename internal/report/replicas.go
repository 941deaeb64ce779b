package report

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/breakdown"
)

func init() { RegisterSection("replicas", ReplicasTerminal, ReplicasJSON, exampleReplicas) }

// exampleReplicas is a cluster's Replicas block with every figure known.
func exampleReplicas(breakdown.Options) *breakdown.Replicas {
	row := breakdown.ReplicaRow{Replica: 1, Requests: 1, TTFTN: 1, KVPeak: 1}
	return &breakdown.Replicas{Router: "x", Rows: []breakdown.ReplicaRow{row}, MaxRequests: 1, MeanRequests: 1, Imbalance: 1,
		Autoscale: &breakdown.Autoscale{Timeline: []breakdown.ScalePoint{{}}}}
}

// ReplicasTerminal writes the Replicas block: the imbalance, then one row
// per replica; nothing for nil (a run of one engine).
func ReplicasTerminal(w io.Writer, r *breakdown.Replicas) error {
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
	if x := r.Transfer; x != nil {
		t.line("KV transfer P50 / P99 (ms):", fmt.Sprintf("%s / %s (%d requests)", f2(x.P50), f2(x.P99), x.N))
	}
	roles := len(r.Rows) > 0 && r.Rows[0].Role != ""
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	pooled := false
	for _, row := range r.Rows {
		pooled = pooled || row.Pool != ""
	}
	if roles {
		fmt.Fprint(tw, "Role\t")
	}
	if pooled {
		fmt.Fprint(tw, "Replica\tPool\t")
	} else {
		fmt.Fprint(tw, "Replica\t")
	}
	fmt.Fprintln(tw, "Requests\tFailed\tTTFT P50\tTTFT P99\tCached %\tKV peak %")
	for _, row := range r.Rows {
		if roles {
			fmt.Fprintf(tw, "%s\t", row.Role)
		}
		if pooled {
			fmt.Fprintf(tw, "%d\t%s\t", row.Replica, row.Pool)
		} else {
			fmt.Fprintf(tw, "%d\t", row.Replica)
		}
		fmt.Fprintln(tw, replicaFigures(row.Requests, row.Failed, row.TTFTN, row.TTFTP50, row.TTFTP99, row.CachedShare, row.KVPeak))
	}
	// Flush only fails if its writer does, and that is a bytes.Buffer.
	_ = tw.Flush()
	if len(r.Pools) > 0 {
		t.b.WriteString("Per pool:\n")
		tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "Pool\tReplicas\tRequests\tFailed\tTTFT P50\tTTFT P99\tCached %\tKV peak %")
		for _, p := range r.Pools {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Pool, p.Replicas, replicaFigures(p.Requests, p.Failed, p.TTFTN, p.TTFTP50, p.TTFTP99, p.CachedShare, p.KVPeak))
		}
		_ = tw.Flush()
	}
	if r.Autoscale != nil {
		autoscaleTerminal(t, r.Autoscale)
	}
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// replicaFigures are a replica's or a pool's columns, tab-separated: "-"
// for a figure not known.
func replicaFigures(requests, failed, ttftN int, p50, p99, cached, kvPeak float64) string {
	ps50, ps99 := "-", "-"
	if ttftN > 0 {
		ps50, ps99 = f2(p50), f2(p99)
	}
	kv := "-"
	if kvPeak >= 0 {
		kv = f2(100 * kvPeak)
	}
	return fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s", requests, failed, ps50, ps99, f2(100*cached), kv)
}

// ReplicasJSON is the block for the result JSON; nil for nil. A figure
// not known (no TTFT, a KV peak a report of records cannot know) is left
// out of its replica's object.
func ReplicasJSON(r *breakdown.Replicas) map[string]any {
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
		if row.Pool != "" {
			m["pool"] = row.Pool
		}
		if row.Role != "" {
			m["role"] = row.Role
		}
		rows[i] = m
	}
	m := map[string]any{"count": len(r.Rows), "max_requests": r.MaxRequests, "mean_requests": r.MeanRequests,
		"imbalance": r.Imbalance, "per_replica": rows}
	if len(r.Pools) > 0 {
		pools := make([]map[string]any, len(r.Pools))
		for i, p := range r.Pools {
			pm := map[string]any{"pool": p.Pool, "replicas": p.Replicas, "requests": p.Requests, "failed": p.Failed, "cached_share": p.CachedShare}
			if p.TTFTN > 0 {
				pm["median_ttft_ms"], pm["p99_ttft_ms"] = p.TTFTP50, p.TTFTP99
			}
			if p.KVPeak >= 0 {
				pm["kv_peak"] = p.KVPeak
			}
			pools[i] = pm
		}
		m["per_pool"] = pools
	}
	if r.Router != "" {
		m["router"] = r.Router
	}
	if r.Autoscale != nil {
		m["autoscale"] = autoscaleJSON(r.Autoscale)
	}
	if x := r.Transfer; x != nil {
		m["kv_transfer"] = map[string]any{"count": x.N, "median_ms": x.P50, "p99_ms": x.P99}
	}
	return m
}
