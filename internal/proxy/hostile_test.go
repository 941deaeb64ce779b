package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sse"
)

// scriptedUpstream is a raw HTTP/1.1 server: for the n-th request on a
// connection (from 0) it calls answer, which writes the whole response to
// w and reports whether the connection may serve another request. It
// reads every request whole first.
type scriptedUpstream struct {
	ln     net.Listener
	answer func(n int, req *http.Request, body []byte, w *bufio.Writer) (keep bool)

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
	reqs  atomic.Int64
}

func newScriptedUpstream(t *testing.T, answer func(n int, req *http.Request, body []byte, w *bufio.Writer) bool) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedUpstream{ln: ln, answer: answer, conns: map[net.Conn]bool{}}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *scriptedUpstream) URL() string { return "http://" + s.ln.Addr().String() }

func (s *scriptedUpstream) serve(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	br, bw := bufio.NewReader(c), bufio.NewWriter(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		s.reqs.Add(1)
		keep := s.answer(n, req, body, bw)
		if bw.Flush() != nil || !keep {
			return
		}
	}
}

// close stops the server and its connections (the proxy may hold idle
// ones open) and waits for its goroutines.
func (s *scriptedUpstream) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// writeStream writes a chunked event-stream response of datas.
func writeStream(w *bufio.Writer, extraHeader string, datas ...string) {
	ev := events(datas...)
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", extraHeader, len(ev), ev)
}

var (
	evA    = `{"choices":[{"index":0,"delta":{"content":"a"}}]}`
	evStop = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
)

// TestUpstreamClosesKeptAliveConnections is llama.cpp's way: every
// connection is closed after the one stream it served, without saying so,
// so the proxy keeps reusing connections the upstream has just closed.
// Before the fix 1–2 requests in 40 failed with 502 and the proxy's server
// panicked ("invalid concurrent Body.Read call"); now every request is
// sent again on a fresh connection, and none fails or panics.
func TestUpstreamClosesKeptAliveConnections(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	want := events(evA, evStop, "[DONE]")
	up := newScriptedUpstream(t, func(_ int, _ *http.Request, _ []byte, w *bufio.Writer) bool {
		writeStream(w, "", evA, evStop, "[DONE]")
		return false
	})
	h := newHarness(t, nil, func(o *Options) { o.Upstream = up.URL() })
	t.Cleanup(up.close) // after the harness: the proxy's idle connections go first
	var failed atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				resp, body, err := h.post(context.Background(), "/v1/chat/completions", fmt.Appendf(nil, `{"model":"m","stream":true,"seed":%d}`, i), nil)
				switch {
				case err != nil:
					t.Errorf("request %d: %v", i, err)
				case resp.StatusCode != 200 || !bytes.Equal(body, want):
					t.Errorf("request %d: %d %q; want 200 and the stream", i, resp.StatusCode, body)
				default:
					continue
				}
				failed.Add(1)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	recs := h.waitRecords(n)
	ok := 0
	for _, r := range recs {
		if r.OK() && r.CompletionTokens == 1 {
			ok++
		}
	}
	if failed.Load() != 0 || len(recs) != n || ok != n {
		t.Errorf("failed %d, records %d (%d ok with 1 token); want 0 failed, %d ok records", failed.Load(), len(recs), ok, n)
	}
	if l := h.srvLog.String(); l != "" {
		t.Errorf("the proxy's server logged:\n%s", l)
	}
}

// TestReplayOnDeadConnection: the upstream drops every connection at its
// second request, unanswered. The proxy sends such a request again on a
// fresh connection when it kept the whole body, and answers 502 (saying
// why) when the body was larger than MaxInspectBytes.
func TestReplayOnDeadConnection(t *testing.T) {
	for _, tt := range []struct {
		name       string
		maxInspect int
		wantStatus int
	}{
		{"whole body kept: sent again", 0, 200},
		{"body larger than kept: 502", 16, 502},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var bodies sync.Map
			up := newScriptedUpstream(t, func(n int, _ *http.Request, body []byte, w *bufio.Writer) bool {
				if n == 1 {
					return false // closed, unanswered
				}
				bodies.Store(string(body), true)
				writeStream(w, "", evA, evStop, "[DONE]")
				return true
			})
			h := newHarness(t, nil, func(o *Options) { o.Upstream = up.URL(); o.MaxInspectBytes = tt.maxInspect })
			t.Cleanup(up.close)
			first := `{"model":"m","stream":true,"messages":[{"role":"user","content":"first"}]}`
			second := `{"model":"m","stream":true,"messages":[{"role":"user","content":"second"}]}`
			if resp, _, err := h.post(context.Background(), "/v1/chat/completions", []byte(first), nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("first request: %v %v", resp, err)
			}
			resp, body, err := h.post(context.Background(), "/v1/chat/completions", []byte(second), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("second request: status %d (%s); want %d", resp.StatusCode, body, tt.wantStatus)
			}
			_, got := bodies.Load(second)
			if want := tt.wantStatus == 200; got != want {
				t.Errorf("upstream got the second body whole: %t; want %t", got, want)
			}
			recs := h.waitRecords(2)
			if rec := recs[1]; (rec.OK()) != (tt.wantStatus == 200) {
				t.Errorf("second record: %q %s; want ok %t", rec.ErrorClass, rec.Error, tt.wantStatus == 200)
			}
		})
	}
}

// TestUpstreamAnswersBeforeUpload: an upstream that answers before the
// client's upload is over, and the client that sends the rest of its body
// only once it has the answer. The proxy must not return while the
// transport still reads the body, and must close the client connection
// rather than leave the body's rest for Go's server to read (it then
// panicked: "invalid concurrent Body.Read call").
func TestUpstreamAnswersBeforeUpload(t *testing.T) {
	// A raw server: it answers as soon as it has the request's headers,
	// and only then reads the body (and closes, as it says: a kept-alive
	// connection it closed would leave Go's transport waiting for a body
	// this client sends only once it has the answer).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var upWG sync.WaitGroup
	upWG.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			upWG.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				const msg = `{"error":{"message":"too large"}}`
				fmt.Fprintf(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
				io.Copy(io.Discard, req.Body)
			})
		}
	})
	t.Cleanup(func() { ln.Close(); upWG.Wait() })
	h := newHarness(t, nil, func(o *Options) { o.Upstream = "http://" + ln.Addr().String() })
	for i := range 20 {
		pr, pw := io.Pipe()
		answered := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer pw.Close()
			if _, err := pw.Write([]byte(`{"model":"m","stream":true,"prompt":"`)); err != nil {
				return
			}
			<-answered
			pw.Write([]byte(strings.Repeat("x", 1000) + `"}`))
		})
		req, _ := http.NewRequest(http.MethodPost, h.front.URL+"/v1/completions", pr)
		resp, err := h.client.Do(req)
		close(answered)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		wg.Wait()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d; want 413 passed through", resp.StatusCode)
		}
	}
	h.close()
	if l := h.srvLog.String(); strings.Contains(l, "panic") {
		t.Errorf("the proxy's server panicked:\n%s", l)
	}
}

// openFDs counts the process's open file descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(es)
}

// TestDisconnectStorm drops hundreds of clients mid-stream (some cancel,
// some just close the body) and checks every stream leaves a cancelled
// record, every upstream request is cancelled, and goroutines and file
// descriptors return to where they were.
func TestDisconnectStorm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts file descriptors through /proc")
	}
	const n = 300
	fds0 := openFDs(t)
	leak := goleak.IgnoreCurrent()
	var upGone atomic.Int64
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cut := false // by the proxy: cancelled, or the write failed
		defer func() {
			if cut {
				upGone.Add(1)
			}
		}()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		stop := time.After(20 * time.Second) // a bound, never reached in a passing run
		for {
			if _, err := io.WriteString(w, "data: "+evA+"\n\n"); err != nil {
				cut = true
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				cut = true
				return
			case <-stop:
				return
			}
		}
	})
	h := newHarness(t, up, nil)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.front.URL+"/v1/chat/completions",
				strings.NewReader(`{"model":"m","stream":true}`))
			resp, err := h.client.Do(req)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			br := bufio.NewReader(resp.Body)
			if _, err := br.ReadString('\n'); err != nil {
				t.Errorf("client %d: first line: %v", i, err)
			}
			if i%2 == 0 {
				cancel()
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	recs := h.waitRecords(n)
	for _, r := range recs {
		if r.ErrorClass != runlog.ErrCancelled || len(r.Chunks) == 0 {
			t.Errorf("record %s: class %q, %d chunks; want cancelled with the chunks that passed", r.ID, r.ErrorClass, len(r.Chunks))
			break
		}
	}
	h.close()
	if got := upGone.Load(); got != n {
		t.Errorf("upstream streams cut by the proxy = %d; want %d", got, n)
	}
	goleak.VerifyNone(t, leak)
	deadline := time.Now().Add(10 * time.Second)
	for openFDs(t) > fds0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // closes finish asynchronously
	}
	if got := openFDs(t); got > fds0 {
		t.Errorf("open file descriptors = %d after the storm; want %d as before", got, fds0)
	}
}

// TestAnswersToStreamedRequests: a streamed request the upstream answers
// 200 with something other than an event stream. JSON is measured as a
// non-streamed answer (E2E and usage from the body); anything else is a
// not_event_stream failure quoting its first bytes. The client gets the
// answer unchanged either way, headers included: no sniffed Content-Type.
func TestAnswersToStreamedRequests(t *testing.T) {
	jsonAnswer := `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`
	html := "<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1>" + strings.Repeat(" ", 100) + "</body></html>"
	tests := []struct {
		name      string
		ctype     []string // nil: no Content-Type at all
		body      string
		wantClass runlog.ErrorClass
		wantErr   string // a part of the record's error
		wantOut   int    // completion tokens
		whole     bool
	}{
		{name: "JSON", ctype: []string{"application/json"}, body: jsonAnswer, wantOut: 3, whole: true},
		{name: "JSON without Content-Type", body: jsonAnswer, wantOut: 3, whole: true},
		{name: "JSON error", ctype: []string{"application/json; charset=utf-8"}, body: `{"error":{"message":"model overloaded"}}`,
			wantClass: runlog.ErrStream, wantErr: "model overloaded"},
		{name: "HTML", ctype: []string{"text/html; charset=utf-8"}, body: html,
			wantClass: runlog.ErrNotEventStream, wantErr: `(text/html; charset=utf-8): "<!DOCTYPE html> <html><body><h1>502 Bad Gateway</h1>"…`},
		{name: "HTML without Content-Type", body: html,
			wantClass: runlog.ErrNotEventStream, wantErr: `(no Content-Type): "<!DOCTYPE html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header()["Content-Type"] = tt.ctype // nil: none, and no sniffing here either
				w.Header().Set("X-Up", "1")
				io.WriteString(w, tt.body)
			})
			h := newHarness(t, up, nil)
			resp, body, err := h.post(context.Background(), "/v1/chat/completions", []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tt.body || resp.StatusCode != 200 || resp.Header.Get("X-Up") != "1" {
				t.Errorf("client got %d %q; want 200 and the upstream's body", resp.StatusCode, body)
			}
			if got := resp.Header.Values("Content-Type"); strings.Join(got, ",") != strings.Join(tt.ctype, ",") {
				t.Errorf("client got Content-Type %q; want %q, as the upstream sent", got, tt.ctype)
			}
			rec := h.waitRecords(1)[0]
			if rec.ErrorClass != tt.wantClass || !strings.Contains(rec.Error, tt.wantErr) {
				t.Errorf("record class %q error %q; want %q containing %q", rec.ErrorClass, rec.Error, tt.wantClass, tt.wantErr)
			}
			if tt.wantClass == "" {
				e2e, ok := rec.E2E()
				if !ok || e2e <= 0 || rec.CompletionTokens != tt.wantOut || rec.PromptTokens != 7 || rec.TokenSource != runlog.TokensUsage || rec.FinishReason != "stop" {
					t.Errorf("record: e2e %v %t, tokens %d/%d %s, finish %q; want E2E, 7/%d from usage, stop",
						e2e, ok, rec.PromptTokens, rec.CompletionTokens, rec.TokenSource, rec.FinishReason, tt.wantOut)
				}
			}
			// A whole answer counts, with its E2E, but gives no TTFT.
			series := map[string]string{"model": "m", "route": promexport.RouteChat, "input_bucket": "<1K"}
			e2eCount := histCount(t, h.reg, "goodput_e2e_request_latency_seconds", series)
			ttftCount := histCount(t, h.reg, "goodput_time_to_first_token_seconds", series)
			if want := uint64(0); tt.whole {
				want = 1
				if e2eCount != want || ttftCount != 0 {
					t.Errorf("E2E samples %d, TTFT samples %d; want 1, 0", e2eCount, ttftCount)
				}
			}
			if got := testutil.ToFloat64(h.p.unmeasured.WithLabelValues(promexport.RouteChat, "2xx")); got != 0 {
				t.Errorf("unmeasured = %v; want 0 (the answer is measured)", got)
			}
		})
	}
}

// TestConnectionListedHeadersStripped: the headers an upstream's
// Connection header names are per connection and do not reach the
// client, also when it says close (Go's transport drops such a Connection
// header before the ReverseProxy strips what it lists).
func TestConnectionListedHeadersStripped(t *testing.T) {
	for _, conn := range []string{"close, X-Internal", "X-Internal, Keep-Alive", "X-Internal,close"} {
		t.Run(conn, func(t *testing.T) {
			up := newScriptedUpstream(t, func(_ int, _ *http.Request, _ []byte, w *bufio.Writer) bool {
				writeStream(w, "Connection: "+conn+"\r\nX-Internal: backend-7\r\nX-Kept: yes\r\n", evA, evStop, "[DONE]")
				return !strings.Contains(conn, "close")
			})
			h := newHarness(t, nil, func(o *Options) { o.Upstream = up.URL() })
			t.Cleanup(up.close)
			for range 2 { // a fresh connection, then (unless closed) a reused one
				resp, body, err := h.post(context.Background(), "/v1/chat/completions", []byte(`{"model":"m","stream":true}`), nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := resp.Header.Values("X-Internal"); len(got) != 0 {
					t.Errorf("client got X-Internal %q; want it stripped", got)
				}
				if resp.Header.Get("X-Kept") != "yes" || !bytes.Equal(body, events(evA, evStop, "[DONE]")) {
					t.Errorf("client got X-Kept %q, body %q; want them passed", resp.Header.Get("X-Kept"), body)
				}
			}
		})
	}
}

// TestNoSniffedContentType: an upstream answer without Content-Type
// reaches the client without one. Go's server sniffs one when the first
// write carries data before the headers were flushed, as a body larger
// than its buffer does.
func TestNoSniffedContentType(t *testing.T) {
	page := "<html>" + strings.Repeat("not sniffed ", 4000) + "</html>"
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header()["Content-Type"] = nil
		io.WriteString(w, page)
	})
	h := newHarness(t, up, nil)
	for _, path := range []string{"/v1/models", "/v1/completions"} {
		for range 5 {
			resp, body, err := h.post(context.Background(), path, []byte(`{"model":"m"}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if ct, ok := resp.Header["Content-Type"]; ok || string(body) != page {
				t.Fatalf("%s: client got Content-Type %q (present %t), %d bytes; want none and the %d-byte page", path, ct, ok, len(body), len(page))
			}
		}
	}
}

// TestProxyAnswersSayWhy: when no answer came, the proxy's own 502 or 504
// says why, as one line of OpenAI-shaped JSON.
func TestProxyAnswersSayWhy(t *testing.T) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server notices the proxy hang up
		select {
		case <-time.After(10 * time.Second): // a bound; the proxy gives up first
		case <-r.Context().Done():
		}
	})
	tests := []struct {
		name       string
		up         http.Handler
		mod        func(*Options)
		wantStatus int
		wantMsg    string
	}{
		{"refused", nil, func(o *Options) { o.Upstream = "http://" + closedAddr(t) }, 502, "goodput proxy: upstream unreachable: dial tcp"},
		{"no headers in time", slow, func(o *Options) { o.UpstreamHeaderTimeout = 20 * time.Millisecond }, 504, "goodput proxy: upstream sent no response headers in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.up, tt.mod)
			resp, body, err := h.post(context.Background(), "/v1/chat/completions", []byte(`{"model":"m","stream":true}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || bytes.Count(body, []byte("\n")) != 1 {
				t.Fatalf("body %q: %v; want one line of JSON", body, err)
			}
			if resp.StatusCode != tt.wantStatus || resp.Header.Get("Content-Type") != "application/json" ||
				!strings.HasPrefix(e.Error.Message, tt.wantMsg) || e.Error.Code != tt.wantStatus {
				t.Errorf("got %d %s %+v; want %d, application/json, a message starting %q", resp.StatusCode, resp.Header.Get("Content-Type"), e.Error, tt.wantStatus, tt.wantMsg)
			}
		})
	}
}

// TestRequestHeadersAsSent: the upstream gets the client's headers,
// Forwarded and X-Forwarded-* included, less the hop-by-hop ones:
// Proxy-Authorization is addressed to the proxy and stops there.
func TestRequestHeadersAsSent(t *testing.T) {
	var got http.Header
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got = r.Header.Clone()
	})
	h := newHarness(t, up, nil)
	hdr := http.Header{
		"Forwarded":           {"for=192.0.2.60;proto=https"},
		"X-Forwarded-For":     {"192.0.2.60"},
		"Proxy-Authorization": {"Basic cHJveHk6c2VjcmV0"},
		"X-Custom":            {"1"},
	}
	if _, _, err := h.post(context.Background(), "/v1/models", nil, hdr); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Custom"} {
		if !cmp.Equal(got.Values(k), hdr.Values(k)) {
			t.Errorf("upstream got %s %q; want %q", k, got.Values(k), hdr.Values(k))
		}
	}
	if v := got.Values("Proxy-Authorization"); len(v) != 0 {
		t.Errorf("upstream got Proxy-Authorization %q; want it stripped", v)
	}
}

// TestLongStreamRecordBounded: a stream past maxRecordChunks keeps at most
// maxRecordChunks+2 chunk entries, with exact token counts, TTFT, TTP and
// E2E; and the pooled tap lets go of the grown buffers.
func TestLongStreamRecordBounded(t *testing.T) {
	hidden := `{"choices":[{"index":0,"delta":{"reasoning_content":"r"}}]}`
	const total = maxRecordChunks + 5000
	var b bytes.Buffer
	for i := range total {
		if i < maxRecordChunks+10 {
			b.WriteString("data: " + hidden + "\n\n")
		} else {
			b.WriteString("data: " + evA + "\n\n")
		}
	}
	b.WriteString("data: " + `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n")
	stream := b.Bytes()
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for rest := stream; len(rest) > 0; {
			k := min(len(rest), 64<<10)
			if _, err := w.Write(rest[:k]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			rest = rest[k:]
		}
	})
	h := newHarness(t, up, nil)
	_, body, err := h.post(context.Background(), "/v1/chat/completions", []byte(`{"model":"m","stream":true}`), nil)
	if err != nil || !bytes.Equal(body, stream) {
		t.Fatalf("client got %d bytes (%v); want the %d-byte stream", len(body), err, len(stream))
	}
	rec := h.waitRecords(1)[0]
	sum, vis := 0, -1
	for i, c := range rec.Chunks {
		sum += int(c.Tokens)
		if c.Visible && vis < 0 {
			vis = i
		}
	}
	if len(rec.Chunks) > maxRecordChunks+2 || sum != total || rec.CompletionTokens != total || !rec.OK() {
		t.Errorf("record: %d chunks, %d tokens in them, %d counted, %q; want ≤ %d chunks, %d tokens, ok",
			len(rec.Chunks), sum, rec.CompletionTokens, rec.ErrorClass, maxRecordChunks+2, total)
	}
	if vis < 0 || rec.Chunks[vis].Tokens != 1 || rec.Chunks[0].Tokens != 1 || rec.Chunks[vis].T > rec.Chunks[len(rec.Chunks)-1].T || rec.Chunks[len(rec.Chunks)-1].T > rec.End {
		t.Errorf("first visible chunk %d, last chunk at %d, end %d; want the first token and first visible chunks kept as they came, times in order", vis, rec.Chunks[len(rec.Chunks)-1].T, rec.End)
	}
	if !strings.Contains(h.logs.String(), "folded") {
		t.Errorf("no log line says the record was folded:\n%s", h.logs.String())
	}

	// The tap goes back to the pool without the grown buffers.
	tp := &tap{}
	tp.rec.Chunks = make([]runlog.Chunk, 0, maxPooledChunks+1)
	tp.held = make([]byte, 0, maxPooledBytes+1)
	tp.fr.data = make([]byte, 0, maxPooledBytes+1)
	tp.maxEvent = maxPooledBytes + 1
	h.p.putTap(tp)
	if tp.rec.Chunks != nil || tp.held != nil || tp.fr.data != nil || tp.maxEvent != 0 {
		t.Errorf("pooled tap keeps %d chunk entries, %d held bytes, %d framer bytes; want none", cap(tp.rec.Chunks), cap(tp.held), cap(tp.fr.data))
	}
}

// TestOversizeEventIsRunaway: an event past the 64 MiB the framer
// assembles is classed as bench's client classes it (runaway, "an event
// over N bytes"), so the proxy's records and bench's agree.
func TestOversizeEventIsRunaway(t *testing.T) {
	tp := &tap{}
	tp.m.Reset(&tp.rec)
	tp.fr.overflow = true // as push leaves it past maxEventSize
	tp.feed([]byte("data: x"), 5)
	if tp.rec.ErrorClass != runlog.ErrRunaway || !strings.Contains(tp.rec.Error, fmt.Sprintf("an event over %d bytes", sse.DefaultMaxEventSize)) {
		t.Errorf("record: %s %q; want runaway, an event over %d bytes", tp.rec.ErrorClass, tp.rec.Error, sse.DefaultMaxEventSize)
	}
}
