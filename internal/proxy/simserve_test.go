package proxy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/anthropic"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestThroughSimulator measures requests to the embedded simulated server
// through the proxy with goodput's own client, and checks the proxy saw the
// same tokens the client did, and no later.
func TestThroughSimulator(t *testing.T) {
	ctx := context.Background()
	upURL, stop, err := simserve.Start(ctx, "127.0.0.1:0", sim.DefaultConfig(), simserve.Options{})
	if err != nil {
		t.Skipf("simulated server unavailable: %v", err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("simserve stop: %v", err)
		}
	}()
	h := newHarness(t, nil, func(o *Options) { o.Upstream = upURL })
	for _, proto := range []wire.Protocol{openai.Completions, openai.ChatCompletions, openai.Responses, anthropic.Messages, openai.Embeddings} {
		endpoint := proto.Path()
		t.Run(endpoint, func(t *testing.T) {
			c, err := openai.NewClient(wire.Config{BaseURL: h.front.URL, Protocol: proto, ContinuousUsage: true, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			models, err := c.Models(ctx)
			if err != nil || len(models) == 0 {
				t.Fatalf("models through the proxy: %v %v", models, err)
			}
			c.SetModel(models[0].ID)
			before := len(h.records())
			req := &wire.Request{ID: "sim-" + endpoint, Prompt: "hello there general kenobi", MaxTokens: 12}
			body, err := c.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			var client runlog.Record
			c.Stream(ctx, req, body, &client)
			want := 12
			if !proto.Streams() {
				want = 0 // embeddings generate nothing
			}
			if !client.OK() || client.CompletionTokens != want {
				t.Fatalf("client record: %s %s, %d tokens; want ok, %d", client.ErrorClass, client.Error, client.CompletionTokens, want)
			}
			got := h.waitRecords(before + 1)[before]
			if diff := cmp.Diff(shapeOf(&client), shapeOf(&got)); diff != "" {
				t.Errorf("proxy record differs from the client's (-client +proxy):\n%s", diff)
			}
			if got.Embeddings != client.Embeddings || got.PromptTokens == 0 {
				t.Errorf("proxy record: %d embeddings, %d prompt tokens; client's %d embeddings", got.Embeddings, got.PromptTokens, client.Embeddings)
			}
			// The proxy sends after the client and sees each chunk before
			// it: its TTFT and E2E can only be shorter.
			pt, _ := got.TTFT()
			ct, _ := client.TTFT()
			pe, _ := got.E2E()
			ce, _ := client.E2E()
			if pt > ct || pe > ce {
				t.Errorf("proxy TTFT, E2E = %v, %v; client's %v, %v: the proxy cannot be later", pt, pe, ct, ce)
			}
		})
	}
}

// Through a simulated fleet the proxy's records name the replica that
// answered (wire.ReplicaHeader), as the client's do: round-robin over
// two replicas serves four requests on 1, 2, 1, 2.
func TestThroughFleet(t *testing.T) {
	srv, err := simserve.NewFleet(cluster.Config{Replicas: []sim.Config{sim.DefaultConfig(), sim.DefaultConfig()}}, simserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	upURL, stop, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Skipf("simulated fleet unavailable: %v", err)
	}
	defer func() { _ = stop() }()
	h := newHarness(t, nil, func(o *Options) { o.Upstream = upURL })
	c, err := openai.NewClient(wire.Config{BaseURL: h.front.URL, Protocol: openai.Completions, Model: srv.Model(), IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var proxied, direct []int
	for i := range 4 {
		req := &wire.Request{ID: fmt.Sprintf("f%d", i), Prompt: "hello there", MaxTokens: 4}
		body, err := c.Body(req)
		if err != nil {
			t.Fatal(err)
		}
		var rec runlog.Record
		c.Stream(context.Background(), req, body, &rec)
		direct = append(direct, rec.Replica)
		proxied = append(proxied, h.waitRecords(i + 1)[i].Replica)
	}
	if want := []int{1, 2, 1, 2}; !slices.Equal(proxied, want) || !slices.Equal(direct, want) {
		t.Errorf("replicas: proxy %v, client %v; want %v", proxied, direct, want)
	}
}
