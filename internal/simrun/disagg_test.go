package simrun

import (
	"context"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

var _ cluster.Fleet = (*cluster.Disagg)(nil)

// TestDisaggRecords: a run on a 2:2 split gives each record its prefill
// replica (1 or 2), its decode replica (3 or 4) and its KV transfer; the
// TTFT is the engine's queue + prefill on the prefill side (the first
// token comes from there), the end is the decode side's last token
// (queue + prefill + decode, decode_ns running from the first token), and
// every token arrives.
func TestDisaggRecords(t *testing.T) {
	cfg := cluster.Config{Disagg: &cluster.Disaggregation{Prefill: 2}}
	for range 4 {
		cfg.Replicas = append(cfg.Replicas, sim.DefaultConfig())
	}
	g, err := cluster.NewDisagg(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ds := sharedPrefixes(t, 100, 2048, 32, 0, 1)
	load := Load{Level: runlog.Level{RequestRate: 20, Burstiness: 1, NumPrompts: 100}, Seed: 3}
	var recs []*runlog.Record
	res, err := RunCluster(context.Background(), g, ds, load, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 100 || len(res.Replicas) != 4 {
		t.Fatalf("completed %d, %d replicas; want 100, 4", res.Completed, len(res.Replicas))
	}
	for _, r := range recs {
		s := r.Server
		if !r.OK() || s == nil {
			t.Fatalf("record %s: %+v", r.ID, r)
		}
		ttft, _ := r.TTFT()
		switch {
		case r.Replica < 1 || r.Replica > 2 || s.DecodeReplica < 3 || s.DecodeReplica > 4:
			t.Errorf("%s: replica %d, decode replica %d; want 1–2 and 3–4", r.ID, r.Replica, s.DecodeReplica)
		case s.KVTransferNs <= 0 || s.KVTransferNs >= s.DecodeNs:
			t.Errorf("%s: transfer %d of decode %d; want 0 < transfer < decode", r.ID, s.KVTransferNs, s.DecodeNs)
		case ttft != time.Duration(s.QueueNs+s.PrefillNs):
			t.Errorf("%s: TTFT %v; want queue + prefill %v", r.ID, ttft, time.Duration(s.QueueNs+s.PrefillNs))
		case r.End-r.Sent != s.QueueNs+s.PrefillNs+s.DecodeNs:
			t.Errorf("%s: E2E %d; want queue + prefill + decode %d", r.ID, r.End-r.Sent, s.QueueNs+s.PrefillNs+s.DecodeNs)
		case r.CompletionTokens != r.MaxTokens && r.FinishReason == "length":
			t.Errorf("%s: %d tokens of %d", r.ID, r.CompletionTokens, r.MaxTokens)
		}
	}
}
