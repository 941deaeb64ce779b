package scrape

import (
	"context"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
)

// memNet is an in-memory network of HTTP servers joined by net.Pipe, so
// that real net/http servers and clients run inside a testing/synctest
// bubble: a goroutine blocked on a pipe is durably blocked, one blocked on
// a loopback socket is not, and the fake clock would never advance.
type memNet struct {
	mu sync.Mutex
	ls map[string]*memListener // by host:port
}

// serve starts an http.Server for h at host (e.g. "server:8000") and
// returns its /metrics URL and a function that closes it.
func (n *memNet) serve(t *testing.T, host string, h http.Handler) (string, func()) {
	t.Helper()
	l := &memListener{addr: host, conns: make(chan net.Conn), done: make(chan struct{})}
	n.mu.Lock()
	if n.ls == nil {
		n.ls = map[string]*memListener{}
	}
	n.ls[host] = l
	n.mu.Unlock()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	return "http://" + host + "/metrics", func() { _ = srv.Close() }
}

// client is an HTTP client on the network, with its own transport.
func (n *memNet) client() (*http.Client, func()) {
	tr := &http.Transport{DialContext: n.dial, DisableCompression: true}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

func (n *memNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[addr]
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	if l == nil {
		return nil, refused
	}
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, refused
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memListener struct {
	addr  string
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr(l.addr) }

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }
