package simserve_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestFleetReplicaOnRecords sends requests one after the other through
// goodput's own client to a round-robin fleet of 3 on loopback: the
// records name the replicas 1, 2, 3, 1 (engine "0", "1", "2", "0" plus
// one, as records number them), read from the answer's replica header,
// streamed or whole.
func TestFleetReplicaOnRecords(t *testing.T) {
	cfg := cluster.Config{Router: cluster.Router{Policy: cluster.PolicyRoundRobin},
		Replicas: []sim.Config{sim.DefaultConfig(), sim.DefaultConfig(), sim.DefaultConfig()}}
	for _, noStream := range []bool{false, true} {
		s, err := simserve.NewFleet(cfg, simserve.Options{})
		if err != nil {
			t.Fatal(err)
		}
		url, stop, err := s.Start(context.Background(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := openai.NewClient(wire.Config{BaseURL: url, Endpoint: "/v1/completions", IgnoreEOS: true, NoStream: noStream})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, id := range []string{"a", "b", "c", "d"} {
			req := &wire.Request{ID: id, MaxTokens: 3, Prompt: "hello there"}
			body, err := c.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			var rec runlog.Record
			c.Stream(context.Background(), req, body, &rec)
			if !rec.OK() {
				t.Fatalf("request %s failed: %s %s", id, rec.ErrorClass, rec.Error)
			}
			got = append(got, rec.Replica)
		}
		c.Close()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{1, 2, 3, 1}, got); diff != "" {
			t.Errorf("no-stream %v: records' replicas (-want +got):\n%s", noStream, diff)
		}
	}
	if wire.ReplicaHeader != simserve.ReplicaHeader {
		t.Errorf("client reads %q, server sends %q", wire.ReplicaHeader, simserve.ReplicaHeader)
	}
	if wire.HeaderSession != simserve.SessionHeader {
		t.Errorf("client sends the session as %q, the server's router reads %q", wire.HeaderSession, simserve.SessionHeader)
	}
}
