package proxy

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/goodput/goodput/internal/runlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is an upstream, a Proxy in front of it, and a client.
type harness struct {
	t      testing.TB
	up     *httptest.Server
	p      *Proxy
	front  *httptest.Server
	reg    *prometheus.Registry
	client *http.Client
	logs   *syncBuffer
	// srvLog is the front server's ErrorLog: a panic serving a request
	// (e.g. "invalid concurrent Body.Read call") fails the test.
	srvLog *syncBuffer

	mu   sync.Mutex
	recs []runlog.Record
	got  chan struct{} // one send per record, buffered
}

// syncBuffer is a bytes.Buffer safe for the proxy's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newHarness starts upstream (nil: none, mod must set Upstream) and a
// proxy configured by mod.
func newHarness(t testing.TB, upstream http.Handler, mod func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, reg: prometheus.NewRegistry(), logs: &syncBuffer{}, srvLog: &syncBuffer{}, got: make(chan struct{}, 4096)}
	o := Options{Registerer: h.reg, Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if upstream != nil {
		h.up = httptest.NewServer(upstream)
		o.Upstream = h.up.URL
	}
	if mod != nil {
		mod(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	p.onRecord = func(r *runlog.Record) {
		c := *r
		c.Chunks = slices.Clone(r.Chunks)
		h.mu.Lock()
		h.recs = append(h.recs, c)
		h.mu.Unlock()
		h.got <- struct{}{}
	}
	h.front = httptest.NewUnstartedServer(p)
	h.front.Config.ErrorLog = log.New(h.srvLog, "", 0)
	h.front.Start()
	h.client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	h.client.CloseIdleConnections()
	h.front.Close()
	if err := h.p.Close(); err != nil {
		h.t.Errorf("Proxy.Close: %v", err)
	}
	if h.up != nil {
		h.up.CloseClientConnections()
		h.up.Close()
	}
	if l := h.srvLog.String(); strings.Contains(l, "panic") {
		h.t.Errorf("the proxy's server logged a panic:\n%s", l)
	}
}

// records returns copies of the records finished so far.
func (h *harness) records() []runlog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

// waitRecords waits (bounded) until n records have finished.
func (h *harness) waitRecords(n int) []runlog.Record {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if r := h.records(); len(r) >= n {
			return r
		}
		select {
		case <-h.got:
		case <-deadline:
			h.t.Fatalf("records = %d after 10 s; want %d", len(h.records()), n)
		}
	}
}

// post sends body to path through the proxy and returns the response with
// its body read whole (err is the body read error).
func (h *harness) post(ctx context.Context, path string, body []byte, hdr http.Header) (*http.Response, []byte, error) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.front.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// pieceWriter is an upstream that answers with a status, headers and body
// pieces, flushing after each piece.
type pieceWriter struct {
	status int
	header http.Header
	pieces [][]byte
	// check, when set, inspects the request first.
	check func(r *http.Request, body []byte)
}

func (pw *pieceWriter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if pw.check != nil {
		pw.check(r, body)
	}
	for k, v := range pw.header {
		w.Header()[k] = v
	}
	w.WriteHeader(pw.status)
	for _, p := range pw.pieces {
		if _, err := w.Write(p); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

// sseHeader is the header of an event stream response.
func sseHeader() http.Header {
	return http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
}

// events renders data payloads as an event stream.
func events(datas ...string) []byte {
	var b strings.Builder
	for _, d := range datas {
		b.WriteString("data: ")
		b.WriteString(d)
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

// histCount is the sample count of the histogram series of family name
// whose labels are exactly labels, gathered from g; 0 when there is none.
func histCount(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
					continue series
				}
			}
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}
