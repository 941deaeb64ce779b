package shard

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The rendezvous sets one start once every shard has checked in, and every
// shard learns the same start and run name.
func TestRendezvous(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the port, for shard 0 to listen on
	const n = 4
	starts := make([]time.Time, n)
	runs := make([]string, n)
	errs := make([]error, n)
	var stops []func()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i > 0 {
				time.Sleep(time.Duration(i) * 30 * time.Millisecond) // shard 0 may come up last or first
			}
			at, run, stop, err := Rendezvous(context.Background(), &Shard{Index: i, Count: n, Rendezvous: addr, RendezvousTimeout: 20 * time.Second}, "r"+strconv.Itoa(n), func(string) {})
			starts[i], runs[i], errs[i] = at, run, err
			mu.Lock()
			stops = append(stops, stop)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, stop := range stops {
		if stop != nil {
			stop()
		}
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if !starts[i].Equal(starts[0]) || runs[i] != runs[0] || runs[i] == "" {
			t.Errorf("shard %d: start %v run %q; shard 0's %v %q", i, starts[i], runs[i], starts[0], runs[0])
		}
	}
	if d := time.Until(starts[0]); d <= 0 || d > RendezvousLead {
		t.Errorf("start in %v; want within the lead %v", d, RendezvousLead)
	}
	// A shard told another count is refused at once, not left waiting.
	srv := httptest.NewServer(newRendezvous(3, time.Second, "r", time.Now))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := joinRendezvous(ctx, srv.URL+rendezvousPath, 1, 2); err == nil || !strings.Contains(err.Error(), "runs 3 shards") {
		t.Errorf("joining a rendezvous of 3 as one of 2: %v; want a refusal naming 3 shards", err)
	}
}

// MeasureClock against a loopback server reads this machine's own clock:
// an offset within its error, and an error well under a second.
func TestMeasureClock(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})) // net/http sets Date
	defer srv.Close()
	c, err := MeasureClock(context.Background(), srv.URL, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("offset %v ± %v from %d samples", time.Duration(c.OffsetNs), time.Duration(c.ErrorNs), c.Samples)
	if c.Samples != 8 || c.Source != "http-date" {
		t.Errorf("%+v: want 8 samples of http-date", c)
	}
	if c.ErrorNs >= int64(time.Second/2) || math.Abs(float64(c.OffsetNs)) > float64(c.ErrorNs) {
		t.Errorf("offset %v ± %v against its own clock; want 0 within an error under 500ms", time.Duration(c.OffsetNs), time.Duration(c.ErrorNs))
	}
}
