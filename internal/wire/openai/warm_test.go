package openai

import (
	"testing"
	"time"

	"github.com/goodput/goodput/internal/llamafake"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
)

// A request on a new connection is sent once the connection is in hand:
// the connect time is recorded apart, outside TTFT. After Warm, requests go
// out on the warmed connections and pay no connect at all.
func TestConnectOutsideTTFTAndWarm(t *testing.T) {
	s, err := llamafake.Start(llamafake.Config{Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	c, err := NewClient(wire.Config{BaseURL: s.URL, Model: "llamafake", MaxConns: 2, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(id string) runlog.Record {
		t.Helper()
		r := &wire.Request{ID: id, Prompt: "a b c", MaxTokens: 2}
		body, err := c.Body(r)
		if err != nil {
			t.Fatal(err)
		}
		rec := runlog.Record{Intended: now()}
		c.Stream(t.Context(), r, body, &rec)
		if !rec.OK() {
			t.Fatalf("%s: %s %s", id, rec.ErrorClass, rec.Error)
		}
		return rec
	}
	cold := send("cold")
	if cold.ConnectNs <= 0 || cold.Sent-cold.Intended < cold.ConnectNs {
		t.Errorf("cold request: connect %d ns, sent %d ns after it was due; want a connect, and the send after it", cold.ConnectNs, cold.Sent-cold.Intended)
	}

	c.CloseIdle()
	before := s.Stats().Conns
	n, err := c.Warm(t.Context(), 2)
	if err != nil || n != 2 {
		t.Fatalf("Warm(2) = %d, %v; want 2 connections", n, err)
	}
	if got := s.Stats().Conns - before; got != 2 {
		t.Errorf("Warm(2) dialled %d connections; want 2", got)
	}
	for _, id := range []string{"w1", "w2", "w3"} {
		if rec := send(id); rec.ConnectNs != 0 {
			t.Errorf("%s: connect %d ns; want none on a warmed connection", id, rec.ConnectNs)
		}
	}
	if got := s.Stats().Conns - before; got != 2 {
		t.Errorf("%d connections after warming and 3 requests; want the 2 warmed", got)
	}
	// Warming never asks for more connections than the server has slots
	// (it said them in /props): more would wait for an HTTP thread.
	c.CloseIdle()
	c.ContextLength(t.Context())
	c.CloseIdle()
	if n, err := c.Warm(t.Context(), 10); err != nil || n != 2 {
		t.Errorf("Warm(10) against 2 slots = %d, %v; want 2", n, err)
	}
	if st := s.Stats(); st.ThreadWaits != 0 {
		t.Errorf("%d connections waited for a server thread; want none", st.ThreadWaits)
	}
}

// Warming never asks for more connections than the pool may hold: one
// more would wait for the others, which are held until all have answered.
func TestWarmCappedAtPool(t *testing.T) {
	s, err := llamafake.Start(llamafake.Config{Slots: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := NewClient(wire.Config{BaseURL: s.URL, Model: "llamafake", MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Warm(t.Context(), 3); err != nil || n != 1 {
		t.Errorf("Warm(3) with a pool of 1 = %d, %v; want 1", n, err)
	}
}
