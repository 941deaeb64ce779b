package promexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
)

// Live serves the Records a run produces as Prometheus metrics on
// /metrics while the run goes on (bench's --metrics-listen), with the
// proxy's names and labels, so a dashboard shows the client's view beside
// the server's.
type Live struct {
	m    *Metrics
	srv  *http.Server
	done chan struct{}
	// URL is the /metrics address.
	URL string
}

// ErrListen wraps a failure to listen on the address given.
var ErrListen = errors.New("cannot listen")

// ServeLive listens on addr and serves the metrics o describes (its
// Registerer is replaced by a registry of its own).
func ServeLive(addr string, o MetricsOptions) (*Live, error) {
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	m, err := NewMetrics(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %w", ErrListen, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", MetricsHandler(reg))
	l := &Live{m: m, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{}),
		URL: "http://" + ln.Addr().String() + "/metrics"}
	go func() {
		defer close(l.done)
		// A serving error ends the endpoint, not the run: the user sees
		// the scrape fail.
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// Record counts one finished request; safe for concurrent use.
func (l *Live) Record(r *runlog.Record) error {
	l.m.Observe(r)
	return nil
}

// Close shuts the endpoint down; a nil Live is a no-op.
func (l *Live) Close() {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		_ = l.srv.Close()
	}
	<-l.done
}
