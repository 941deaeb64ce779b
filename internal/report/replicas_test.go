package report

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
)

// replicaRecord is a successful request on replica rep with a TTFT of
// ttftMs, prompt tokens of which cached came from the cache.
func replicaRecord(rep int, ttftMs int64, prompt, cached int) runlog.Record {
	return runlog.Record{ID: "r", Replica: rep, Sent: 0, End: (ttftMs + 10) * ms, Status: 200, PromptTokens: prompt, CachedTokens: cached,
		CompletionTokens: 2, Chunks: []runlog.Chunk{chunk(ttftMs, 1, true), chunk(ttftMs+10, 1, true)}}
}

// The Replicas block of a hand-made three-replica run (replica 3 served
// nothing, which only the run knows): 4 + 2 + 0 requests, mean 2, max 4,
// imbalance 2.
func TestReplicasGolden(t *testing.T) {
	var c breakdown.ReplicaCounter
	for _, r := range []runlog.Record{
		replicaRecord(1, 100, 1000, 800), replicaRecord(1, 200, 1000, 800), replicaRecord(1, 300, 1000, 0), replicaRecord(2, 50, 500, 250),
		replicaRecord(2, 70, 500, 250),
		{ID: "w", Replica: 2, Warmup: true, Status: 200},                  // a warm-up counts nowhere
		{ID: "x", Replica: 1, Status: 429, ErrorClass: runlog.ErrHTTP429}, // a failure counts, without TTFT
		{ID: "y", Status: 200},                                            // outside a cluster
	} {
		c.Add(&r)
	}
	r := c.Summary()
	if r == nil || len(r.Rows) != 2 {
		t.Fatalf("Summary() = %+v; want two replicas", r)
	}
	r.SetReplicas("least-outstanding", []float64{0.5, 0.25, 0})
	if r.MaxRequests != 4 || r.MeanRequests != 2 || r.Imbalance != 2 {
		t.Errorf("max %d, mean %v, imbalance %v; want 4, 2, 2", r.MaxRequests, r.MeanRequests, r.Imbalance)
	}
	// Replica 1's TTFTs 100, 200, 300 ms: P50 200, P99 298 (numpy's linear
	// interpolation); 1,600 of 3,000 prompt tokens cached.
	if row := r.Rows[0]; row.TTFTP50 != 200 || math.Abs(row.TTFTP99-298) > 1e-9 || row.Failed != 1 || math.Abs(row.CachedShare-1600.0/3000) > 1e-12 {
		t.Errorf("replica 1 %+v; want P50 200, P99 298, 1 failed, cached 0.533", row)
	}
	var b bytes.Buffer
	if err := ReplicasTerminal(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "replicas.golden", b.Bytes())
	js, err := json.MarshalIndent(ReplicasJSON(r), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "replicas.golden.json", append(js, '\n'))

	// A report of the records alone: no router, no KV peaks, two replicas.
	b.Reset()
	if err := ReplicasTerminal(&b, c.Summary()); err != nil {
		t.Fatal(err)
	}
	golden(t, "replicas_records.golden", b.Bytes())
}

// One replica, or none, renders nothing.
func TestReplicasOnlyForClusters(t *testing.T) {
	var c breakdown.ReplicaCounter
	one := replicaRecord(1, 10, 10, 0)
	c.Add(&one)
	if r := c.Summary(); r != nil {
		t.Errorf("Summary() of one replica = %+v; want nil", r)
	}
	var b bytes.Buffer
	if err := ReplicasTerminal(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("ReplicasTerminal(nil) wrote %q, %v", b.String(), err)
	}
	if ReplicasJSON(nil) != nil {
		t.Error("ReplicasJSON(nil) is not nil")
	}
	var none *breakdown.Replicas
	none.SetReplicas("round-robin", []float64{1}) // no panic
}

// The Replicas block of a cluster of two pools, a (replicas 1 and 2) and
// b (3 and 4), subtotalled by hand: pool a's TTFTs 100, 200 (replica 1)
// and 300 ms (replica 2) give P50 200 and P99 298, 1,600 of its 3,000
// prompt tokens cached, KV peak max(0.5, 0.3); pool b's 50 and 70 ms
// give P50 60 and P99 69.8, 500 of 1,000 cached, KV peak max(0.25, 0.1).
func TestReplicasPools(t *testing.T) {
	var c breakdown.ReplicaCounter
	for _, r := range []runlog.Record{
		replicaRecord(1, 100, 1000, 800), replicaRecord(1, 200, 1000, 800), replicaRecord(2, 300, 1000, 0),
		replicaRecord(3, 50, 500, 250), replicaRecord(4, 70, 500, 250),
		{ID: "x", Replica: 2, Status: 429, ErrorClass: runlog.ErrHTTP429},
	} {
		c.Add(&r)
	}
	r := c.Summary()
	r.SetPools([]string{"a", "a", "b", "b"})
	r.SetReplicas("least-outstanding", []float64{0.5, 0.3, 0.25, 0.1})
	want := []breakdown.PoolRow{
		{Pool: "a", Replicas: 2, Requests: 4, Failed: 1, TTFTN: 3, TTFTP50: 200, TTFTP99: 298, CachedShare: 1600.0 / 3000, KVPeak: 0.5},
		{Pool: "b", Replicas: 2, Requests: 2, TTFTN: 2, TTFTP50: 60, TTFTP99: 69.8, CachedShare: 0.5, KVPeak: 0.25},
	}
	if diff := cmp.Diff(want, r.Pools, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Pools (-want +got):\n%s", diff)
	}
	var b bytes.Buffer
	if err := ReplicasTerminal(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "replicas_pools.golden", b.Bytes())
	js, err := json.MarshalIndent(ReplicasJSON(r), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "replicas_pools.golden.json", append(js, '\n'))

	// One pool only: each replica names it, no subtotals (they would be
	// the block's own figures).
	r = c.Summary()
	r.SetPools([]string{"a", "a", "a", "a"})
	if r.Pools != nil || r.Rows[3].Pool != "a" {
		t.Errorf("one pool: Pools = %+v, replica 4's pool %q; want none, a", r.Pools, r.Rows[3].Pool)
	}
	// A KV peak not known in a pool leaves the pool's unknown.
	r = c.Summary()
	r.SetPools([]string{"a", "a", "b", "b"})
	if r.Pools[0].KVPeak != -1 {
		t.Errorf("pool a's KV peak without the run's = %v; want -1", r.Pools[0].KVPeak)
	}
}
