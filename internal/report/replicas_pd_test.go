package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
)

// pdRecord is a request prefilled on replica prefill and decoded on
// replica decode, its KV crossing in transferMs.
func pdRecord(prefill, decode int, transferMs int64) runlog.Record {
	r := replicaRecord(prefill, 100, 1000, 0)
	r.Server = &runlog.ServerTiming{PrefillNs: 100 * ms, DecodeNs: 10 * ms, KVTransferNs: transferMs * ms, DecodeReplica: decode}
	return r
}

// TestReplicasSplit: a 2:1 split's block from its records: prefill
// replicas 1 and 2 served 2 and 1 requests, decode replica 3 decoded all
// 3; the prefill pool is the less even (max 2, mean 1.5, imbalance 1.33;
// the decode pool's is 1). Transfers of 1, 2 and 3 ms: P50 2 ms.
func TestReplicasSplit(t *testing.T) {
	var c breakdown.ReplicaCounter
	for _, r := range []runlog.Record{pdRecord(1, 3, 1), pdRecord(1, 3, 2), pdRecord(2, 3, 3)} {
		c.Add(&r)
	}
	r := c.Summary()
	if r == nil || len(r.Rows) != 3 {
		t.Fatalf("Summary() = %+v; want three replicas", r)
	}
	r.SetReplicas("round-robin", []float64{0.1, 0.1, 0.5})
	r.SetRoles([]string{"prefill", "prefill", "decode"})
	if got := []int{r.Rows[0].Requests, r.Rows[1].Requests, r.Rows[2].Requests}; got[0] != 2 || got[1] != 1 || got[2] != 3 {
		t.Errorf("requests %v; want 2 1 3", got)
	}
	if r.MaxRequests != 2 || r.MeanRequests != 1.5 || r.Imbalance != 2/1.5 {
		t.Errorf("max %d, mean %v, imbalance %v; want 2, 1.5, 1.33", r.MaxRequests, r.MeanRequests, r.Imbalance)
	}
	if x := r.Transfer; x == nil || x.N != 3 || x.P50 != 2 {
		t.Errorf("transfer %+v; want 3 requests, P50 2 ms", x)
	}
	var b bytes.Buffer
	if err := ReplicasTerminal(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KV transfer P50 / P99 (ms):", "Role     Replica", "decode   3        3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("terminal block lacks %q:\n%s", want, b.String())
		}
	}
	m := ReplicasJSON(r)
	if m["kv_transfer"] == nil || m["per_replica"].([]map[string]any)[2]["role"] != "decode" {
		t.Errorf("JSON %v; want kv_transfer and replica 3's role", m)
	}
	// Without a split: no roles, no transfer.
	var plain breakdown.ReplicaCounter
	for _, r := range []runlog.Record{replicaRecord(1, 100, 10, 0), replicaRecord(2, 100, 10, 0)} {
		plain.Add(&r)
	}
	if p := plain.Summary(); p.Transfer != nil || p.Rows[0].Role != "" || ReplicasJSON(p)["kv_transfer"] != nil {
		t.Errorf("a colocated block has a split's figures: %+v", p)
	}
}
