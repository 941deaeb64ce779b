package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goodput/goodput/internal/wire"
)

// maxReplays bounds how often one request is sent again after meeting a
// dead idle upstream connection. Each replay takes another connection from
// the idle pool, and a fresh one never counts as dead-idle, so the bound
// only matters when the pool holds many connections the upstream has
// closed at once.
const maxReplays = 8

// replayWait bounds the wait for the transport to close a failed
// attempt's body before the request can be sent again.
const replayWait = time.Second

// roundTrip sends the request upstream, stamping the send time (the
// record's Sent). A request that meets a dead idle connection — the
// upstream closed a kept-alive connection just as the proxy reused it, as
// llama.cpp does after every stream — is sent again, from the copy the
// proxy kept of its body, when that copy holds the whole body; nothing of
// the answer has reached the client then (no response came at all).
func (p *Proxy) roundTrip(r *http.Request) (*http.Response, error) {
	ex, _ := r.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return p.transport.RoundTrip(r)
	}
	for attempt := 0; ; attempt++ {
		at := &attemptTrace{}
		req := r.WithContext(httptrace.WithClientTrace(r.Context(), at.trace()))
		if req.Body != nil {
			ex.out = &sentBody{ReadCloser: req.Body, done: make(chan struct{})}
			req.Body = ex.out
		}
		ex.sent = p.now()
		resp, err := p.transport.RoundTrip(req)
		if err == nil {
			at.stripConnectionListed(resp)
			return resp, nil
		}
		if attempt >= maxReplays || r.Context().Err() != nil || !at.deadIdle(err) {
			return nil, err
		}
		body, ok := ex.replayBody()
		if !ok {
			return nil, err
		}
		p.log.Debug("upstream closed an idle connection the request was sent on; sending it again",
			"route", ex.route, "error", ex.secrets.String(errText(err)))
		if body != nil {
			r = r.WithContext(r.Context()) // a copy: the body changes, not the caller's request
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
	}
}

// replayBody returns the request body to send again (nil for none) once
// the transport has let go of the one it was given; ok is false when that
// cannot be done: the transport still holds it, or the body is larger
// than the proxy keeps.
func (ex *exchange) replayBody() (body []byte, ok bool) {
	if ex.out == nil { // no body
		return nil, true
	}
	// Go's HTTP/1 transport has closed it by the time RoundTrip returns
	// an error; others may take a moment.
	select {
	case <-ex.out.done:
	case <-time.After(replayWait):
		return nil, false
	}
	if ex.replay != nil {
		return ex.replay, true
	}
	if ex.capture == nil {
		return nil, false
	}
	// The transport may have failed before reading all of the client's
	// body: the rest is read now, still bounded by MaxInspectBytes.
	b, ok := ex.capture.readRest()
	if ok && b == nil {
		b = []byte{}
	}
	return b, ok
}

// sentBody is the request body one attempt hands the transport, which
// closes it when it is done with it ("including on errors, but [...] may
// do so in a separate goroutine even after RoundTrip returns"): done tells
// the handler that nothing reads the client's body for that attempt any
// more.
type sentBody struct {
	io.ReadCloser
	once sync.Once
	done chan struct{}
}

func (b *sentBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return b.ReadCloser.Close()
}

// attemptTrace follows one upstream attempt: which connection it got and
// whether any byte of an answer came back.
type attemptTrace struct {
	reused    bool
	conn      *hdrConn
	firstByte atomic.Bool // set by the transport's reading goroutine
}

func (at *attemptTrace) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) {
			at.reused = ci.Reused
			if c, ok := ci.Conn.(*hdrConn); ok {
				at.conn = c
				c.arm()
			}
		},
		GotFirstResponseByte: func() { at.firstByte.Store(true) },
	}
}

// deadIdle reports whether err is the failure of a reused connection the
// upstream had already closed: end of file, a reset, a broken pipe, a
// connection the transport had just closed, or Go's own "server closed
// idle connection", before any answer byte.
func (at *attemptTrace) deadIdle(err error) bool {
	if !at.reused || at.firstByte.Load() || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	// net.ErrClosed: the transport closed the connection itself, having
	// read the upstream's end of it, just as the request was written.
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || wire.IsReset(err) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// stripConnectionListed removes the headers an HTTP/1.1 response's
// Connection header names. Go's transport deletes a Connection header that
// says close before the ReverseProxy can strip what it lists, so the
// listed names would pass; the header as it came is read from the
// connection's copy of the response head (plain-HTTP upstreams through the
// proxy's own transport; under TLS the bytes are not seen).
func (at *attemptTrace) stripConnectionListed(resp *http.Response) {
	if at.conn == nil || !resp.Close || resp.ProtoMajor != 1 || resp.ProtoMinor < 1 {
		return
	}
	for _, name := range at.conn.connectionTokens() {
		resp.Header.Del(name)
	}
}

// maxHeadCopy bounds the copy of a response head an hdrConn keeps.
const maxHeadCopy = 64 << 10

// hdrConn is an upstream connection that, when armed (as a request is sent
// on it), keeps a copy of the head of the response that comes back: the
// status line and headers, up to the blank line. Reads after the head cost
// one atomic load.
type hdrConn struct {
	net.Conn
	armed atomic.Bool

	mu   sync.Mutex
	head []byte
	done bool // head holds a complete final (non-1xx) response head
}

func (c *hdrConn) arm() {
	c.mu.Lock()
	c.head, c.done = c.head[:0], false
	c.mu.Unlock()
	c.armed.Store(true)
}

func (c *hdrConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.armed.Load() {
		c.keep(p[:n])
	}
	return n, err
}

// keep appends b to the head being copied, up to its blank line.
func (c *hdrConn) keep(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(b) > 0 {
		from := max(0, len(c.head)-3)
		c.head = append(c.head, b...)
		i := bytes.Index(c.head[from:], []byte("\r\n\r\n"))
		if i < 0 {
			if len(c.head) > maxHeadCopy {
				c.head, c.done = nil, false
				c.armed.Store(false)
			}
			return
		}
		end := from + i + 4
		rest := c.head[end:]
		c.head = c.head[:end]
		if !bytes.HasPrefix(c.head, []byte("HTTP/1.1 1")) && !bytes.HasPrefix(c.head, []byte("HTTP/1.0 1")) {
			c.done = true
			c.armed.Store(false)
			return
		}
		// An interim 1xx answer: the final one follows.
		b = append([]byte(nil), rest...)
		c.head = c.head[:0]
	}
}

// connectionTokens returns the names the last response head's Connection
// headers list.
func (c *hdrConn) connectionTokens() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		return nil
	}
	var out []string
	for line := range bytes.SplitSeq(c.head, []byte("\r\n")) {
		name, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(name), []byte("Connection")) {
			continue
		}
		for tok := range strings.SplitSeq(string(v), ",") {
			if tok = textproto.TrimString(tok); tok != "" {
				out = append(out, tok)
			}
		}
	}
	return out
}

// dialKeepingHeads wraps a dial function so that its connections keep
// response heads (hdrConn).
func dialKeepingHeads(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &hdrConn{Conn: c}, nil
	}
}
