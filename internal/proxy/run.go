package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/redact"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// DefaultClientIdleTimeout is how long Run keeps an idle client connection
// (the proxy's and the metrics listener's).
const DefaultClientIdleTimeout = 2 * time.Minute

// Run serves the proxy on o.Listen and its metrics on o.MetricsListen until
// ctx is done, then lets open streams finish for o.ShutdownGrace, cuts the
// rest, and closes the records file. It returns nil after a clean stop.
func Run(ctx context.Context, o Options) error {
	reg := prometheus.NewRegistry()
	if o.Registerer == nil {
		o.Registerer = reg
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return fmt.Errorf("proxy metrics: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return fmt.Errorf("proxy metrics: %w", err)
		}
	}
	p, err := New(o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return errors.Join(&ListenError{"Listen", o.Listen, err}, p.Close())
	}
	var mln net.Listener
	if o.MetricsListen != "" {
		if mln, err = net.Listen("tcp", o.MetricsListen); err != nil {
			ln.Close()
			return errors.Join(&ListenError{"MetricsListen", o.MetricsListen, err}, p.Close())
		}
	}
	errLog := log.New(logWriter{p.log}, "", 0)
	idle := cmp.Or(o.ClientIdleTimeout, DefaultClientIdleTimeout)
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: idle, ErrorLog: errLog}
	servers := []*http.Server{srv}
	proxyURL, metricsURL := "http://"+ln.Addr().String(), ""
	if mln != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promexport.MetricsHandler(p.Gatherer()))
		servers = append(servers, &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: idle, ErrorLog: errLog})
		metricsURL = "http://" + mln.Addr().String() + "/metrics"
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		serveEr error
	)
	serve := func(s *http.Server, l net.Listener) {
		if err := s.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			mu.Lock()
			serveEr = errors.Join(serveEr, fmt.Errorf("serve %s: %w", l.Addr(), err))
			mu.Unlock()
		}
	}
	wg.Go(func() { serve(srv, ln) })
	if mln != nil {
		wg.Go(func() { serve(servers[1], mln) })
	}
	p.log.Info("proxy listening", "listen", proxyURL, "upstream", redact.URL(p.upstream), "metrics", metricsURL)
	if o.Ready != nil {
		o.Ready(proxyURL, metricsURL)
	}
	<-ctx.Done()
	grace := o.ShutdownGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil {
			_ = s.Close() // grace is over: cut the streams still open
		}
	}
	wg.Wait()
	return errors.Join(serveEr, p.Close())
}

// ListenError is an address the proxy could not listen on; Field is the
// setting that gave it (Listen, MetricsListen).
type ListenError struct {
	Field, Addr string
	Err         error
}

func (e *ListenError) Error() string { return e.Field + " " + e.Addr + ": " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// Failed is the setting and its value whose address failed.
func (e *ListenError) Failed() (field, value string) { return e.Field, e.Addr }
