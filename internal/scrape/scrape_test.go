package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// TestMain checks that Run leaves no goroutine behind: not its own, not
// its transport's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const metricsBody = "# TYPE up gauge\nup 1\n"

// got is a Sample as the tests compare it.
type got struct {
	Target   string
	Intended time.Duration
	At       time.Duration
	Latency  time.Duration
	Skipped  int
	Status   int
	Body     string
	Err      string
}

func view(s Sample) got {
	g := got{Target: s.Target, Intended: time.Duration(s.Intended), At: time.Duration(s.At),
		Latency: s.Latency, Skipped: s.Skipped, Status: s.Status, Body: string(s.Body)}
	if s.Err != nil {
		g.Err = s.Err.Error()
	}
	return g
}

// sink collects Samples; emit is safe for concurrent use.
type sink struct {
	mu      sync.Mutex
	samples []Sample
}

func (k *sink) emit(s Sample) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.samples = append(k.samples, s)
}

// of returns the samples of one target, in the order emitted.
func (k *sink) of(target string) []got {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []got
	for _, s := range k.samples {
		if s.Target == target {
			out = append(out, view(s))
		}
	}
	return out
}

// runFor runs cfg inside a synctest bubble for d of fake time, cancels,
// and fails unless Run returned at the very instant of the cancel.
func runFor(t *testing.T, cfg Config, d time.Duration, emit func(Sample)) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, emit) }()
	time.Sleep(d)
	cancel()
	at := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	if waited := time.Since(at); waited != 0 {
		t.Errorf("Run returned %v after ctx ended; want at once", waited)
	}
}

// clockFrom is a run clock that reads offset when called first.
func clockFrom(offset time.Duration) func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start) + offset) }
}

// metricsAfter answers metricsBody after d, or gives up when the client
// does.
func metricsAfter(d time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, metricsBody)
	}
}

// countingTransport counts the client's scrapes in flight, from the
// request to the body's close, and most the highest count seen. (The
// server's count can briefly exceed the client's: it notices an abandoned
// request only after the client has moved on.)
type countingTransport struct {
	next           http.RoundTripper
	inFlight, most *atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := c.inFlight.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		c.inFlight.Add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, done: func() { c.inFlight.Add(-1) }}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *countedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

// hang never answers; it returns when the client goes away.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func TestScrapesOnTicks(t *testing.T) {
	const s = time.Second
	ok := func(intended, at, latency time.Duration) got {
		return got{Target: "server", Intended: intended, At: at, Latency: latency, Status: 200, Body: metricsBody}
	}
	for _, tc := range []struct {
		name   string
		offset time.Duration // the run clock when Run starts
		answer time.Duration // the server's time to answer
		run    time.Duration
		want   []got
	}{
		{"from the run's start", 0, 0, 3500 * time.Millisecond,
			[]got{ok(0, 0, 0), ok(s, s, 0), ok(2*s, 2*s, 0), ok(3*s, 3*s, 0)}},
		{"started between ticks: a baseline at once, then the grid", 2300 * time.Millisecond, 0, 3 * s,
			[]got{ok(2*s, 2300*time.Millisecond, 0), ok(3*s, 3*s, 0), ok(4*s, 4*s, 0), ok(5*s, 5*s, 0)}},
		{"a server that takes 100ms: ticks do not drift", 0, 100 * time.Millisecond, 2500 * time.Millisecond,
			[]got{ok(0, 100*time.Millisecond, 100*time.Millisecond), ok(s, 1100*time.Millisecond, 100*time.Millisecond),
				ok(2*s, 2100*time.Millisecond, 100*time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n memNet
				url, stop := n.serve(t, "server:8000", metricsAfter(tc.answer))
				defer stop()
				client, closeIdle := n.client()
				defer closeIdle()
				var k sink
				cfg := Config{Targets: []Target{{"server", url}}, Now: clockFrom(tc.offset), Client: client}
				runFor(t, cfg, tc.run, k.emit)
				if diff := cmp.Diff(tc.want, k.of("server")); diff != "" {
					t.Errorf("samples (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestSlowTarget(t *testing.T) {
	const s = time.Second
	timeout := func(intended, at time.Duration, skipped int, after string) got {
		return got{Target: "slow", Intended: intended, At: at, Latency: at - intended, Skipped: skipped,
			Err: "timeout after " + after + " waiting for the response"}
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		run     time.Duration
		want    []got
	}{
		// The default Timeout is the Interval: a timed-out scrape ends
		// at the next tick, which is no gap.
		{"default timeout: no gaps", 0, 3500 * time.Millisecond,
			[]got{timeout(0, s, 0, "1s"), timeout(s, 2*s, 0, "1s"), timeout(2*s, 3*s, 0, "1s")}},
		{"timeout over the interval: gaps counted", 2500 * time.Millisecond, 9 * s,
			[]got{timeout(0, 2500*time.Millisecond, 0, "2.5s"), timeout(3*s, 5500*time.Millisecond, 2, "2.5s"),
				timeout(6*s, 8500*time.Millisecond, 2, "2.5s")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n memNet
				url, stop := n.serve(t, "slow:8000", metricsAfter(5*s))
				defer stop()
				client, closeIdle := n.client()
				defer closeIdle()
				var inFlight, most atomic.Int32
				client.Transport = &countingTransport{next: client.Transport, inFlight: &inFlight, most: &most}
				var k sink
				cfg := Config{Targets: []Target{{"slow", url}}, Timeout: tc.timeout, Now: clockFrom(0), Client: client}
				runFor(t, cfg, tc.run, k.emit)
				if diff := cmp.Diff(tc.want, k.of("slow")); diff != "" {
					t.Errorf("samples (-want +got):\n%s", diff)
				}
				for _, smp := range k.samples {
					if !errors.Is(smp.Err, ErrTimeout) {
						t.Errorf("sample at %v: Err = %v; want ErrTimeout", time.Duration(smp.At), smp.Err)
					}
				}
				if m := most.Load(); m != 1 {
					t.Errorf("most scrapes in flight at once = %d; want 1", m)
				}
			})
		})
	}
}

// TestTargetsIndependent: a hung target and a dead one do not delay the
// healthy target's samples by a nanosecond.
func TestTargetsIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n memNet
		fast, stop := n.serve(t, "server:8000", metricsAfter(0))
		defer stop()
		hung, stopHung := n.serve(t, "hung:9400", http.HandlerFunc(hang))
		defer stopHung()
		client, closeIdle := n.client()
		defer closeIdle()
		var k sink
		cfg := Config{
			Targets:  []Target{{"hung", hung}, {"dead", "http://dead:9100/metrics"}, {"server", fast}},
			Interval: 500 * time.Millisecond, Timeout: 5 * time.Second, Now: clockFrom(0), Client: client,
		}
		runFor(t, cfg, 5200*time.Millisecond, k.emit)

		var want []got
		for i := range 11 {
			at := time.Duration(i) * 500 * time.Millisecond
			want = append(want, got{Target: "server", Intended: at, At: at, Status: 200, Body: metricsBody})
		}
		if diff := cmp.Diff(want, k.of("server")); diff != "" {
			t.Errorf("healthy target's samples (-want +got):\n%s", diff)
		}
		wantHung := []got{{Target: "hung", Intended: 0, At: 5 * time.Second, Latency: 5 * time.Second,
			Err: "timeout after 5s waiting for the response"}}
		if diff := cmp.Diff(wantHung, k.of("hung")); diff != "" {
			t.Errorf("hung target's samples (-want +got):\n%s", diff)
		}
		dead := k.of("dead")
		if len(dead) != 11 {
			t.Errorf("dead target: %d samples; want 11 (one a tick)", len(dead))
		}
		for _, s := range k.samples {
			if s.Target == "dead" && !errors.Is(s.Err, syscall.ECONNREFUSED) {
				t.Errorf("dead target: Err = %v; want connection refused", s.Err)
			}
		}
	})
}

// TestSlowEmit: an emit that blocks for one target turns that target's
// ticks into gaps and leaves the other's alone.
func TestSlowEmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n memNet
		a, stopA := n.serve(t, "a:80", metricsAfter(0))
		defer stopA()
		b, stopB := n.serve(t, "b:80", metricsAfter(0))
		defer stopB()
		client, closeIdle := n.client()
		defer closeIdle()
		var k sink
		emit := func(s Sample) {
			k.emit(s)
			if s.Target == "a" {
				time.Sleep(2500 * time.Millisecond)
			}
		}
		cfg := Config{Targets: []Target{{"a", a}, {"b", b}}, Now: clockFrom(0), Client: client}
		runFor(t, cfg, 5500*time.Millisecond, emit)
		intended := func(target string) (out []string) {
			for _, g := range k.of(target) {
				out = append(out, fmt.Sprintf("%v skipped %d", g.Intended, g.Skipped))
			}
			return out
		}
		if diff := cmp.Diff([]string{"0s skipped 0", "3s skipped 2"}, intended("a")); diff != "" {
			t.Errorf("slow emit's target (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"0s skipped 0", "1s skipped 0", "2s skipped 0", "3s skipped 0", "4s skipped 0", "5s skipped 0"}, intended("b")); diff != "" {
			t.Errorf("other target (-want +got):\n%s", diff)
		}
	})
}

func TestCancelReturnsPromptly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    int // samples
	}{
		{"mid-scrape: the scrape is dropped", hang, 0},
		{"between ticks", metricsAfter(0), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n memNet
				url, stop := n.serve(t, "server:8000", tc.handler)
				defer stop()
				client, closeIdle := n.client()
				defer closeIdle()
				var k sink
				cfg := Config{Targets: []Target{{"server", url}}, Interval: time.Minute, Timeout: time.Minute,
					Now: clockFrom(0), Client: client}
				runFor(t, cfg, 10*time.Second, k.emit) // fails unless Run returns at once
				if len(k.samples) != tc.want {
					t.Errorf("%d samples; want %d", len(k.samples), tc.want)
				}
			})
		})
	}
}

func TestBodiesAreFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n memNet
		var count atomic.Int32
		url, stop := n.serve(t, "server:8000", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "requests_total %d\n", count.Add(1))
		}))
		defer stop()
		client, closeIdle := n.client()
		defer closeIdle()
		var bodies [][]byte
		emit := func(s Sample) { bodies = append(bodies, s.Body) } // one target: calls are sequential
		runFor(t, Config{Targets: []Target{{"server", url}}, Now: clockFrom(0), Client: client}, 2500*time.Millisecond, emit)
		var got []string
		for _, b := range bodies {
			got = append(got, string(b))
		}
		want := []string{"requests_total 1\n", "requests_total 2\n", "requests_total 3\n"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("bodies kept across samples (-want +got):\n%s", diff)
		}
	})
}

// closedPort is a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// rawServer answers every connection on loopback with reply, not HTTP.
func rawServer(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// Answer the request, not the connection: a reply before
			// the request would be "unsolicited", another error.
			_, _ = c.Read(make([]byte, 4096))
			_, _ = c.Write([]byte(reply))
			c.Close()
		}
	})
	return l.Addr().String()
}

// firstSample runs cfg over real loopback until the first Sample.
func firstSample(t *testing.T, cfg Config) Sample {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := make(chan Sample, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, func(s Sample) {
			select {
			case first <- s:
				cancel()
			default:
			}
		})
	}()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	select {
	case s := <-first:
		return s
	default:
		t.Fatal("Run returned without a sample")
		return Sample{}
	}
}

// TestFailures scrapes real loopback servers that misbehave: each answer
// is a Sample with a one-line Err, or, for a 200 with a body that is not
// metrics, the body itself (the parser judges it).
func TestFailures(t *testing.T) {
	body := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc // nil: addr instead
		addr    func(t *testing.T) string
		status  int
		body    string
		is      error  // errors.Is(Err, is)
		err     string // Err's text; "" for none
	}{
		{name: "HTTP 500", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "engine dead\nstack trace...", http.StatusInternalServerError)
		}, status: 500, err: `HTTP 500 Internal Server Error: "engine dead"`},
		{name: "HTTP 404", handler: http.NotFound, status: 404, err: `HTTP 404 Not Found: "404 page not found"`},
		{name: "garbage with 200 is passed on", handler: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "\x00\xffnot metrics {{{")
		}, status: 200, body: "\x00\xffnot metrics {{{"},
		{name: "exactly MaxBody", handler: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, body(1000))
		}, status: 200, body: body(1000)},
		{name: "Content-Length over MaxBody", handler: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, body(1001))
		}, status: 200, is: ErrTooLarge, err: "body too large: Content-Length 1001 over MaxBody 1000"},
		{name: "chunked body over MaxBody", handler: func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // no Content-Length
			for range 100 {
				fmt.Fprint(w, body(100))
			}
		}, status: 200, is: ErrTooLarge, err: "body too large: over MaxBody 1000"},
		{name: "truncated body", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			fmt.Fprint(w, body(10))
		}, status: 200, err: "unexpected EOF"},
		{name: "hung", handler: hang, is: ErrTimeout, err: "timeout after 50ms waiting for the response"},
		{name: "not HTTP", addr: func(t *testing.T) string { return rawServer(t, "SSH-2.0-OpenSSH\r\n\r\n") },
			err: `malformed HTTP response "SSH-2.0-OpenSSH"`}, // sometimes after "transport connection broken: "
		{name: "connection refused", addr: func(t *testing.T) string { return closedPort(t) }, is: syscall.ECONNREFUSED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var addr string
			if tc.handler != nil {
				srv := httptest.NewServer(tc.handler)
				defer srv.Close()
				addr = srv.Listener.Addr().String()
			} else {
				addr = tc.addr(t)
			}
			timeout := 10 * time.Second // no timeout on a loaded machine, but for "hung"
			if tc.is == ErrTimeout {
				timeout = 50 * time.Millisecond
			}
			s := firstSample(t, Config{
				Targets: []Target{{"server", "http://" + addr + "/metrics"}},
				Timeout: timeout, MaxBody: 1000,
			})
			if s.Status != tc.status || string(s.Body) != tc.body {
				t.Errorf("Status, Body = %d, %.40q; want %d, %.40q", s.Status, s.Body, tc.status, tc.body)
			}
			if tc.is != nil && !errors.Is(s.Err, tc.is) {
				t.Errorf("Err = %v; want errors.Is %v", s.Err, tc.is)
			}
			switch {
			case tc.err == "" && tc.is == nil && s.Err != nil:
				t.Errorf("Err = %v; want nil", s.Err)
			case tc.err != "" && (s.Err == nil || !strings.HasSuffix(s.Err.Error(), tc.err)):
				t.Errorf("Err = %v; want %s", s.Err, tc.err)
			case s.Err != nil && strings.ContainsAny(s.Err.Error(), "\r\n"):
				t.Errorf("Err = %q; want one line", s.Err)
			case s.Err != nil && strings.Contains(s.Err.Error(), "/metrics"):
				t.Errorf("Err = %q; want no URL (the Sample names its target)", s.Err)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	metrics := httptest.NewServer(metricsAfter(0))
	defer metrics.Close()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>chat UI</title>")
	}))
	defer web.Close()
	// A server that streams an answer to every path (a toy OpenAI server).
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {}\n\ndata: [DONE]\n\n")
	}))
	defer stream.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	hung := httptest.NewServer(http.HandlerFunc(hang))
	defer hung.Close()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		url  string
		is   error
	}{
		{"metrics", t.Context(), metrics.URL + "/metrics", nil},
		{"a web UI", t.Context(), web.URL + "/metrics", ErrNotMetrics},
		{"an event stream", t.Context(), stream.URL + "/metrics", ErrNotMetrics},
		{"no such path", t.Context(), missing.URL + "/metrics", &StatusError{Code: 404}},
		{"hung", t.Context(), hung.URL + "/metrics", ErrTimeout},
		{"refused", t.Context(), "http://" + closedPort(t) + "/metrics", syscall.ECONNREFUSED},
		{"cancelled", cancelled, metrics.URL + "/metrics", context.Canceled},
		{"bad URL", t.Context(), "localhost:8000/metrics", &ConfigError{Field: "URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := 10 * time.Second
			if tc.is == ErrTimeout {
				timeout = 50 * time.Millisecond
			}
			err := Probe(tc.ctx, tc.url, timeout, nil)
			var ok bool
			switch want := tc.is.(type) {
			case nil:
				ok = err == nil
			case *StatusError:
				var se *StatusError
				ok = errors.As(err, &se) && se.Code == want.Code
			case *ConfigError:
				var ce *ConfigError
				ok = errors.As(err, &ce) && ce.Field == want.Field
			default:
				ok = errors.Is(err, want)
			}
			if !ok {
				t.Errorf("Probe(%s) = %v; want %v", tc.url, err, tc.is)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	good := Target{"server", "http://127.0.0.1:8000/metrics"}
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
		err   string
	}{
		{"no targets", Config{}, "Targets", `scrape: Targets "": need at least one target`},
		{"unnamed target", Config{Targets: []Target{good, {"", good.URL}}}, "Targets[1].Name",
			`scrape: Targets[1].Name "": empty`},
		{"two targets, one name", Config{Targets: []Target{good, good}}, "Targets[1].Name",
			`scrape: Targets[1].Name "server": used by an earlier target`},
		{"no scheme", Config{Targets: []Target{{"dcgm", "localhost:9400/metrics"}}}, "Targets[0].URL",
			`scrape: Targets[0].URL "localhost:9400/metrics": want http(s)://host[:port]/path`},
		{"not http", Config{Targets: []Target{{"dcgm", "ftp://host/metrics"}}}, "Targets[0].URL",
			`scrape: Targets[0].URL "ftp://host/metrics": want http(s)://host[:port]/path`},
		{"no host", Config{Targets: []Target{{"dcgm", "http:///metrics"}}}, "Targets[0].URL",
			`scrape: Targets[0].URL "http:///metrics": want http(s)://host[:port]/path`},
		{"negative interval", Config{Targets: []Target{good}, Interval: -time.Second}, "Interval",
			`scrape: Interval "-1s": want at least 1ms`},
		{"interval too short", Config{Targets: []Target{good}, Interval: time.Microsecond}, "Interval",
			`scrape: Interval "1µs": want at least 1ms`},
		{"negative timeout", Config{Targets: []Target{good}, Timeout: -1}, "Timeout",
			`scrape: Timeout "-1ns": negative`},
		{"negative MaxBody", Config{Targets: []Target{good}, MaxBody: -1}, "MaxBody",
			`scrape: MaxBody "-1": negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(t.Context(), tc.cfg, func(Sample) {})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || err.Error() != tc.err {
				t.Errorf("Run(%+v) = %v; want a ConfigError for %s: %s", tc.cfg, err, tc.field, tc.err)
			}
		})
	}
	if err := Run(t.Context(), Config{Targets: []Target{good}}, nil); err == nil {
		t.Error("Run with a nil emit = nil; want an error")
	}
}

func TestDefaults(t *testing.T) {
	target := []Target{{"server", "http://127.0.0.1:8000/metrics"}}
	for _, tc := range []struct {
		name              string
		interval, timeout time.Duration
		wantInterval      time.Duration
		wantTimeout       time.Duration
	}{
		{"all zero", 0, 0, time.Second, time.Second},
		{"long interval: timeout capped", 10 * time.Second, 0, 10 * time.Second, 2 * time.Second},
		{"short interval: timeout is the interval", 100 * time.Millisecond, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{"timeout given", time.Second, 5 * time.Second, time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config{Targets: target, Interval: tc.interval, Timeout: tc.timeout}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Interval != tc.wantInterval || cfg.Timeout != tc.wantTimeout || cfg.MaxBody != DefaultMaxBody || cfg.Now == nil {
				t.Errorf("defaults(%v, %v) = Interval %v, Timeout %v, MaxBody %d, Now set %t; want %v, %v, %d, true",
					tc.interval, tc.timeout, cfg.Interval, cfg.Timeout, cfg.MaxBody, cfg.Now != nil,
					tc.wantInterval, tc.wantTimeout, DefaultMaxBody)
			}
		})
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{
		{0, 10, 0}, {9, 10, 0}, {10, 10, 1}, {-1, 10, -1}, {-10, 10, -1}, {-11, 10, -2},
	} {
		if got := floorDiv(tc.a, tc.b); got != tc.want {
			t.Errorf("floorDiv(%d, %d) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name        string
		body        string
		size, limit int
		want        string
		tooLarge    bool
		wantCap     int // 0: any
	}{
		{"exact size: no growth", "abcdef", 6, 100, "abcdef", false, 7},
		{"sized short: grows", "abcdefghij", 2, 100, "abcdefghij", false, 0},
		{"empty", "", 0, 100, "", false, 1},
		{"at the limit", "abcde", 5, 5, "abcde", false, 6},
		{"one over the limit", "abcdef", 5, 5, "abcde", true, 0},
		{"far over the limit, sized short", strings.Repeat("x", 1000), 1, 10, strings.Repeat("x", 10), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte a Read, the worst a connection can do.
			b, err := readBody(iotest.OneByteReader(strings.NewReader(tc.body)), tc.size, int64(tc.limit))
			if string(b) != tc.want || errors.Is(err, ErrTooLarge) != tc.tooLarge || (err != nil && !tc.tooLarge) {
				t.Errorf("readBody(%d bytes, %d, %d) = %d bytes, %v; want %d bytes, too large %t",
					len(tc.body), tc.size, tc.limit, len(b), err, len(tc.want), tc.tooLarge)
			}
			if tc.wantCap != 0 && cap(b) != tc.wantCap {
				t.Errorf("cap = %d; want %d", cap(b), tc.wantCap)
			}
		})
	}
}

// Once scrapes every target a single time, at once, and fails a dead one
// without holding up the live one.
func TestOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "up 1\n")
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	var mu sync.Mutex
	got := map[string]Sample{}
	err := Once(t.Context(), Config{Targets: []Target{{Name: "live", URL: srv.URL}, {Name: "dead", URL: deadURL}}, Timeout: time.Second},
		func(s Sample) { mu.Lock(); got[s.Target] = s; mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if s := got["live"]; s.Err != nil || string(s.Body) != "up 1\n" {
		t.Errorf("live: %+v", s)
	}
	if s := got["dead"]; s.Err == nil {
		t.Errorf("dead: no error: %+v", s)
	}
}

// Check validates as Run does, without scraping.
func TestCheck(t *testing.T) {
	if err := (Config{Targets: []Target{{Name: "a", URL: "http://127.0.0.1:9/metrics"}}}).Check(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	var ce *ConfigError
	if err := (Config{Targets: []Target{{Name: "a", URL: "localhost:9/metrics"}}}).Check(); !errors.As(err, &ce) || ce.Field != "Targets[0].URL" {
		t.Errorf("bad URL: %v; want a ConfigError on Targets[0].URL", err)
	}
}
