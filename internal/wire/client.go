package wire

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sse"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the server root, e.g. http://127.0.0.1:8000.
	BaseURL string
	// Protocol is the wire API (nil: the OpenAI one Endpoint implies, see
	// ProtocolFor).
	Protocol Protocol
	// Endpoint is the path, e.g. /v1/completions or /v1/chat/completions
	// ("": the protocol's own).
	Endpoint string
	// Model is the model id to request.
	Model string
	// APIKey is sent as the protocol sends it (a bearer token, Anthropic's
	// x-api-key); it is never logged or recorded.
	APIKey string
	// Headers are extra request headers.
	Headers http.Header
	// ExtraBody is merged into every request body (--extra-body).
	ExtraBody map[string]any
	// IgnoreEOS sends ignore_eos: true (vLLM, SGLang, llama.cpp extension).
	IgnoreEOS bool
	// MaxTokensField names the output cap in the body: "max_tokens" (the
	// default; llama.cpp ignores the newer name) or "max_completion_tokens"
	// (OpenAI's reasoning models reject the older one).
	MaxTokensField string
	// ContinuousUsage asks for usage in every chunk (vLLM's
	// continuous_usage_stats), giving exact tokens per chunk.
	ContinuousUsage bool
	// AutoUsage lets Resolve turn ContinuousUsage on for servers known to
	// accept it.
	AutoUsage bool
	// ReadyPoll is how often Resolve asks a starting server again (0: 1 s).
	ReadyPoll time.Duration
	// NoStream sends "stream": false and measures the whole answer: the
	// record then has one chunk, at the moment the body has arrived,
	// carrying every generated token. E2E is measured; TTFT, TTP, TPOT and
	// ITL are not (the one chunk makes TTFT equal E2E and TPOT zero), so a
	// caller must not report them.
	NoStream bool
	// KeepText keeps the generated visible text on the record
	// (Record.GeneratedText, vLLM's generated_text). It costs a second
	// decode of every chunk and the text's memory, so it is off by default.
	KeepText bool
	// Insecure skips verifying the server's TLS certificate (self-signed
	// test servers); never the default.
	Insecure bool
	// FollowRedirects follows a redirect to the same origin (scheme, host
	// and port) when it keeps the request as sent (307, 308; a GET also
	// 301, 302, 303), counting each in Record.Redirects. A redirect to
	// another origin is never followed, so the API key and headers never
	// leave for a host or port they were not meant for; false follows none.
	// Either way an unfollowed redirect fails with class redirect.
	FollowRedirects bool
	// MaxResponseTokens caps a streamed response to a request without
	// max_tokens: past this many tokens the client stops reading (class
	// runaway). A request with max_tokens m is capped at
	// max(4·m, m+1024) tokens instead. 0 means DefaultMaxResponseTokens.
	MaxResponseTokens int
	// MaxEventBytes bounds one server-sent event, in bytes of wire text,
	// before the stream is abandoned as a runaway; 0 means
	// sse.DefaultMaxEventSize (64 MiB).
	MaxEventBytes int
	// Timeout bounds a whole request; 0 means none.
	Timeout time.Duration
	// IdleTimeout bounds the server's silence on the connection: from the
	// send to the first byte of the response, then between any two bytes,
	// response headers included; 0 means none.
	IdleTimeout time.Duration
	// MaxConns sizes the connection pool (the run's concurrency) and caps
	// the connections open at once (0: 16 idle, no cap): a request that
	// finds every connection busy waits for one rather than dialling one
	// more, which would stay in the pool idle and, against llama-server,
	// hold one of its HTTP threads.
	MaxConns int
	// Now is the monotonic clock in ns from the run start.
	Now func() int64
}

// Client sends streaming requests and measures them.
type Client struct {
	cfg   Config
	base  *url.URL // the parsed BaseURL
	url   string
	proto Protocol
	hc    *http.Client
	fresh *http.Client // for a retry after a reused connection raced a closing server
	auth  http.Header  // the protocol's key header, made once
	// closes is set once the server was seen closing a kept-alive
	// connection under a request (llama.cpp does after every stream); from
	// then on every request gets a fresh connection, as vLLM's client does.
	closes atomic.Bool
	// slots is the server's slot count from /props (0 unknown).
	slots atomic.Int32
	// pool holds streamStates whose readers use this client's clock.
	pool sync.Pool
	countState
}

// NewClient checks cfg and returns a Client. A bad value is a
// *setting.Error naming the Config field.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, setting.Errorf("BaseURL", strconv.Quote(cfg.BaseURL), "want http(s)://host[:port]")
	}
	if cfg.Protocol == nil {
		return nil, setting.Errorf("Protocol", "nil", "want a protocol (see wire/protocols)")
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = cfg.Protocol.Path()
	}
	if !cfg.Protocol.Streams() {
		cfg.NoStream = true // measured whole, whatever was asked
	}
	if !strings.HasPrefix(cfg.Endpoint, "/") {
		cfg.Endpoint = "/" + cfg.Endpoint
	}
	if cfg.Now == nil {
		start := time.Now()
		cfg.Now = func() int64 { return int64(time.Since(start)) }
	}
	c := &Client{
		cfg:   cfg,
		base:  u,
		url:   joinURL(u, cfg.Endpoint),
		proto: cfg.Protocol,
		auth:  http.Header{},
	}
	cfg.Protocol.Auth(c.auth, cfg.APIKey)
	c.pool.New = func() any {
		st := &streamState{sr: sse.NewReader(nil, c.cfg.Now, sse.DefaultBufSize), dec: c.proto.NewDecoder()}
		st.meter.SetDecoder(c.proto.NewDecoder())
		return st
	}
	conns := max(cfg.MaxConns, 16)
	tr := newTransport(conns, false, cfg.Insecure)
	// A request whose predecessor's connection is still on its way back
	// to the pool (Go returns it from another goroutine) would otherwise
	// dial a new one.
	tr.MaxConnsPerHost = max(cfg.MaxConns, 0)
	c.hc = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	c.fresh = &http.Client{Transport: newTransport(conns, true, cfg.Insecure), CheckRedirect: c.checkRedirect}
	return c, nil
}

// DefaultMaxResponseTokens is Config.MaxResponseTokens when zero: more
// tokens than any model's context holds today.
const DefaultMaxResponseTokens = 1 << 20

// runawayBytesPerToken is how many bytes of stream (JSON, logprobs and
// all) each token of the cap allows, on top of one maximal event, before
// a stream is a runaway in bytes though not in tokens (one that sends
// comments, empty deltas or giant chunks without end).
const runawayBytesPerToken = 4 << 10

// maxHeaderBytes bounds a response's headers (Go's default is 10 MiB).
const maxHeaderBytes = 1 << 20

// tokenCap is the most tokens a streamed answer to a request asking for
// maxTokens (0: none) may carry before it is a runaway.
func (c *Client) tokenCap(maxTokens int) int64 {
	switch {
	case maxTokens > 0:
		return int64(max(4*maxTokens, maxTokens+1024))
	case c.cfg.MaxResponseTokens > 0:
		return int64(c.cfg.MaxResponseTokens)
	}
	return DefaultMaxResponseTokens
}

func (c *Client) maxEvent() int {
	if c.cfg.MaxEventBytes > 0 {
		return c.cfg.MaxEventBytes
	}
	return sse.DefaultMaxEventSize
}

// maxRedirects bounds a chain of followed redirects, as Go's default does.
const maxRedirects = 10

// redirectError is a redirect the client would not follow.
type redirectError struct {
	class runlog.ErrorClass
	msg   string
}

func (e *redirectError) Error() string { return e.msg }

// redirectsKey is the context key of a request's *int redirect count.
type redirectsKey struct{}

// checkRedirect is the http.Client's redirect policy (see
// Config.FollowRedirects). It runs on the goroutine that called Do.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	code := 0
	if req.Response != nil {
		code = req.Response.StatusCode
	}
	to := redact.URL(req.URL)
	from := via[0].URL
	switch {
	case origin(req.URL) != origin(from):
		return &redirectError{runlog.ErrRedirect, fmt.Sprintf("HTTP %d redirect to %s, another origin than %s: not followed, so the request's credentials stay with its target", code, to, origin(from))}
	case !c.cfg.FollowRedirects:
		return &redirectError{runlog.ErrRedirect, fmt.Sprintf("HTTP %d redirect to %s: not followed (same-origin redirects are followed only when asked)", code, to)}
	case via[len(via)-1].Method == http.MethodPost && req.Method != http.MethodPost:
		return &redirectError{runlog.ErrRedirect, fmt.Sprintf("HTTP %d redirect to %s: not followed, it would resend the POST as a GET without its body (307 and 308 keep it)", code, to)}
	case len(via) >= maxRedirects:
		return &redirectError{runlog.ErrRedirectLoop, fmt.Sprintf("HTTP %d redirect to %s: stopped after %d redirects", code, to, len(via))}
	}
	for i, v := range via {
		if v.URL.String() == req.URL.String() {
			n, s := len(via)-i, "s"
			if n == 1 {
				s = ""
			}
			return &redirectError{runlog.ErrRedirectLoop, fmt.Sprintf("HTTP %d redirect back to %s: a loop of %d redirect%s", code, to, n, s)}
		}
	}
	if n, ok := req.Context().Value(redirectsKey{}).(*int); ok {
		*n++
	}
	return nil
}

// origin is u's scheme, host and port, lower case, with the scheme's
// default port made explicit.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// Chat reports whether requests carry a conversation (chat completions,
// Responses, Messages), so sessions can run over the client.
func (c *Client) Chat() bool { return c.proto.Chat() }

// Protocol is the client's wire API.
func (c *Client) Protocol() Protocol { return c.proto }

func newTransport(conns int, noKeepAlive, insecure bool) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn}, nil
	}
	var tc *tls.Config
	if insecure {
		tc = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for with --insecure
	}
	return &http.Transport{
		TLSClientConfig:     tc,
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		MaxIdleConns:        0, // no global cap: the per-host limit is the one that matters
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 30 * time.Second,
		DisableKeepAlives:   noKeepAlive,
		DisableCompression:  true, // a gzip layer would batch events and hide their timing
		// An answer whose headers run to megabytes is broken, not slow.
		MaxResponseHeaderBytes: maxHeaderBytes,
		ReadBufferSize:         64 << 10,
		WriteBufferSize:        64 << 10,
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1, as the servers measured speak it
	}
}

// Close releases idle connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// Body encodes the JSON request body for r. It is separate from Stream so a
// load generator can build bodies before their send time.
func (c *Client) Body(r *Request) ([]byte, error) {
	m := make(map[string]any, 8+len(c.cfg.ExtraBody))
	m["model"] = c.cfg.Model
	err := c.proto.Body(m, r, BodyOptions{MaxTokensField: c.cfg.MaxTokensField, Stream: !c.cfg.NoStream,
		ContinuousUsage: c.cfg.ContinuousUsage, IgnoreEOS: c.cfg.IgnoreEOS})
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", r.ID, err)
	}
	for k, v := range c.cfg.ExtraBody {
		m[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode request %s: %w", r.ID, err)
	}
	return buf.Bytes(), nil
}

var errTimeout = errors.New("request timeout")

// Stream sends one request whose body was built by Body and fills rec: Sent,
// ConnectNs, Chunks, End, token counts, Status and error class. rec.ID and
// rec.Intended are the caller's. Failures are recorded in rec, never
// returned; a cancelled ctx too leaves rec complete (class cancelled).
func (c *Client) Stream(ctx context.Context, r *Request, body []byte, rec *runlog.Record) {
	rec.ID = r.ID
	rec.RequestedPromptTokens = r.PromptTokens
	rec.MaxTokens = r.MaxTokens
	for attempt := 0; ; attempt++ {
		retry := c.attempt(ctx, r, body, rec, attempt > 0 || c.closes.Load(), attempt < maxRetries)
		if !retry {
			return
		}
		c.closes.Store(true)
		// The reused connection was closed by the server before our request
		// reached it (llama.cpp closes after every stream): not a server
		// failure, so resend on a fresh connection.
		*rec = runlog.Record{ID: rec.ID, Level: rec.Level, Warmup: rec.Warmup, Intended: rec.Intended,
			RequestedPromptTokens: rec.RequestedPromptTokens, MaxTokens: rec.MaxTokens}
	}
}

// maxRetries bounds resends after a reused connection was found closed.
const maxRetries = 2

// attempt sends once. It returns true, leaving rec's failure unset, when the
// request met a reused connection the server had already closed and
// mayRetry allows another try.
func (c *Client) attempt(ctx context.Context, r *Request, body []byte, rec *runlog.Record, fresh, mayRetry bool) (retry bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, c.cfg.Timeout, errTimeout)
		defer stop()
	}
	// The idle clock runs from the send and is reset by every byte the
	// connection reads: a server that accepts the request and never
	// answers is caught, and so is one that stalls inside its headers,
	// while one that trickles them is not called silent.
	var phase atomic.Int32 // of the current hop: waiting, inside the headers, body
	var idle *idleWatch
	if c.cfg.IdleTimeout > 0 {
		idle = newIdleWatch(c.cfg.IdleTimeout, &phase, cancel)
		defer idle.stop()
	}
	// The hooks run on the transport's goroutines (a dial may outlive a
	// failed attempt), so they touch only these atomics, never rec.
	var reused, wrote atomic.Bool
	var connStart, connDone, gotConn atomic.Int64
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { phase.Store(phaseWaiting) }, // each hop of a redirect starts over
		GotConn: func(info httptrace.GotConnInfo) {
			gotConn.CompareAndSwap(0, c.cfg.Now())
			reused.Store(info.Reused)
			if idle != nil {
				idle.attach(info.Conn)
			}
		},
		ConnectStart: func(_, _ string) {
			connStart.CompareAndSwap(0, c.cfg.Now())
		},
		ConnectDone:          func(_, _ string, _ error) { connDone.Store(c.cfg.Now()) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { connDone.Store(c.cfg.Now()) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote.Store(true) },
		GotFirstResponseByte: func() { phase.Store(phaseHeaders) },
	}
	redirects := 0
	rctx := context.WithValue(httptrace.WithClientTrace(ctx, trace), redirectsKey{}, &redirects)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		c.fail(rec, runlog.ErrConnect, "build request: "+err.Error())
		return false
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	if c.cfg.NoStream {
		h["Accept"] = []string{"application/json"}
	} else {
		h["Accept"] = []string{"text/event-stream"}
	}
	// Without Accept-Encoding any coding is acceptable (RFC 9110), and a
	// compressing gateway would batch the events it holds.
	h["Accept-Encoding"] = []string{"identity"}
	h["X-Request-Id"] = []string{r.ID}
	if len(r.ExpectedToolCalls) > 0 {
		h[HeaderToolCalls] = []string{strings.Join(r.ExpectedToolCalls, ",")}
	}
	if r.Session != "" {
		h[HeaderSession] = []string{r.Session}
	}
	c.setAuth(h)
	hc := c.hc
	if fresh {
		hc = c.fresh
	}
	rec.Sent = c.cfg.Now()
	resp, err := hc.Do(req)
	if cs, cd := connStart.Load(), connDone.Load(); cs != 0 && cd > cs && !reused.Load() {
		// A new connection: its handshakes are the client's, not the
		// server's answer, so the request counts as sent once the
		// connection was in hand and the connect time is kept apart.
		rec.ConnectNs = cd - cs
		if g := gotConn.Load(); g > rec.Sent {
			rec.Sent = g
		}
	}
	answered := phase.Swap(phaseBody) == phaseHeaders // response bytes came on the last hop
	rec.Redirects = redirects
	if err != nil {
		rec.End = c.cfg.Now()
		var re *redirectError
		switch {
		case errors.As(err, &re) && ctx.Err() == nil:
			if resp != nil {
				rec.Status = resp.StatusCode
			}
			c.fail(rec, re.class, re.msg)
		case mayRetry && reused.Load() && !answered && ctx.Err() == nil && (!wrote.Load() || IsReset(err)):
			return true
		case answered && ctx.Err() == nil:
			// The server began an answer that is not HTTP: a header over
			// the limit or that does not parse, or a cut inside them.
			c.fail(rec, runlog.ErrBadResponse, "bad response: "+badResponseText(err))
		default:
			c.classifyErr(ctx, rec, err, true)
		}
		return false
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if n := ReplicaOf(resp.Header); n != 0 {
		rec.Replica = n // a simulated fleet's replica
	}
	if resp.StatusCode/100 == 3 {
		// A redirect Go did not follow: no (usable) Location, or a status
		// it does not follow (300, 304).
		rec.End = c.cfg.Now()
		msg := fmt.Sprintf("HTTP %d without a Location header", resp.StatusCode)
		if loc := resp.Header.Get("Location"); loc != "" {
			msg = fmt.Sprintf("HTTP %d to %s: not followed", resp.StatusCode, redact.URLString(loc))
		}
		c.fail(rec, runlog.ErrRedirect, msg)
		return false
	}
	var rd io.Reader = resp.Body
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(rd, 4096))
		rec.End = c.cfg.Now()
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			rec.RetryAfterNs = int64(RetryAfter(resp.Header, time.Now()))
		}
		c.fail(rec, runlog.StatusClass(resp.StatusCode), fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorText(msg)))
		return false
	}
	rd, err = decoded(resp.Header.Get("Content-Encoding"), rd)
	if err != nil {
		rec.End = c.cfg.Now()
		if ctx.Err() != nil {
			c.classifyErr(ctx, rec, err, false)
		} else {
			c.fail(rec, runlog.ErrBadResponse, err.Error())
		}
		return false
	}
	if c.cfg.NoStream {
		c.readWhole(ctx, rd, rec)
		return false
	}
	ctype := resp.Header.Get("Content-Type")
	kind, rd := sniff(ctype, rd)
	switch kind {
	case bodyJSON:
		// A server that ignores "stream": measure the answer it gave, as
		// --no-stream would, and say so on the record (readWhole does).
		c.readWhole(ctx, rd, rec)
		return false
	case bodyOther:
		c.notEventStream(ctx, ctype, rd, rec)
		return false
	}
	if c.read(ctx, rd, rec) {
		// Read to the body's end (the chunked terminator follows [DONE])
		// so the connection goes back to the pool instead of being closed:
		// otherwise every request pays a new connection inside its TTFT.
		_, _ = io.Copy(io.Discard, io.LimitReader(rd, 64<<10))
	}
	return false
}

// badResponseText is the message of a response that is not readable HTTP,
// without the URL Go prefixes and without a Location's value (it may carry
// credentials and did not parse, so cannot be redacted as a URL).
func badResponseText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := strings.TrimPrefix(err.Error(), "net/http: HTTP/1.x transport connection broken: ")
	if strings.Contains(msg, "Location header") {
		return "a redirect whose Location header is not a URL"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "connection closed inside the response headers"
	}
	return redact.Generic(msg)
}

// decoded undoes the response's Content-Encoding: gzip and deflate, which
// some gateways apply though the client asks for identity. Go's transport
// decodes only what it asked for itself, and it asks for nothing here.
func decoded(coding string, body io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(coding)) {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding gzip: %w", err)
		}
		return zr, nil
	case "deflate":
		zr, err := zlib.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding deflate: %w", err)
		}
		return zr, nil
	}
	return nil, fmt.Errorf("Content-Encoding %q is not decoded (the client asks for identity)", OneLine(coding))
}

// The kinds of body a 200 answer to a streamed request has.
const (
	bodyEvents = iota // an event stream (by its Content-Type or its first bytes)
	bodyJSON          // one JSON object: the server ignored "stream"
	bodyOther         // neither: a gateway's HTML page, plain text
)

// sniffLen is how many leading bytes sniff reads, at most, to find the
// first that is not white space.
const sniffLen = 512

// sniff tells an event stream from a whole JSON answer or anything else.
// A text/event-stream Content-Type is believed without a look; otherwise
// the first bytes decide (a sloppy server may label its stream text/plain
// or not at all), an HTML type excepted. It returns a reader that still
// yields every byte.
func sniff(ctype string, body io.Reader) (int, io.Reader) {
	mt, _, _ := mime.ParseMediaType(ctype)
	if mt == "text/event-stream" {
		return bodyEvents, body
	}
	buf := make([]byte, 0, sniffLen)
	var err error
	var first []byte
	for !sniffed(first) && err == nil && len(buf) < cap(buf) {
		var n int
		n, err = body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		first = bytes.TrimLeft(bytes.TrimPrefix(buf, []byte(sse.BOM)), " \t\r\n")
	}
	rd := io.MultiReader(bytes.NewReader(buf), errReader{err})
	if err == nil {
		rd = io.MultiReader(bytes.NewReader(buf), body)
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return bodyOther, rd
	case len(first) == 0: // empty (or all white space): let the stream reader say so
		if mt == "application/json" {
			return bodyJSON, rd
		}
		return bodyEvents, rd
	case first[0] == '{':
		return bodyJSON, rd
	}
	for _, field := range []string{"data:", "event:", "id:", "retry:", ":", "data\n", "data\r"} {
		if bytes.HasPrefix(first, []byte(field)) || (len(first) < len(field) && strings.HasPrefix(field, string(first))) {
			return bodyEvents, rd
		}
	}
	return bodyOther, rd
}

// sniffed reports whether first, the leading bytes of a body after white
// space, are enough to tell its kind.
func sniffed(first []byte) bool {
	if len(first) == 0 {
		return false
	}
	switch first[0] {
	case '{', '<', ':':
		return true
	}
	return len(first) >= len("retry:") || bytes.ContainsAny(first, "\r\n")
}

// errReader returns its error (io.EOF when nil) from every Read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// notStreamQuote is how many leading bytes of an answer that is no event
// stream its record's error quotes.
const notStreamQuote = 200

// notEventStream fails rec (class not_event_stream) for a 200 answer to a
// streamed request that is neither an event stream nor JSON, quoting its
// type and first bytes.
func (c *Client) notEventStream(ctx context.Context, ctype string, body io.Reader, rec *runlog.Record) {
	q := make([]byte, notStreamQuote)
	n, _ := io.ReadFull(body, q)
	rec.End = c.cfg.Now()
	if ctx.Err() != nil && n == 0 {
		c.classifyErr(ctx, rec, ctx.Err(), false)
		return
	}
	c.fail(rec, runlog.ErrNotEventStream, NotEventStream(ctype, q[:n], n == len(q)))
}

// read consumes the event stream into rec. It reports whether the stream
// ended cleanly with [DONE], leaving the body worth draining. It stops
// reading a runaway: more tokens than tokenCap, one event over maxEvent
// bytes, or more bytes in all than the cap allows.
func (c *Client) read(ctx context.Context, body io.Reader, rec *runlog.Record) (clean bool) {
	st := c.pool.Get().(*streamState)
	maxEvent := c.maxEvent()
	tokCap := c.tokenCap(rec.MaxTokens)
	cr := &st.cr
	*cr = countingReader{r: body, maxEvent: int64(maxEvent) + sse.DefaultBufSize,
		maxTotal: tokCap*runawayBytesPerToken + int64(maxEvent)}
	st.sr.Reset(cr)
	st.sr.SetMaxEventSize(maxEvent)
	m := &st.meter
	m.Reset(rec)
	st.dec.Reset()
	keep := c.cfg.KeepText
	st.text = st.text[:0]
	var tokens int64
	seen := 0
	for !m.Stopped() {
		ev, err := st.sr.Next()
		cr.since = 0
		if err == io.EOF {
			m.EOF(c.cfg.Now())
			break
		}
		if err != nil {
			class, msg := c.classify(ctx, err, false)
			switch {
			case errors.Is(err, sse.ErrEventTooLong):
				class, msg = runlog.ErrRunaway, fmt.Sprintf("an event over %d bytes: stopped reading", maxEvent)
			case errors.Is(err, errEventTooLong):
				class, msg = runlog.ErrRunaway, fmt.Sprintf("over %d bytes without a complete event: stopped reading", maxEvent)
			case errors.Is(err, errTooManyBytes):
				class, msg = runlog.ErrRunaway, fmt.Sprintf("over %d bytes streamed with %d tokens (cap %d): stopped reading", cr.maxTotal, tokens, tokCap)
			}
			m.Abort(c.cfg.Now(), class, msg)
			break
		}
		m.Event(ev.Data, ev.At, ev.Truncated)
		for ; seen < len(rec.Chunks); seen++ {
			tokens += int64(rec.Chunks[seen].Tokens)
		}
		if tokens > tokCap {
			asked := "max_tokens " + strconv.Itoa(rec.MaxTokens)
			if rec.MaxTokens <= 0 {
				asked = "no max_tokens"
			}
			m.Abort(ev.At, runlog.ErrRunaway, fmt.Sprintf("%d tokens streamed, over the cap of %d for %s: stopped reading", tokens, tokCap, asked))
			break
		}
		if keep {
			st.keepText(ev.Data)
		}
	}
	m.Close(rec.RequestedPromptTokens)
	if keep {
		rec.GeneratedText = string(st.text)
	}
	clean = m.Done()
	cr.r = nil
	// A reader grown by a giant event, or a big kept text, is not worth
	// holding in the pool.
	if cr.peak <= maxPooledEvent && cap(st.text) <= maxPooledEvent {
		c.pool.Put(st)
	}
	return clean
}

// maxPooledEvent is the largest event (bytes) whose stream's state goes
// back to the pool; a larger one may have grown the buffers.
const maxPooledEvent = 1 << 20

var (
	errEventTooLong = errors.New("event too long")
	errTooManyBytes = errors.New("too many bytes")
)

// countingReader counts a stream's bytes, in all and since the last event,
// and fails the read that takes either past its cap: the event reader's
// own limit bounds its buffer, which neither an event of endless data
// lines nor endless comments grow.
type countingReader struct {
	r                  io.Reader
	total, since, peak int64
	maxEvent, maxTotal int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.total += int64(n)
	r.since += int64(n)
	r.peak = max(r.peak, r.since)
	if err == nil {
		switch {
		case r.total > r.maxTotal:
			err = errTooManyBytes
		case r.since > r.maxEvent:
			err = errEventTooLong
		}
	}
	return n, err
}

// keepText appends the visible text of one event to st.text. It decodes
// the event a second time (the meter keeps no text), after its arrival was
// stamped, so it costs CPU but no measured time.
func (st *streamState) keepText(data []byte) {
	if len(data) == 0 || bytes.Equal(data, doneMarker) {
		return
	}
	if st.dec.Decode(data, &st.ch) == nil && st.ch.Inputs == 0 {
		st.text = append(st.text, st.ch.Content...)
	}
}

// maxWholeBody bounds a non-streamed answer read into memory.
const maxWholeBody = 64 << 20

// readWhole reads a non-streamed answer ("stream": false) into rec: one
// chunk at the moment the whole body had arrived, carrying every generated
// token (usage's count, else 1), visible unless all of it was reasoning.
func (c *Client) readWhole(ctx context.Context, body io.Reader, rec *runlog.Record) {
	b, err := io.ReadAll(io.LimitReader(body, maxWholeBody+1))
	at := c.cfg.Now()
	rec.End = at
	rec.Chunks = rec.Chunks[:0]
	rec.WholeAnswer = true
	rec.TokenSource = runlog.TokensCounted
	if rec.PromptTokens == 0 {
		rec.PromptTokens = rec.RequestedPromptTokens
	}
	if err != nil {
		c.classifyErr(ctx, rec, err, false)
		return
	}
	if len(b) > maxWholeBody {
		c.fail(rec, runlog.ErrMalformed, fmt.Sprintf("response body over %d MiB", maxWholeBody>>20))
		return
	}
	st := c.pool.Get().(*streamState)
	st.dec.Reset()
	text := MeasureWhole(st.dec, rec, b, at, rec.RequestedPromptTokens)
	c.pool.Put(st)
	if !c.proto.Streams() && rec.Embeddings == 0 {
		c.fail(rec, runlog.ErrBadResponse, "the answer holds no embedding")
	}
	if c.cfg.KeepText {
		rec.GeneratedText = text
	}
}

// streamState is the per-stream reading machinery, pooled so a request does
// not allocate a 64 KiB buffer.
type streamState struct {
	sr    *sse.Reader
	cr    countingReader
	meter StreamMeter
	// For KeepText and non-streamed answers: a decoder of their own, and
	// the text kept so far.
	dec  EventDecoder
	ch   Chunk
	text []byte
}

func (c *Client) fail(rec *runlog.Record, class runlog.ErrorClass, msg string) {
	if rec.ErrorClass != "" {
		return
	}
	rec.ErrorClass = class
	rec.Error = OneLine(msg)
}

// classifyErr records a transport error's class on rec.
func (c *Client) classifyErr(ctx context.Context, rec *runlog.Record, err error, beforeResponse bool) {
	class, msg := c.classify(ctx, err, beforeResponse)
	c.fail(rec, class, msg)
}

// classify maps a transport error to an error class and message.
func (c *Client) classify(ctx context.Context, err error, beforeResponse bool) (runlog.ErrorClass, string) {
	cause := context.Cause(ctx)
	var ie *idleError
	switch {
	case errors.As(cause, &ie):
		return runlog.ErrIdleTimeout, ie.Error()
	case errors.Is(cause, errTimeout):
		return runlog.ErrTimeout, fmt.Sprintf("request exceeded %v", c.cfg.Timeout)
	case ctx.Err() != nil:
		return runlog.ErrCancelled, "cancelled"
	case beforeResponse && IsReset(err):
		return runlog.ErrConnectReset, err.Error()
	case beforeResponse:
		return runlog.ErrConnect, err.Error()
	}
	return runlog.ErrStream, err.Error()
}

// IsReset reports whether err is the peer dropping the connection (a reset,
// a broken pipe, or EOF where an answer was due): on a new connection, a
// connect_reset; on a kept-alive one, a server that had closed it.
func IsReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// errorText pulls the message out of an OpenAI error body, else returns the
// body itself, trimmed.
func errorText(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		if len(e.Error) > 0 && json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if len(e.Error) > 0 && json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
		if e.Message != "" {
			return e.Message
		}
		if e.Detail != nil {
			return fmt.Sprint(e.Detail)
		}
	}
	return strings.TrimSpace(string(body))
}

// OneLine flattens s to one line of single spaces, at most 300 bytes (and
// an ellipsis): how a server's error text is kept in a record.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// The phases of one hop of a request, for the idle timeout's message.
const (
	phaseWaiting int32 = iota // sent (or connecting), no byte of the response yet
	phaseHeaders              // inside the response headers
	phaseBody                 // the headers are in: reading the body
)

// idleError is the cause of a request cancelled for silence.
type idleError struct {
	d     time.Duration
	phase int32
}

func (e *idleError) Error() string {
	switch e.phase {
	case phaseWaiting:
		return fmt.Sprintf("no data for %v after the request was sent (no response yet)", e.d)
	case phaseHeaders:
		return fmt.Sprintf("no data for %v inside the response headers", e.d)
	}
	return fmt.Sprintf("no data for %v mid-stream", e.d)
}

// idleWatch cancels a request when its connection reads no byte for d.
// The connection's reads reset it (see watchedConn), on whichever
// goroutine makes them, so the headers count as much as the body.
type idleWatch struct {
	d time.Duration
	t *time.Timer

	mu    sync.Mutex
	conns []*watchedConn // the connections it is attached to, to detach
}

func newIdleWatch(d time.Duration, phase *atomic.Int32, cancel context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{d: d}
	w.t = time.AfterFunc(d, func() { cancel(&idleError{d: d, phase: phase.Load()}) })
	return w
}

// attach makes conn's reads reset the watch.
func (w *idleWatch) attach(conn net.Conn) {
	wc := watched(conn)
	if wc == nil {
		return
	}
	wc.watch.Store(w)
	w.mu.Lock()
	w.conns = append(w.conns, wc)
	w.mu.Unlock()
}

// stop stops the timer and detaches the watch from its connections (which
// a later request may already have taken over).
func (w *idleWatch) stop() {
	w.t.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wc := range w.conns {
		wc.watch.CompareAndSwap(w, nil)
	}
	w.conns = nil
}

// watchedConn is a connection that resets the idle watch of the request
// it serves on every read that brings bytes.
type watchedConn struct {
	net.Conn
	watch atomic.Pointer[idleWatch]
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if w := c.watch.Load(); w != nil {
			w.t.Reset(w.d)
		}
	}
	return n, err
}

// watched finds the watchedConn under conn (a TLS connection wraps it).
func watched(conn net.Conn) *watchedConn {
	for conn != nil {
		switch v := conn.(type) {
		case *watchedConn:
			return v
		case interface{ NetConn() net.Conn }:
			conn = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
	// Root is the model the id serves (vLLM: its path or Hugging Face id).
	Root string `json:"root,omitempty"`
}

// Models lists the server's models.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	u := joinURL(c.base, "/v1/models")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c.setAuth(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", u, resp.StatusCode, OneLine(errorText(b)))
	}
	var list struct {
		Data []Model `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("GET %s: not a model list: %w", u, err)
	}
	return list.Data, nil
}

// SetModel sets the model id (after discovery). It sets the client up:
// call it before the client is used concurrently, as Resolve does before
// any request is prepared.
func (c *Client) SetModel(m string) { c.cfg.Model = m }

// Try sends one short request (prompt "Hi", one output token) as id and
// returns its record: a look, before a run, at whether the server serves
// the model at all.
func (c *Client) Try(ctx context.Context, id string) runlog.Record {
	r := &Request{ID: id, Prompt: "Hi", MaxTokens: 1}
	var rec runlog.Record
	body, err := c.Body(r)
	if err != nil {
		rec.ID, rec.ErrorClass, rec.Error = id, runlog.ErrMalformed, err.Error()
		return rec
	}
	c.Stream(ctx, r, body, &rec)
	return rec
}

// modelMissingPhrases say, in a server's error message, that a model is not
// there.
var modelMissingPhrases = []string{"not exist", "n't exist", "not found", "unknown model", "no such model", "not served"}

// ModelMissing reports whether rec failed because the server does not serve
// the model asked for: a 404 or 400 whose message is about a model that does
// not exist (vLLM and the simulator: "The model `x` does not exist.";
// OpenAI adds "or you do not have access to it"; Ollama: "model \"x\" not
// found"). Any other failure is not: a wrong path's bare 404, a prompt too
// long for the model, an overloaded server. Servers that answer any model
// name (llama.cpp, TGI) never produce it.
func ModelMissing(rec *runlog.Record) bool {
	if rec.Status != http.StatusNotFound && rec.Status != http.StatusBadRequest {
		return false
	}
	msg := strings.ToLower(rec.Error)
	if !strings.Contains(msg, "model") {
		return false
	}
	for _, p := range modelMissingPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// SetContinuousUsage turns per-chunk usage on or off (after discovery). Like
// SetModel it sets the client up, before any concurrent use.
func (c *Client) SetContinuousUsage(on bool) { c.cfg.ContinuousUsage = on }

// setAuth puts the API key and the user's --header values on h (the user's
// win, as they are set last).
func (c *Client) setAuth(h http.Header) {
	for k, v := range c.auth {
		h[k] = v
	}
	for k, v := range c.cfg.Headers {
		h[k] = v
	}
}

// joinURL is base with path appended to its path; a query in base (an
// Azure-style ?api-version=) and one in path are both kept.
func joinURL(base *url.URL, path string) string {
	u := *base
	p, q, _ := strings.Cut(path, "?")
	u.Path = strings.TrimRight(u.Path, "/") + p
	u.RawPath = ""
	if q != "" {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += q
	}
	return u.String()
}
