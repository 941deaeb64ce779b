package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// liveMetrics serves the client's own view of a bench run as Prometheus
// metrics (the same names and labels as goodput proxy, both from promexport), so a dashboard can
// show client and server side by side while the run goes on.
type liveMetrics struct {
	m    *promexport.Metrics
	srv  *http.Server
	done chan struct{}
	url  string
}

// startLiveMetrics listens on addr; an empty addr means none (nil, nil).
func startLiveMetrics(addr string, so stats.Options, model, endpoint string) (*liveMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	m, err := promexport.NewMetrics(promexport.MetricsOptions{
		Registerer: reg, SLO: so.SLO, Buckets: so.Buckets, Model: model, Route: promexport.RouteOf(endpoint),
	})
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--metrics-listen %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promexport.MetricsHandler(reg))
	lm := &liveMetrics{m: m, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{}),
		url: "http://" + ln.Addr().String() + "/metrics"}
	go func() {
		defer close(lm.done)
		if err := lm.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			_ = err // the run goes on without live metrics; the user sees the scrape fail
		}
	}()
	return lm, nil
}

// observe records one finished request; safe for concurrent use.
func (lm *liveMetrics) observe(r *runlog.Record) {
	if lm != nil {
		lm.m.Observe(r)
	}
}

// stop shuts the endpoint down.
func (lm *liveMetrics) stop() {
	if lm == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := lm.srv.Shutdown(ctx); err != nil {
		_ = lm.srv.Close()
	}
	<-lm.done
}

// Record makes the live metrics a run.Sink.
func (lm *liveMetrics) Record(r *runlog.Record) error {
	lm.observe(r)
	return nil
}
