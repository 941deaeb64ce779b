package watch

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/goodput/goodput/internal/redact"
)

// Serve serves reg's metrics at /metrics on addr, with secrets (nil:
// none) blanked from every page, and returns the page's URL and the stop,
// which shuts the server down (closing it after 2 s of open requests).
func Serve(addr string, reg *prometheus.Registry, secrets *redact.Secrets) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	var h http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, DisableCompression: true})
	if secrets != nil {
		h = redacted(h, secrets)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	return "http://" + ln.Addr().String() + "/metrics", func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		wg.Wait()
	}, nil
}

// redacted serves h's answers with the secrets blanked. The page is
// rendered whole first (uncompressed), so no secret is split across writes:
// a label value is whatever a server answered (a model id), and a
// server can answer anything.
func redacted(h http.Handler, secrets *redact.Secrets) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &pageRecorder{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		body := secrets.Bytes(rec.body.Bytes())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.status)
		_, _ = w.Write(body)
	})
}

// pageRecorder keeps a handler's answer in memory.
type pageRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (p *pageRecorder) Header() http.Header         { return p.header }
func (p *pageRecorder) WriteHeader(code int)        { p.status = code }
func (p *pageRecorder) Write(b []byte) (int, error) { return p.body.Write(b) }
