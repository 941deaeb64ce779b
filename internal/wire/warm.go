package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Warm opens n kept-alive connections to the server before a measured
// window, as a real client's pool holds them, so that no measured request
// pays a TCP (and TLS) handshake. Each is opened by a GET /v1/models
// (cheap on every server; any answer will do), all held in flight until
// every one has its answer so that each takes a connection of its own.
// Where the server said its slot count (Slots), n is capped at it:
// llama-server serves slots+2 connections at a time, one per HTTP thread,
// and a warm connection beyond them would wait for a thread; so it is at
// Config.MaxConns, the most the pool holds. It returns
// how many connections it opened; an error says why not all (the run goes
// on without them).
func (c *Client) Warm(ctx context.Context, n int) (int, error) {
	if s := c.Slots(); s > 0 {
		n = min(n, s)
	}
	if c.cfg.MaxConns > 0 {
		// The pool holds no more: a request beyond would wait for one of
		// the others, all held until every one has its answer.
		n = min(n, c.cfg.MaxConns)
	}
	if n <= 0 || c.closes.Load() {
		// A server that closes every connection after a stream keeps
		// none warm.
		return 0, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := joinURL(c.base, "/v1/models")
	var (
		arrived sync.WaitGroup // every request has its answer's headers
		wg      sync.WaitGroup
		mu      sync.Mutex
		opened  int
		errs    []error
	)
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	for range n {
		wg.Go(func() {
			resp, err := c.warmOne(ctx, u)
			arrived.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				cancel() // the others would only wait for it
				return
			}
			// The body unread keeps the connection busy, so the others
			// cannot reuse it: each dials its own.
			select {
			case <-all:
			case <-ctx.Done():
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			mu.Lock()
			opened++
			mu.Unlock()
		})
	}
	wg.Wait()
	<-all
	if len(errs) > 0 {
		return opened, fmt.Errorf("warming %d connections: %w", n, errors.Join(errs...))
	}
	return opened, nil
}

// warmOne sends one warming request and returns its response.
func (c *Client) warmOne(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Request-Id", "goodput-warm")
	c.setAuth(req.Header)
	return c.hc.Do(req)
}
