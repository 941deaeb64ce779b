package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/protocols"
)

// DefaultMaxInspectBytes is how much of a request body the proxy keeps to
// read the model, stream flag and prompt length from: 8 MiB. Larger bodies
// pass through all the same, measured under model "unknown".
const DefaultMaxInspectBytes = 8 << 20

// ErrBadUpstream is wrapped by the error New and Run return when
// Options.Upstream is not an http(s) URL with a host.
var ErrBadUpstream = errors.New("not a server URL")

// Options configures a Proxy (New) and the proxy server (Run).
type Options struct {
	// Listen is the proxy's address (Run only), e.g. 127.0.0.1:9000.
	Listen string
	// Upstream is the server's base URL, e.g. http://127.0.0.1:8000. A
	// path in it is prefixed to every request path.
	Upstream string
	// MetricsListen is the address serving /metrics (Run only); "" serves
	// none. Metrics never share the proxy's port, where /metrics belongs
	// to the upstream (vLLM serves its own).
	MetricsListen string
	// SLO enables the SLO counter and the windowed attainment and goodput
	// gauges (--goodput).
	SLO stats.SLO
	// InjectUsage adds stream_options.include_usage to streamed requests
	// that lack it, so token counts are exact, and strips the resulting
	// usage-only chunk from the response the client sees.
	InjectUsage bool
	// Records is the path of the records JSONL file; "" writes none.
	Records string
	// RecordsMaxBytes is the size in bytes at which the records file is
	// rotated; 0 means DefaultRecordsMaxBytes.
	RecordsMaxBytes int64
	// RecordsKeep is how many rotated records files to keep; 0 keeps all.
	RecordsKeep int
	// Models, MaxModels and Buckets label the metrics (see promexport.MetricsOptions).
	Models    []string
	MaxModels int
	Buckets   []int
	// MaxInspectBytes caps the request body bytes kept for inspection; 0
	// means DefaultMaxInspectBytes.
	MaxInspectBytes int
	// UpstreamHeaderTimeout bounds the wait for the upstream's response
	// headers (the client then gets 504); 0 means none, so the upstream's
	// own timeouts are what the client sees.
	UpstreamHeaderTimeout time.Duration
	// ClientIdleTimeout closes a kept-alive client connection idle this
	// long (Run only); 0 means DefaultClientIdleTimeout.
	ClientIdleTimeout time.Duration
	// ShutdownGrace is how long Run lets open streams finish when ctx is
	// done before cutting them; 0 means 10 s.
	ShutdownGrace time.Duration
	// Version is recorded in the records' Meta line.
	Version string
	// Registerer receives the metrics (New); nil means a fresh registry,
	// exposed by Proxy.Gatherer. The global registry is never used.
	Registerer prometheus.Registerer
	// Transport sends upstream requests; nil means a transport tuned for
	// streaming (no compression added, large idle pool).
	Transport http.RoundTripper
	// Logger receives operational messages (never request contents or
	// credentials); nil discards them.
	Logger *slog.Logger
	// Ready, when set, is called by Run once both listeners are open, with
	// the proxy's and the metrics' base URLs ("" when not served).
	Ready func(proxyURL, metricsURL string)
}

// Proxy is a transparent reverse proxy for an OpenAI-compatible server. It
// passes every request and response through unchanged (status, headers,
// body), flushing streamed responses chunk by chunk, and measures each
// streamed completions, chat completions, Responses and Messages request
// (and each embeddings request) the way
// goodput bench measures its own: a runlog.Record per request, fed to
// promexport.Metrics and to the records file.
//
// A Proxy is an http.Handler safe for concurrent use.
type Proxy struct {
	upstream     *url.URL
	rp           *httputil.ReverseProxy
	metrics      *promexport.Metrics
	gatherer     prometheus.Gatherer
	records      *RotatingWriter
	inject       bool
	maxInspect   int
	log          *slog.Logger
	start        time.Time
	seq          atomic.Uint64
	inflight     prometheus.Gauge
	unmeasured   *prometheus.CounterVec
	hold         prometheus.Histogram
	onHold       func(ns int64) // tests and benchmarks: each chunk's hold time
	recordErr    atomic.Bool
	taps         sync.Pool
	handlers     sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error
	transport    http.RoundTripper
	ownTransport *http.Transport

	// onRecord, when set (tests), sees every finished record before it is
	// reused.
	onRecord func(*runlog.Record)
}

// New builds a Proxy for o.Upstream. Call Close when done with it.
func New(o Options) (*Proxy, error) {
	u, err := url.Parse(o.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: %w: want http(s)://host[:port][/path]", o.Upstream, ErrBadUpstream)
	}
	p := &Proxy{
		upstream:   u,
		inject:     o.InjectUsage,
		maxInspect: o.MaxInspectBytes,
		log:        o.Logger,
		start:      time.Now(),
	}
	if p.maxInspect <= 0 {
		p.maxInspect = DefaultMaxInspectBytes
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	reg := o.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, p.gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		p.gatherer = g
	}
	p.metrics, err = promexport.NewMetrics(promexport.MetricsOptions{
		Registerer: reg, Models: o.Models, MaxModels: o.MaxModels, Buckets: o.Buckets,
		SLO: o.SLO, Now: p.now,
	})
	if err != nil {
		return nil, err
	}
	p.inflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "goodput", Subsystem: "proxy", Name: "requests_in_flight",
		Help: "Requests (of any kind) the proxy is passing through right now.",
	})
	p.unmeasured = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "goodput", Subsystem: "proxy", Name: "unmeasured_requests_total",
		Help: "Requests passed through without measurement (other paths, non-streamed or compressed responses) by route and upstream status class.",
	}, []string{"route", "status_class"})
	p.hold = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "goodput", Subsystem: "proxy", Name: "chunk_hold_seconds",
		Help: "Time a measured stream's bytes spend inside the proxy: from the upstream read's return to the client write and flush's return.",
		// 1 µs to ~0.5 s.
		Buckets:                        prometheus.ExponentialBuckets(1e-6, 2.5, 15),
		NativeHistogramBucketFactor:    1.1,
		NativeHistogramMaxBucketNumber: 160,
	})
	for _, c := range []prometheus.Collector{p.inflight, p.unmeasured, p.hold} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("proxy metrics: %w", err)
		}
	}
	p.transport = o.Transport
	if p.transport == nil {
		p.ownTransport = newTransport(o.UpstreamHeaderTimeout)
		// Its connections keep each response's head, for the Connection
		// header Go's transport drops (stripConnectionListed).
		p.ownTransport.DialContext = dialKeepingHeads(p.ownTransport.DialContext)
		p.transport = p.ownTransport
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      roundTripFunc(p.roundTrip),
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       log.New(logWriter{p.log}, "", 0),
		// A 32 KiB copy buffer per request otherwise: garbage whose
		// collection shows in every stream's latency.
		BufferPool: &bufferPool{},
	}
	p.taps.New = func() any { return new(tap) }
	if o.Records != "" {
		meta := runlog.Meta{
			Tool: "goodput", Version: o.Version, Command: "proxy", Started: p.start,
			Target: redact.URL(u), Backend: "openai",
			Levels: []runlog.Level{{Label: runlog.LiveTraffic}},
		}
		if p.records, err = NewRotatingWriter(o.Records, o.RecordsMaxBytes, o.RecordsKeep, meta); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func newTransport(headerTimeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		MaxIdleConns:          0, // no global cap: the per-host limit is the one that matters
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   30 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: headerTimeout,
		// The client's own Accept-Encoding passes through; the proxy adds
		// none, because a gzip layer would batch events and hide them.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
		// Go's 4 KiB buffers: an event is a few hundred bytes, and a
		// larger read goes straight past the buffer. 64 KiB ones cost
		// 128 KiB of zeroed heap per upstream connection.
	}
}

// Metrics returns the proxy's metrics.
func (p *Proxy) Metrics() *promexport.Metrics { return p.metrics }

// Gatherer returns what /metrics should expose: the proxy's own registry,
// or Options.Registerer when it is also a Gatherer; nil otherwise.
func (p *Proxy) Gatherer() prometheus.Gatherer { return p.gatherer }

// now is the proxy's monotonic clock: ns since New.
func (p *Proxy) now() int64 { return int64(time.Since(p.start)) }

// Close waits for requests being served to finish writing their records,
// then closes the records file and idle upstream connections. The Proxy
// must not serve requests after Close.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.handlers.Wait()
		if p.ownTransport != nil {
			p.ownTransport.CloseIdleConnections()
		}
		if p.records != nil {
			p.closeErr = p.records.Close()
		}
	})
	return p.closeErr
}

// exchange is the proxy's view of one request, carried in its context.
type exchange struct {
	ctx     context.Context
	route   string
	llm     bool // a POST to a completion route: measured if streamed
	id      string
	arrived int64
	sent    int64
	// replica is the simulated fleet's replica that answered (from 1, as
	// wire.ReplicaOf reads it); 0 for any other server.
	replica int
	secrets *redact.Secrets

	capture  *captureBody // the body as it went out, for a late inspect and a replay
	body     []byte       // or the whole body, read up front to inject usage
	replay   []byte       // with body: the bytes sent (usage injected)
	out      *sentBody    // the body handed to the transport by the last attempt
	parsed   bool
	ri       reqInfo
	injected bool // include_usage was added: strip the usage-only chunk
	whole    bool // the record measures a non-streamed (JSON) answer
	finished bool
}

type exchangeKey struct{}

// info inspects the request body once it has been sent (an answer may come
// before the upload is over: then it looks again on the next call).
func (ex *exchange) info() reqInfo {
	if ex.parsed {
		return ex.ri
	}
	b := ex.body
	if b == nil && ex.capture != nil {
		var ok bool
		if b, ok = ex.capture.whole(); !ok {
			if !ex.capture.final() {
				return reqInfo{}
			}
			b = nil
		}
	}
	ex.parsed = true
	if b != nil {
		ex.ri = inspect(b)
	}
	return ex.ri
}

// bodyEnded reports whether the client's request body has been read to its
// end (or has none): nothing reads the client's connection for it any more.
func (ex *exchange) bodyEnded() bool {
	return ex.capture == nil || ex.capture.ended()
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.handlers.Add(1)
	defer p.handlers.Done()
	p.inflight.Inc()
	// Deferred: the ReverseProxy aborts a broken stream with a panic
	// (http.ErrAbortHandler), which must still leave the gauge right.
	defer p.inflight.Dec()
	route := promexport.RouteOf(r.URL.Path)
	ex := &exchange{
		ctx:     r.Context(),
		route:   route,
		llm:     r.Method == http.MethodPost && route != promexport.RouteOther,
		arrived: p.now(),
	}
	// Present but empty, the Content-Type stops Go's server from sniffing
	// one for an upstream answer that had none: the client gets exactly
	// the upstream's headers. An upstream Content-Type is added to it.
	w.Header()["Content-Type"] = nil
	hasBody := r.Body != nil && r.Body != http.NoBody
	if hasBody {
		// The request body streams to the upstream while its answer
		// streams back. Without full duplex, Go's server discards and
		// closes an unread request body the moment the answer's headers
		// go out, and the transport, still sending the body's end, then
		// fails and kills the upstream connection mid-stream.
		_ = http.NewResponseController(w).EnableFullDuplex()
		defer p.settleBody(w, ex)
	}
	if ex.llm {
		ex.secrets = secretsOf(r, p.upstream)
		ex.id = requestID(r.Header.Get("X-Request-Id"), p.seq.Add(1))
	}
	if hasBody {
		if err := p.prepareBody(ex, r); err != nil {
			// The client's upload failed: it is gone or broken, so there
			// is nobody to answer and nothing was sent upstream.
			p.log.Debug("request body read failed", "route", route, "error", ex.secrets.String(errText(err)))
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex)))
}

// settleBody runs as the handler returns: the client's request body must
// not be read after that. The transport's writing goroutine may still be
// reading it (an upstream that answered, or failed, before the upload
// ended): the read is cut by a read deadline and waited for. Go's server
// would otherwise read the body again itself, concurrently ("invalid
// concurrent Body.Read call"). Once the read is over, an unfinished body
// has made its answer say Connection: close (modifyResponse,
// errorHandler), so the server drops the connection instead of reading
// the rest of the body as the next request.
func (p *Proxy) settleBody(w http.ResponseWriter, ex *exchange) {
	sb := ex.out
	if sb == nil || ex.bodyEnded() {
		return
	}
	select {
	case <-sb.done:
		return
	default:
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	t := time.NewTimer(settleWait)
	defer t.Stop()
	select {
	case <-sb.done:
	case <-t.C:
		p.log.Warn("upstream transport still reading the request body after the answer; leaving it", "route", ex.route)
	}
}

// settleWait bounds settleBody's wait for the transport to let go of a
// request body whose read was cut.
const settleWait = 5 * time.Second

// prepareBody arranges for the request body to be inspected and kept for a
// replay: read whole and rewritten when usage is injected, else captured
// as it streams out.
func (p *Proxy) prepareBody(ex *exchange, r *http.Request) error {
	if !p.inject || !ex.llm {
		ex.capture = &captureBody{r: r.Body, max: p.maxInspect}
		r.Body = ex.capture
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(p.maxInspect)+1))
	if err != nil {
		return err
	}
	if len(b) > p.maxInspect { // too large to inspect: send it on untouched
		ex.capture = &captureBody{r: struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}, max: p.maxInspect}
		r.Body = ex.capture
		return nil
	}
	ex.body = b
	ri := ex.info()
	if ri.ok && ri.stream && !ri.includeUsage && openaiChunks(ex.route) {
		if nb, err := injectUsage(b); err == nil {
			b = nb
			ex.injected = true
			r.ContentLength = int64(len(b))
			r.Header.Del("Content-Length") // the transport writes the new one
		}
	}
	ex.replay = b
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

// requestID is the record id: the client's x-request-id when it is short
// and printable, else proxy-N.
func requestID(h string, seq uint64) string {
	if h != "" && len(h) <= 128 {
		ok := true
		for i := 0; i < len(h); i++ {
			if h[i] < 0x21 || h[i] > 0x7e {
				ok = false
				break
			}
		}
		if ok {
			return h
		}
	}
	return "proxy-" + strconv.FormatUint(seq, 10)
}

// rewrite points the outbound request at the upstream. The ReverseProxy
// has removed hop-by-hop headers (Proxy-Authorization among them: it is
// addressed to the proxy) and, for Rewrite, Forwarded and the
// X-Forwarded-* headers; the client's own Forwarded and X-Forwarded-* go
// back in unchanged, and none are added, so the upstream sees the request
// as the client sent it.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[h]; ok {
			pr.Out.Header[h] = v
		}
	}
}

// bufferPool recycles the ReverseProxy's copy buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// isEventStream reports whether a response is an uncompressed
// text/event-stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "text/event-stream" {
		return false
	}
	return identityEncoded(h)
}

// openaiChunks reports whether a route streams OpenAI chat or completions
// chunks, whose usage the proxy may ask for (stream_options) and strip.
// The Messages and Responses APIs always send their usage.
func openaiChunks(route string) bool {
	return route == promexport.RouteChat || route == promexport.RouteCompletions
}

// decoderFor makes the decoder of a route's answers: its protocol's (the
// protocols table), or OpenAI's chunk decoder for a route of none.
func decoderFor(route string) wire.EventDecoder {
	if p, ok := protocols.OfPath(route); ok {
		return p.Wire.NewDecoder()
	}
	return protocols.Default().Wire.NewDecoder()
}

// neverStreamed reports whether a route's protocol answers whole, never
// streamed (embeddings).
func neverStreamed(route string) bool {
	p, ok := protocols.OfPath(route)
	return ok && !p.Wire.Streams()
}

// identityEncoded reports whether a response body is not compressed.
func identityEncoded(h http.Header) bool {
	enc := h.Get("Content-Encoding")
	return enc == "" || strings.EqualFold(enc, "identity")
}

// modifyResponse decides, once the upstream's headers are in, whether and
// how the response is measured.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	ex, _ := resp.Request.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return nil
	}
	if !ex.bodyEnded() {
		// The upstream answered before the upload ended: the rest of
		// the client's body cannot be left for the server to read as
		// the next request (settleBody).
		resp.Header.Set("Connection", "close")
	}
	if !ex.llm {
		p.unmeasured.WithLabelValues(ex.route, promexport.StatusClass(resp.StatusCode)).Inc()
		return nil
	}
	ex.replica = wire.ReplicaOf(resp.Header)
	if resp.StatusCode == http.StatusOK && isEventStream(resp.Header) {
		t := p.taps.Get().(*tap)
		t.reset(p, ex, resp.Body, ex.injected)
		t.rec.Status = resp.StatusCode
		resp.Body = &tapBody{t: t}
		if ex.injected {
			// Stripping a chunk changes the length.
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
		}
		return nil
	}
	measured := ex.info().stream || neverStreamed(ex.route)
	if resp.StatusCode == http.StatusOK && measured && identityEncoded(resp.Header) {
		// A streamed request answered with a whole JSON body (a server
		// that ignores "stream") or with something else entirely (an
		// HTML error page from a gateway): measured as it passes.
		resp.Body = newAnswerBody(p, ex, resp.Body, resp.Header.Get("Content-Type"))
		return nil
	}
	if resp.StatusCode != http.StatusOK && measured {
		rec := &runlog.Record{Status: resp.StatusCode, End: p.now(), TokenSource: runlog.TokensCounted}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			rec.RetryAfterNs = int64(wire.RetryAfter(resp.Header, time.Now()))
		}
		class := runlog.StatusClass(resp.StatusCode)
		// The status only: an upstream's error text may quote the request
		// (or its credentials), and the client gets the body anyway.
		rec.ErrorClass, rec.Error = class, fmt.Sprintf("HTTP %d", resp.StatusCode)
		rec.PromptTokens = ex.info().promptTokens
		p.finish(ex, rec)
		return nil
	}
	p.unmeasured.WithLabelValues(ex.route, promexport.StatusClass(resp.StatusCode)).Inc()
	return nil
}

// errorHandler answers when no response came from the upstream: 502, or
// 504 for a timeout, with a one-line JSON error in OpenAI's shape saying
// why (clients parse it); a measured request gets its failure record.
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	ex, _ := r.Context().Value(exchangeKey{}).(*exchange)
	status := http.StatusBadGateway
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	if timeout {
		status = http.StatusGatewayTimeout
	}
	cancelled := r.Context().Err() != nil && !timeout
	msg := redact.Generic(errText(err))
	if ex != nil {
		msg = ex.secrets.String(msg)
		if cancelled {
			p.log.Debug("client went away before the upstream answered", "route", ex.route)
		} else {
			p.log.Warn("upstream request failed", "route", ex.route, "error", msg)
		}
		// A body never sent cannot be inspected (ok false): the failure
		// is recorded, for the client saw it whether it streamed or not.
		switch ri := ex.info(); {
		case !ex.llm:
			p.unmeasured.WithLabelValues(ex.route, "none").Inc()
		case ri.stream || !ri.ok:
			class := runlog.ErrConnect
			rmsg := msg
			switch {
			case cancelled:
				class, rmsg = runlog.ErrCancelled, "client disconnected"
			case timeout:
				class = runlog.ErrTimeout
			case wire.IsReset(err):
				class = runlog.ErrConnectReset
			}
			rec := &runlog.Record{End: p.now(), ErrorClass: class, Error: rmsg, TokenSource: runlog.TokensCounted}
			rec.PromptTokens = ri.promptTokens
			p.finish(ex, rec)
		default:
			p.unmeasured.WithLabelValues(ex.route, "none").Inc()
		}
		if !ex.bodyEnded() {
			w.Header().Set("Connection", "close") // see settleBody
		}
	}
	why := "upstream unreachable: " + msg
	if timeout {
		why = "upstream sent no response headers in time: " + msg
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(proxyError(why, status))
}

// proxyError renders msg as an OpenAI-shaped error body, one line.
func proxyError(msg string, status int) []byte {
	type detail struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	b, _ := json.Marshal(struct {
		Error detail `json:"error"`
	}{detail{Message: "goodput proxy: " + wire.OneLine(msg), Type: "upstream_error", Code: status}})
	return append(b, '\n')
}

// errText is an error's text without the request URL a *url.Error puts in
// front (its query may hold a key).
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// finish completes a measured request's record and hands it to the
// metrics and the records file. It runs once per request.
func (p *Proxy) finish(ex *exchange, rec *runlog.Record) {
	if ex.finished {
		return
	}
	ex.finished = true
	rec.ID = ex.secrets.String(ex.id)
	rec.Intended = ex.arrived
	rec.Sent = ex.sent
	if rec.Sent == 0 {
		rec.Sent = ex.arrived
	}
	rec.Error = ex.secrets.String(rec.Error)
	rec.Replica = ex.replica
	ri := ex.info()
	// The records say which model each request named, so a report over
	// live traffic can name the models seen (the proxy's Meta cannot).
	rec.Model = clipModel(ex.secrets.String(ri.model))
	if ex.whole {
		p.metrics.ObserveUnstreamed(rec, ri.model, ex.route)
	} else {
		p.metrics.ObserveLabeled(rec, ri.model, ex.route)
	}
	if p.onRecord != nil {
		p.onRecord(rec)
	}
	if p.records != nil {
		if err := p.records.Write(rec); err != nil && p.recordErr.CompareAndSwap(false, true) {
			p.log.Error("records file: writing stopped", "error", err.Error())
		}
	}
}

// Pooled taps keep their buffers only up to these sizes: a stream far
// longer than usual (or a never-ending one) must not leave its memory held
// in the pool after it is gone.
const (
	maxPooledChunks = 4096     // chunk entries (16 bytes each)
	maxPooledBytes  = 64 << 10 // pending, held, out, framer and decoder buffers
)

// putTap returns a tap to the pool, without buffers grown past the pooled
// sizes.
func (p *Proxy) putTap(t *tap) {
	t.p, t.ex, t.body = nil, nil, nil
	t.pending = t.pending[:0]
	if cap(t.rec.Chunks) > maxPooledChunks {
		t.rec.Chunks = nil
	}
	if cap(t.pending) > maxPooledBytes {
		t.pending = nil
	}
	if cap(t.out) > maxPooledBytes {
		t.out = nil
	}
	if cap(t.held) > maxPooledBytes {
		t.held = nil
	}
	t.fr.shrink(maxPooledBytes)
	if t.maxEvent > maxPooledBytes {
		// The decoder's buffer grew with the event: start afresh.
		t.m = wire.StreamMeter{}
		clear(t.decs)
	}
	t.maxEvent = 0
	p.taps.Put(t)
}

// logWriter sends the ReverseProxy's own log lines to slog, scrubbed.
type logWriter struct{ l *slog.Logger }

func (w logWriter) Write(b []byte) (int, error) {
	w.l.Warn(redact.Generic(strings.TrimSpace(string(b))))
	return len(b), nil
}

// maxRecordModel bounds the model name a record keeps: a client may send
// any string, and a record stays small.
const maxRecordModel = 256

// clipModel cuts s to maxRecordModel bytes on a rune boundary.
func clipModel(s string) string {
	if len(s) <= maxRecordModel {
		return s
	}
	cut := maxRecordModel
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
