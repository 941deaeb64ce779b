package openai

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
)

// The hostile-server suite: loopback servers that answer the way broken or
// malicious ones do, each measured through the load generator as a run
// would, so every case also proves that each request left one record.

// hostileN is how many requests each case sends, all at once.
const hostileN = 3

// hostileRun sends hostileN requests (max_tokens maxTokens; 0 sends none)
// to url's /v1/completions with a client configured by mod, and returns
// their records after checking there is one per request.
func hostileRun(t *testing.T, url string, maxTokens int, mod func(*wire.Config)) []runlog.Record {
	t.Helper()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	cfg := wire.Config{BaseURL: url, Endpoint: "/v1/completions", Model: "m", Now: now,
		IdleTimeout: time.Second, Timeout: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var recs []runlog.Record
	target := loadgen.TargetFunc(func(i int) (loadgen.Call, error) {
		req := &wire.Request{ID: fmt.Sprintf("h-%d", i), Prompt: "hi", MaxTokens: maxTokens}
		body, err := c.Body(req)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, rec *runlog.Record) { c.Stream(ctx, req, body, rec) }, nil
	})
	res, err := loadgen.Run(t.Context(), loadgen.Config{NumPrompts: hostileN, MaxConcurrency: hostileN, Now: now,
		OnRecord: func(r *runlog.Record) {
			cp := *r
			cp.Chunks = slices.Clone(r.Chunks)
			mu.Lock()
			recs = append(recs, cp)
			mu.Unlock()
		}}, target)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != hostileN || len(recs) != hostileN {
		t.Fatalf("sent %d requests, got %d records; want %d of each", res.Sent, len(recs), hostileN)
	}
	for _, r := range recs {
		if r.ID == "" || r.End < r.Sent {
			t.Errorf("record %+v: want an id and End ≥ Sent", r)
		}
		if strings.ContainsAny(r.Error, "\r\n") {
			t.Errorf("record %s: error %q spans lines", r.ID, r.Error)
		}
	}
	return recs
}

// wantFail checks that every record failed with class, its error
// containing each of in, and none of out.
func wantFail(t *testing.T, recs []runlog.Record, class runlog.ErrorClass, status int, in []string, out ...string) {
	t.Helper()
	for _, r := range recs {
		if r.ErrorClass != class || r.Status != status {
			t.Errorf("%s: class %q status %d (%s); want %q status %d", r.ID, r.ErrorClass, r.Status, r.Error, class, status)
		}
		for _, s := range in {
			if !strings.Contains(r.Error, s) {
				t.Errorf("%s: error %q; want it to contain %q", r.ID, r.Error, s)
			}
		}
		for _, s := range out {
			if strings.Contains(r.Error, s) {
				t.Errorf("%s: error %q contains %q; want it kept out", r.ID, r.Error, s)
			}
		}
	}
}

// wantOK checks that every record succeeded with chunks token-carrying
// chunks and completion tokens from source.
func wantOK(t *testing.T, recs []runlog.Record, chunks, completion int, source runlog.TokenSource) {
	t.Helper()
	for _, r := range recs {
		if !r.OK() || r.Status != 200 {
			t.Errorf("%s: class %q status %d (%s); want success", r.ID, r.ErrorClass, r.Status, r.Error)
			continue
		}
		if len(r.Chunks) != chunks || r.CompletionTokens != completion || r.TokenSource != source {
			t.Errorf("%s: %d chunks, %d completion tokens (%s); want %d, %d (%s)",
				r.ID, len(r.Chunks), r.CompletionTokens, r.TokenSource, chunks, completion, source)
		}
		for i := 1; i < len(r.Chunks); i++ {
			if r.Chunks[i].T < r.Chunks[i-1].T {
				t.Errorf("%s: chunk times not monotonic: %v", r.ID, r.Chunks)
			}
		}
	}
}

func text(s string) string {
	return fmt.Sprintf(`{"id":"c","object":"text_completion","choices":[{"index":0,"text":%q,"finish_reason":null}]}`, s)
}

func textEnd(s string) string {
	return fmt.Sprintf(`{"id":"c","object":"text_completion","choices":[{"index":0,"text":%q,"finish_reason":"length"}]}`, s)
}

func usageOf(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"c","object":"text_completion","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		prompt, completion, prompt+completion)
}

// okEvents is a three-token completion stream with usage: 3 chunks, 3
// completion tokens.
var okEvents = "data: " + text("a") + "\n\n" + "data: " + text("b") + "\n\n" + "data: " + textEnd("c") + "\n\n" +
	"data: " + usageOf(5, 3) + "\n\n" + "data: [DONE]\n\n"

const sseHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"

// rawServer answers every request on a loopback listener by handing its
// connection to answer, then closing it: byte-level control of the
// response. Cleanup closes every connection, so an answer blocked on one
// returns.
func rawServer(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				answer(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// write writes s to c, optionally in pieces of size n with a pause after
// each; it stops at the first error (the client went away).
func write(c net.Conn, s string, n int, pause time.Duration) {
	if n <= 0 {
		_, _ = io.WriteString(c, s)
		return
	}
	for i := 0; i < len(s); i += n {
		if _, err := io.WriteString(c, s[i:min(i+n, len(s))]); err != nil {
			return
		}
		if pause > 0 {
			time.Sleep(pause)
		}
	}
}

// waitClosed blocks until the client closes c (or the test's cleanup does).
func waitClosed(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// TestHostileHuge holds the cases that move megabytes, apart from the
// timing-sensitive ones of TestHostileWire so they do not starve them.
func TestHostileHuge(t *testing.T) {
	line := sseHeader + "data: " + text(strings.Repeat("x", 10<<20)) + "\n\n" + "data: " + textEnd("!") + "\n\n" + "data: [DONE]\n\n"
	// Nothing here is about time: the timeouts are sanity limits, a minute,
	// because moving and scanning megabytes under -race on a loaded
	// machine can outlast the 2 s hostileRun gives by default.
	slow := func(cfg *wire.Config) { cfg.IdleTimeout, cfg.Timeout = time.Minute, time.Minute }
	t.Run("10 MB line", func(t *testing.T) {
		url := rawServer(t, func(c net.Conn) { write(c, line, 0, 0) })
		wantOK(t, hostileRun(t, url, 0, slow), 2, 2, runlog.TokensCounted)
	})
	header := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 11<<20) + "\r\n\r\n"
	t.Run("11 MB header", func(t *testing.T) {
		url := rawServer(t, func(c net.Conn) { write(c, header, 0, 0) })
		wantFail(t, hostileRun(t, url, 0, slow), runlog.ErrBadResponse, 0, []string{"bad response: net/http: server response headers exceeded 1048576 bytes"})
	})
}

// stallIdle is the idle timeout of the cases that stall after the server
// has written part of an answer: it must outlast the server's first write
// reaching the client, which a busy host can hold past 100 ms (the part
// then looks like none, "no response yet").
const stallIdle = 2 * time.Second

func TestHostileWire(t *testing.T) {
	cases := []struct {
		name   string
		answer func(c net.Conn)
		idle   time.Duration
		check  func(t *testing.T, recs []runlog.Record)
	}{
		{"one byte every ms", func(c net.Conn) {
			write(c, sseHeader+"data: "+text("a")+"\n\n"+"data: "+textEnd("b")+"\n\ndata: [DONE]\n\n", 1, time.Millisecond)
		}, 2 * time.Second, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 2, 2, runlog.TokensCounted) }},
		{"one byte per write", func(c net.Conn) {
			write(c, sseHeader+okEvents, 1, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"CR-only line ends", func(c net.Conn) {
			write(c, sseHeader+strings.ReplaceAll(okEvents, "\n", "\r"), 0, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"1xx before the 200", func(c net.Conn) {
			write(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+sseHeader+okEvents, 0, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"HTTP/1.0 without Content-Length", func(c net.Conn) {
			write(c, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+okEvents, 0, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"headers trickle slower in all than the idle timeout", func(c net.Conn) {
			// Eight header lines 300 ms apart: 2.4 s of headers against a
			// 2 s idle timeout, which bytes keep resetting. A gap is a
			// sixth of the timeout, so a loaded machine's late wake-up
			// cannot pass for a stall.
			write(c, "HTTP/1.1 200 OK\r\n", 0, 0)
			for i := range 8 {
				time.Sleep(300 * time.Millisecond)
				write(c, fmt.Sprintf("X-Pad-%d: %d\r\n", i, i), 0, 0)
			}
			write(c, "Content-Type: text/event-stream\r\nConnection: close\r\n\r\n"+okEvents, 0, 0)
		}, 2 * time.Second, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"close after the status line", func(c net.Conn) {
			write(c, "HTTP/1.1 200 OK\r\n", 0, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrBadResponse, 0, []string{"closed inside the response headers"})
		}},
		{"close after the headers", func(c net.Conn) {
			write(c, sseHeader, 0, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrStream, 200, []string{"without [DONE]"})
		}},
		{"malformed status line", func(c net.Conn) {
			write(c, "HTTP/1.1 2OO OK\r\n\r\n", 0, 0)
		}, 0, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrBadResponse, 0, []string{`bad response: malformed HTTP status code "2OO"`})
		}},
		{"silent after the request", waitClosed, 100 * time.Millisecond, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrIdleTimeout, 0, []string{"no data for 100ms after the request was sent"})
		}},
		{"stall inside the headers", func(c net.Conn) {
			write(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", 0, 0)
			waitClosed(c)
		}, stallIdle, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrIdleTimeout, 0, []string{"no data for 2s inside the response headers"})
		}},
		{"stall mid-stream", func(c net.Conn) {
			write(c, sseHeader+"data: "+text("a")+"\n\n", 0, 0)
			waitClosed(c)
		}, stallIdle, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrIdleTimeout, 200, []string{"no data for 2s mid-stream"})
			for _, r := range recs {
				if len(r.Chunks) != 1 {
					t.Errorf("%s: %d chunks; want the 1 received", r.ID, len(r.Chunks))
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, tc.answer)
			tc.check(t, hostileRun(t, url, 0, func(c *wire.Config) {
				// The whole-request timeout is a sanity limit here, so
				// that on a loaded machine the idle timeout under test
				// (or none) decides, never the 2 s default.
				c.Timeout = time.Minute
				if tc.idle > 0 {
					c.IdleTimeout = tc.idle
				}
			}))
		})
	}
}

// endless streams tokens until the client goes away (or a bound far past
// any cap under test).
func endless(w http.ResponseWriter, r *http.Request, event string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := 0; i < 1e7 && r.Context().Err() == nil; i++ {
		if _, err := io.WriteString(w, event); err != nil {
			return
		}
		if i%64 == 0 {
			fl.Flush()
		}
	}
}

func TestHostileRunaway(t *testing.T) {
	cases := []struct {
		name      string
		event     string // repeated without end
		maxTokens int
		mod       func(*wire.Config)
		chunks    int // recorded before the client stopped reading
		inMsg     string
	}{
		// max(4 × 8, 8 + 1024) = 1032 tokens allowed; the 1033rd stops it.
		{"tokens past max_tokens", "data: " + text("t") + "\n\n", 8, nil, 1033, "1033 tokens streamed, over the cap of 1032 for max_tokens 8"},
		{"tokens past 4 × max_tokens", "data: " + text("t") + "\n\n", 400, nil, 1601, "over the cap of 1600 for max_tokens 400"},
		{"tokens without max_tokens", "data: " + text("t") + "\n\n", 0, func(c *wire.Config) { c.MaxResponseTokens = 500 }, 501, "over the cap of 500 for no max_tokens"},
		// Events without a token (4 KiB of padding each), without end:
		// the byte cap, 1032 × 4 KiB + 64 KiB.
		{"empty events", `data: {"choices":[{"index":0,"text":"","pad":"` + strings.Repeat("p", 4<<10) + "\"}]}\n\n", 8, func(c *wire.Config) { c.MaxEventBytes = 64 << 10 }, 0, "over 4292608 bytes streamed with 0 tokens (cap 1032)"},
		// Comments only: no event at all.
		{"keep-alive flood", ": keep-alive\n\n", 8, func(c *wire.Config) { c.MaxEventBytes = 64 << 10 }, 0, "over 65536 bytes without a complete event"},
		// One event whose data lines never end: the event reader's
		// buffer is not what grows, its joined data is.
		{"endless data lines", "data: x\n", 8, func(c *wire.Config) { c.MaxEventBytes = 64 << 10 }, 0, "over 65536 bytes without a complete event"},
		{"one endless line", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 8, func(c *wire.Config) { c.MaxEventBytes = 64 << 10 }, 0, "an event over 65536 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				endless(w, r, tc.event)
			}))
			t.Cleanup(srv.Close)
			recs := hostileRun(t, srv.URL, tc.maxTokens, tc.mod)
			wantFail(t, recs, runlog.ErrRunaway, 200, []string{tc.inMsg, "stopped reading"})
			for _, r := range recs {
				if len(r.Chunks) != tc.chunks || r.CompletionTokens != tc.chunks || r.TokenSource != runlog.TokensCounted {
					t.Errorf("%s: %d chunks, %d completion tokens (%s); want %d, counted", r.ID, len(r.Chunks), r.CompletionTokens, r.TokenSource, tc.chunks)
				}
			}
		})
	}
}

func TestHostileBodies(t *testing.T) {
	page := "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><a href=\"/retry?token=abc123\">retry</a>" +
		strings.Repeat("x", 1000) + "</body></html>"
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		check   func(t *testing.T, recs []runlog.Record)
	}{
		{"gzip event stream", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept-Encoding") != "identity" {
				http.Error(w, "want Accept-Encoding: identity, got "+r.Header.Get("Accept-Encoding"), 400)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			for ev := range strings.SplitAfterSeq(okEvents, "\n\n") {
				_, _ = io.WriteString(zw, ev)
				_ = zw.Flush()
				w.(http.Flusher).Flush()
			}
			_ = zw.Close()
		}, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"brotli", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Encoding", "br")
			_, _ = io.WriteString(w, "\x1b\x00\x00")
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrBadResponse, 200, []string{`Content-Encoding "br" is not decoded`})
		}},
		{"JSON answer to a stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"hello there","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`)
		}, func(t *testing.T, recs []runlog.Record) {
			wantOK(t, recs, 1, 7, runlog.TokensUsage)
			for _, r := range recs {
				if !r.WholeAnswer || r.PromptTokens != 5 || r.FinishReason != "length" || r.Chunks[0].Tokens != 7 {
					t.Errorf("%s: whole %v, prompt %d, finish %q, chunk %+v; want a whole answer, 5, length, one chunk of 7",
						r.ID, r.WholeAnswer, r.PromptTokens, r.FinishReason, r.Chunks)
				}
			}
		}},
		{"gzip JSON labelled text/plain", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, "\n "+`{"choices":[{"index":0,"text":"hi","finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1}}`)
			_ = zw.Close()
		}, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 1, 1, runlog.TokensUsage) }},
		{"event stream labelled text/plain", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, okEvents)
		}, func(t *testing.T, recs []runlog.Record) { wantOK(t, recs, 3, 3, runlog.TokensUsage) }},
		{"HTML page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, page)
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrNotEventStream, 200,
				[]string{"not an event stream (text/html; charset=utf-8)", `<!DOCTYPE html> <html><head><title>502 Bad Gateway</title>`},
				"abc123", strings.Repeat("x", 200))
		}},
		{"plain text", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "upstream connect error or disconnect/reset before headers")
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrNotEventStream, 200, []string{`(text/plain; charset=utf-8): "upstream connect error`})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				tc.handler(w, r)
			}))
			t.Cleanup(srv.Close)
			tc.check(t, hostileRun(t, srv.URL, 0, nil))
		})
	}
}

func TestHostileRedirects(t *testing.T) {
	const key, hdrKey = "sk-hostile-test-key", "hdr-secret-value"
	// other is another origin (another port); it must never be reached.
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, okEvents)
	}))
	t.Cleanup(other.Close)
	otherPort := other.Listener.Addr().(*net.TCPAddr).Port

	cases := []struct {
		name   string
		follow bool
		// redirect answers /v1/completions (and its own targets); serve
		// reports whether it sent a stream
		redirect func(w http.ResponseWriter, r *http.Request) (served bool)
		check    func(t *testing.T, recs []runlog.Record)
	}{
		{"307 to another port", true, func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Location", other.URL+"/v1/completions?api_key="+key+"&x=1")
			w.WriteHeader(307)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirect, 307,
				[]string{fmt.Sprintf("HTTP 307 redirect to %s/v1/completions?api_key=redacted&x=1, another origin", other.URL)}, key)
		}},
		{"308 to another host", true, func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Location", fmt.Sprintf("http://user:pw-secret@localhost:%d/v1/completions", otherPort))
			w.WriteHeader(308)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirect, 308, []string{fmt.Sprintf("http://localhost:%d/v1/completions, another origin", otherPort)}, "pw-secret", "user")
		}},
		{"307 to https on the same host", true, func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Location", "https://"+r.Host+"/v1/completions")
			w.WriteHeader(307)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirect, 307, []string{"another origin"})
		}},
		{"same origin, not asked to follow", false, func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/completions" {
				return true
			}
			http.Redirect(w, r, "/v2/completions", http.StatusTemporaryRedirect)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirect, 307, []string{"/v2/completions: not followed (same-origin redirects are followed only when asked)"})
		}},
		{"same origin, followed", true, func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/completions" {
				return true
			}
			http.Redirect(w, r, "/v2/completions", http.StatusTemporaryRedirect)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantOK(t, recs, 3, 3, runlog.TokensUsage)
			for _, r := range recs {
				if r.Redirects != 1 {
					t.Errorf("%s: Redirects = %d; want 1", r.ID, r.Redirects)
				}
			}
		}},
		{"302 would turn the POST into a GET", true, func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/completions" {
				return true
			}
			http.Redirect(w, r, "/v2/completions", http.StatusFound)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirect, 302, []string{"resend the POST as a GET"})
		}},
		{"loop to itself", true, func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, "/v1/completions", http.StatusTemporaryRedirect)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirectLoop, 307, []string{"redirect back to", "a loop of 1 redirect"})
		}},
		{"loop through another path", true, func(w http.ResponseWriter, r *http.Request) bool {
			to := "/v2/completions"
			if r.URL.Path == to {
				to = "/v1/completions"
			}
			http.Redirect(w, r, to, http.StatusPermanentRedirect)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirectLoop, 308, []string{"/v1/completions: a loop of 2 redirects"})
		}},
		{"endless chain", true, func(w http.ResponseWriter, r *http.Request) bool {
			n := len(r.URL.Query().Get("n"))
			http.Redirect(w, r, "/v1/completions?n="+strings.Repeat("1", n+1), http.StatusTemporaryRedirect)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirectLoop, 307, []string{"stopped after 10 redirects"})
		}},
		{"307 without Location", true, func(w http.ResponseWriter, r *http.Request) bool {
			w.WriteHeader(307)
			return false
		}, func(t *testing.T, recs []runlog.Record) {
			wantFail(t, recs, runlog.ErrRedirect, 307, []string{"HTTP 307 without a Location header"})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var bad atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if !tc.redirect(w, r) {
					return
				}
				// The followed request must be the POST as sent.
				if r.Method != http.MethodPost || !strings.Contains(string(b), `"prompt":"hi"`) ||
					r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("X-Api-Key") != hdrKey {
					bad.Store(fmt.Sprintf("followed request: %s %q, headers %v", r.Method, b, r.Header))
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, okEvents)
			}))
			t.Cleanup(srv.Close)
			recs := hostileRun(t, srv.URL, 0, func(c *wire.Config) {
				c.APIKey = key
				c.Headers = http.Header{"X-Api-Key": {hdrKey}}
				c.FollowRedirects = tc.follow
			})
			tc.check(t, recs)
			if v := bad.Load(); v != nil {
				t.Error(v)
			}
		})
	}
	t.Cleanup(func() { // after the parallel subtests
		if n := otherHits.Load(); n != 0 {
			t.Errorf("the other origin got %d requests; want none", n)
		}
	})
}
