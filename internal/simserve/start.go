package simserve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/sim"
)

// shutdownGrace bounds how long stop waits for handlers to finish writing
// their last events before closing connections.
const shutdownGrace = 5 * time.Second

// Start builds a server for cfg and serves it on addr ("127.0.0.1:0" picks
// a free loopback port, as the embedded default does). It returns the base
// URL (e.g. "http://127.0.0.1:40123") and a stop function that ends the
// engine (in-flight streams end with an error event), shuts the HTTP server
// down and returns the first error either met. The engine also stops when
// ctx is done; stop must be called in any case to release the listener.
func Start(ctx context.Context, addr string, cfg sim.Config, opt Options) (url string, stop func() error, err error) {
	s, err := New(cfg, opt)
	if err != nil {
		return "", nil, err
	}
	return s.Start(ctx, addr)
}

// ListenError is an address the server could not listen on. Field, when
// set, is the Spec field that chose it (Port), Value its value; the caller
// names the setting, as for the proxy's.
type ListenError struct {
	Field, Value string
	Err          error
}

// Error says which address (or setting) and why.
func (e *ListenError) Error() string {
	if e.Field == "" {
		return "listen on " + e.Value + ": " + e.Err.Error()
	}
	return e.Field + " " + e.Value + ": " + e.Err.Error()
}

// Unwrap returns the listener's error.
func (e *ListenError) Unwrap() error { return e.Err }

// Failed names the setting that failed and its value, for the CLI.
func (e *ListenError) Failed() (field, value string) { return e.Field, e.Value }

// Start serves s on addr like the package-level Start, for a caller that
// built the Server itself (to print its Describe first, say). Run must not
// have been called.
func (s *Server) Start(ctx context.Context, addr string) (url string, stop func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, &ListenError{Value: addr, Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       cmp.Or(s.opt.IdleTimeout, DefaultIdleTimeout),
		// Request contexts do not derive from ctx: when the engine stops,
		// handlers still get to end their streams with an error event.
	}
	var (
		wg               sync.WaitGroup
		runErr, serveErr error
	)
	wg.Go(func() { runErr = s.Run(ctx) })
	wg.Go(func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("simserve: serve: %w", err)
		}
	})
	stop = sync.OnceValue(func() error {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer scancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		wg.Wait()
		return errors.Join(runErr, serveErr)
	})
	return "http://" + ln.Addr().String(), stop, nil
}
