package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/wire"
)

// script is a scripted SSE response: each step waits, then writes raw text.
type step struct {
	wait time.Duration
	raw  string
}

func data(s string) step { return step{raw: "data: " + s + "\n\n"} }

func after(d time.Duration, s string) step { return step{wait: d, raw: "data: " + s + "\n\n"} }

// scripted serves the steps with status; status 0 answers nothing at all
// until the client gives up.
func scripted(t *testing.T, status int, steps ...step) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if status == 0 {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		fl := w.(http.Flusher)
		for _, s := range steps {
			if s.wait > 0 {
				select {
				case <-time.After(s.wait):
				case <-r.Context().Done():
					return
				}
			}
			_, _ = io.WriteString(w, s.raw)
			fl.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTestClient(t *testing.T, url, endpoint string, mod func(*wire.Config)) *wire.Client {
	t.Helper()
	cfg := wire.Config{BaseURL: url, Endpoint: endpoint, Model: "m", IdleTimeout: 5 * time.Second, Timeout: 10 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func run(t *testing.T, c *wire.Client, req *wire.Request) *runlog.Record {
	t.Helper()
	body, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	var rec runlog.Record
	c.Stream(t.Context(), req, body, &rec)
	return &rec
}

const (
	roleChunk  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	usageChunk = `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}`
)

func content(s string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, s)
}

func reasoning(s string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content":%q},"finish_reason":null}]}`, s)
}

func finish(s string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":"stop"}]}`, s)
}

func TestVLLMChatShape(t *testing.T) {
	// vLLM: a role-only first chunk (no token: must not stop the TTFT clock),
	// content, then a separate usage chunk and [DONE].
	srv := scripted(t, 200,
		data(roleChunk),
		after(30*time.Millisecond, content("Hello")),
		after(5*time.Millisecond, content(" world")),
		after(5*time.Millisecond, finish("!")),
		data(usageChunk),
		data("[DONE]"))
	c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
	rec := run(t, c, &wire.Request{ID: "r1", Prompt: "hi", MaxTokens: 3, PromptTokens: 12})
	if !rec.OK() {
		t.Fatalf("failed: %s %s", rec.ErrorClass, rec.Error)
	}
	if len(rec.Chunks) != 3 {
		t.Fatalf("chunks = %d; want 3 (the role-only chunk carries no token)", len(rec.Chunks))
	}
	ttft, _ := rec.TTFT()
	if ttft < 30*time.Millisecond {
		t.Errorf("TTFT = %v; want >= 30ms (the first content chunk was delayed 30ms)", ttft)
	}
	if rec.TokenSource != runlog.TokensUsage || rec.PromptTokens != 12 || rec.CompletionTokens != 3 || rec.CachedTokens != 8 {
		t.Errorf("tokens = %s prompt %d completion %d cached %d; want usage 12 3 8",
			rec.TokenSource, rec.PromptTokens, rec.CompletionTokens, rec.CachedTokens)
	}
	if rec.FinishReason != "stop" || rec.Status != 200 || rec.ID != "r1" {
		t.Errorf("finish %q status %d id %q; want stop 200 r1", rec.FinishReason, rec.Status, rec.ID)
	}
	for i := 1; i < len(rec.Chunks); i++ {
		if rec.Chunks[i].T < rec.Chunks[i-1].T {
			t.Errorf("chunk times not monotonic: %v", rec.Chunks)
		}
	}
	if rec.End < rec.Chunks[2].T {
		t.Errorf("End %d before the last chunk %d", rec.End, rec.Chunks[2].T)
	}
}

func TestLlamaCppShape(t *testing.T) {
	// llama.cpp: usage and timings inside the final chunk that still has
	// choices; no separate usage chunk.
	last := `{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":4,"prompt_tokens":7,"total_tokens":11},"timings":{"prompt_n":7,"predicted_n":4}}`
	srv := scripted(t, 200,
		data(content("a")), data(content("b")), data(content("c")), data(content("d")), data(last), data("[DONE]"))
	c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
	rec := run(t, c, &wire.Request{ID: "r", Prompt: "x", MaxTokens: 4})
	if !rec.OK() {
		t.Fatalf("failed: %s %s", rec.ErrorClass, rec.Error)
	}
	got := 0
	for _, ch := range rec.Chunks {
		got += int(ch.Tokens)
	}
	if len(rec.Chunks) != 4 || got != 4 || rec.CompletionTokens != 4 || rec.PromptTokens != 7 || rec.TokenSource != runlog.TokensUsage {
		t.Errorf("chunks %d (tokens %d), completion %d, prompt %d, source %s; want 4 (4), 4, 7, usage",
			len(rec.Chunks), got, rec.CompletionTokens, rec.PromptTokens, rec.TokenSource)
	}
}

func TestContinuousUsage(t *testing.T) {
	// vLLM continuous_usage_stats: usage in every chunk, so a chunk that
	// carries two tokens (merged UTF-8) counts two.
	chunk := func(text string, compl int) string {
		return fmt.Sprintf(`{"choices":[{"index":0,"text":%q}],"usage":{"prompt_tokens":5,"completion_tokens":%d}}`, text, compl)
	}
	srv := scripted(t, 200, data(chunk("a", 1)), data(chunk("bé", 3)), data(chunk("c", 4)),
		data(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4}}`), data("[DONE]"))
	c := newTestClient(t, srv.URL, "/v1/completions", nil)
	rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
	want := []int32{1, 2, 1}
	if len(rec.Chunks) != len(want) {
		t.Fatalf("chunks = %+v; want tokens %v", rec.Chunks, want)
	}
	for i, w := range want {
		if rec.Chunks[i].Tokens != w {
			t.Errorf("chunk %d tokens = %d; want %d", i, rec.Chunks[i].Tokens, w)
		}
	}
}

func TestReasoningAndThinkTags(t *testing.T) {
	t.Run("reasoning_content", func(t *testing.T) {
		srv := scripted(t, 200, data(roleChunk), after(10*time.Millisecond, reasoning("let me")),
			after(20*time.Millisecond, reasoning(" think")), after(10*time.Millisecond, finish("Yes")), data("[DONE]"))
		c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
		rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
		ttft, _ := rec.TTFT()
		ttp, ok := rec.TTP()
		// The server waits 30 ms between the first reasoning chunk and the
		// answer; a late read of the first chunk can eat into that on a
		// loaded machine, so ask for half.
		if !ok || ttp-ttft < 15*time.Millisecond {
			t.Errorf("TTFT %v, TTP %v (ok %v); want TTP ≥ TTFT + 15ms", ttft, ttp, ok)
		}
		if rec.Chunks[0].Visible || rec.Chunks[1].Visible || !rec.Chunks[2].Visible {
			t.Errorf("visibility = %+v; want hidden, hidden, visible", rec.Chunks)
		}
	})
	t.Run("think tags split across chunks", func(t *testing.T) {
		srv := scripted(t, 200, data(content("<thi")), data(content("nk>plan")), data(content(" more</th")),
			data(content("ink>")), data(finish("Answer")), data("[DONE]"))
		c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
		rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
		var vis []bool
		for _, ch := range rec.Chunks {
			vis = append(vis, ch.Visible)
		}
		want := []bool{false, false, false, false, true}
		if fmt.Sprint(vis) != fmt.Sprint(want) {
			t.Errorf("visibility = %v; want %v", vis, want)
		}
	})
	t.Run("tool call arguments", func(t *testing.T) {
		tool := `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`
		srv := scripted(t, 200, data(tool), data(finish("Done")), data("[DONE]"))
		c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
		rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
		if len(rec.Chunks) != 2 || rec.Chunks[0].Visible || !rec.Chunks[1].Visible {
			t.Errorf("chunks = %+v; want a hidden tool-call chunk then a visible one", rec.Chunks)
		}
	})
}

func TestFailures(t *testing.T) {
	cases := []struct {
		name   string
		status int
		steps  []step
		idle   time.Duration
		class  runlog.ErrorClass
		inMsg  string
	}{
		{"429", 429, []step{{raw: `{"error":{"message":"slow down","type":"rate_limit"}}`}}, 0, runlog.ErrHTTP429, "slow down"},
		{"500", 500, []step{{raw: `{"error":{"message":"best_of not supported"}}`}}, 0, runlog.ErrHTTP5xx, "best_of not supported"},
		{"400 vllm shape", 400, []step{{raw: `{"object":"error","message":"too long","code":400}`}}, 0, runlog.ErrHTTP4xx, "too long"},
		{"error event", 200, []step{data(content("a")), data(`{"error":{"message":"engine died","code":500}}`)}, 0, runlog.ErrStream, "engine died"},
		{"malformed", 200, []step{data(content("a")), data(`{"choices":[{"delta":`)}, 0, runlog.ErrMalformed, "chunk 2"},
		{"no done", 200, []step{data(content("a"))}, 0, runlog.ErrStream, "without [DONE]"},
		{"stall", 200, []step{data(content("a")), after(time.Minute, content("b"))}, 100 * time.Millisecond, runlog.ErrIdleTimeout, "no data for 100ms mid-stream"},
		// Headers never come: the idle clock runs from the send.
		{"silent server", 0, nil, 100 * time.Millisecond, runlog.ErrIdleTimeout, "no data for 100ms after the request was sent (no response yet)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := scripted(t, tc.status, tc.steps...)
			c := newTestClient(t, srv.URL, "/v1/chat/completions", func(c *wire.Config) {
				if tc.idle > 0 {
					c.IdleTimeout = tc.idle
				}
			})
			rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
			if rec.ErrorClass != tc.class || !strings.Contains(rec.Error, tc.inMsg) {
				t.Errorf("class %q, error %q; want %q containing %q", rec.ErrorClass, rec.Error, tc.class, tc.inMsg)
			}
			if strings.Contains(rec.Error, "\n") {
				t.Errorf("error %q spans lines", rec.Error)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c := newTestClient(t, "http://"+addr, "/v1/completions", nil)
		rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
		if rec.ErrorClass != runlog.ErrConnect {
			t.Errorf("class %q (%s); want connect", rec.ErrorClass, rec.Error)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := scripted(t, 200, data(content("a")), after(time.Minute, content("b")))
		c := newTestClient(t, srv.URL, "/v1/chat/completions", nil)
		req := &wire.Request{ID: "r", Prompt: "x"}
		body, _ := c.Body(req)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		var rec runlog.Record
		c.Stream(ctx, req, body, &rec)
		if rec.ErrorClass != runlog.ErrCancelled || len(rec.Chunks) != 1 {
			t.Errorf("class %q with %d chunks; want cancelled with the 1 chunk received", rec.ErrorClass, len(rec.Chunks))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		srv := scripted(t, 200, data(content("a")), after(time.Minute, content("b")))
		c := newTestClient(t, srv.URL, "/v1/chat/completions", func(c *wire.Config) { c.Timeout = 100 * time.Millisecond })
		rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
		if rec.ErrorClass != runlog.ErrTimeout {
			t.Errorf("class %q (%s); want timeout", rec.ErrorClass, rec.Error)
		}
	})
}

func TestRequestBodyAndHeaders(t *testing.T) {
	var mu sync.Mutex
	var got map[string]any
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hdr = r.Header.Clone()
		_ = json.NewDecoder(r.Body).Decode(&got)
		fmt.Fprint(w, "data: "+finish("x")+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, "/v1/chat/completions", func(c *wire.Config) {
		c.APIKey = "sk-secret"
		c.IgnoreEOS = true
		c.ContinuousUsage = true
		c.ExtraBody = map[string]any{"temperature": 0.0}
		c.Headers = http.Header{"X-Team": {"perf"}}
	})
	rec := run(t, c, &wire.Request{ID: "req-7", Prompt: "hello <b>", MaxTokens: 64})
	mu.Lock()
	defer mu.Unlock()
	want := map[string]any{
		"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hello <b>"}},
		"max_tokens": 64.0, "stream": true, "ignore_eos": true, "temperature": 0.0,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("body = %v; want %v", got, want)
	}
	for _, k := range []string{"max_completion_tokens", "best_of", "echo", "suffix"} {
		if _, ok := got[k]; ok {
			t.Errorf("body has %q; send no parameter the user did not ask for", k)
		}
	}
	if hdr.Get("X-Request-Id") != "req-7" || hdr.Get("Authorization") != "Bearer sk-secret" || hdr.Get("X-Team") != "perf" {
		t.Errorf("headers = %v", hdr)
	}
	b, _ := json.Marshal(rec)
	if strings.Contains(string(b), "sk-secret") {
		t.Error("the API key leaked into the record")
	}
}

// closingServer behaves like llama.cpp: it advertises keep-alive, streams,
// then closes the TCP connection without "Connection: close".
func closingServer(t *testing.T) (string, *int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served int64
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				body := "data: " + finish("ok") + "\n\ndata: [DONE]\n\n"
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				mu.Lock()
				served++
				mu.Unlock()
				// Close a moment later, as a server tearing down after the
				// stream does: the client may already have written its next
				// request on this connection, which then meets a reset.
				time.Sleep(3 * time.Millisecond)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done; wg.Wait() })
	return "http://" + ln.Addr().String(), &served
}

func TestServerClosingAfterEachStream(t *testing.T) {
	url, _ := closingServer(t)
	c := newTestClient(t, url, "/v1/chat/completions", nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				rec := run(t, c, &wire.Request{ID: fmt.Sprintf("w%d-%d", w, i), Prompt: "x"})
				if !rec.OK() {
					mu.Lock()
					failed = append(failed, string(rec.ErrorClass)+": "+rec.Error)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of 200 requests failed against a server that closes after each stream; want 0 (a client-side race is not a server failure): %v",
			len(failed), failed[:min(3, len(failed))])
	}
}

func TestModels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"llama","owned_by":"vllm"},{"id":"b"}]}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, "/v1/completions", nil)
	ms, err := c.Models(t.Context())
	if err != nil || len(ms) != 2 || ms[0].ID != "llama" || ms[0].OwnedBy != "vllm" {
		t.Errorf("Models() = %v, %v; want [llama(vllm) b]", ms, err)
	}
}

func TestNewClientBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8000", "ftp://x", "http://"} {
		_, err := NewClient(wire.Config{BaseURL: u})
		var se *setting.Error
		if !errors.As(err, &se) || se.Field != "BaseURL" || se.Value != strconv.Quote(u) {
			t.Errorf("NewClient(%q) error = %v; want a setting.Error on BaseURL", u, err)
			continue
		}
		if want := "BaseURL " + strconv.Quote(u) + ": want http(s)://host[:port]"; err.Error() != want {
			t.Errorf("NewClient(%q) error = %q; want %q", u, err, want)
		}
	}
}

// A server whose listen backlog overflows resets new connections before
// answering (llama.cpp's backlog is 5): that is a connect_reset, counted,
// not hidden and not retried.
func TestConnectReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the request, then reset: RST instead of FIN.
			_, _ = c.Read(make([]byte, 4096))
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()
	c := newTestClient(t, "http://"+ln.Addr().String(), "/v1/completions", nil)
	rec := run(t, c, &wire.Request{ID: "r", Prompt: "x"})
	if rec.ErrorClass != runlog.ErrConnectReset {
		t.Errorf("class %q (%s); want connect_reset", rec.ErrorClass, rec.Error)
	}
}

func TestMaxTokensField(t *testing.T) {
	for _, tc := range []struct{ field, want string }{{"", "max_tokens"}, {"max_completion_tokens", "max_completion_tokens"}} {
		c := newTestClient(t, "http://127.0.0.1:1", "/v1/chat/completions", func(c *wire.Config) { c.MaxTokensField = tc.field })
		b, err := c.Body(&wire.Request{ID: "r", Prompt: "x", MaxTokens: 7})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m[tc.want] != 7.0 || len(m) != 5 {
			t.Errorf("field %q: body %v; want only %s: 7 besides model, messages, stream, stream_options", tc.field, m, tc.want)
		}
	}
}

// wholeServer answers every request with one JSON body after delay, as a
// server does for "stream": false, and keeps the last request body.
func wholeServer(t *testing.T, status int, delay time.Duration, answer string) (*httptest.Server, func() (map[string]any, http.Header)) {
	t.Helper()
	var mu sync.Mutex
	var got map[string]any
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got, hdr = nil, r.Header.Clone()
		_ = json.NewDecoder(r.Body).Decode(&got)
		mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, func() (map[string]any, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		return got, hdr
	}
}

func TestNoStream(t *testing.T) {
	chat := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",` +
		`"reasoning_content":"hmm","content":"Hello world"},"finish_reason":"length"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`
	completion := `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"Hello world","finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":7}}`
	for _, tt := range []struct {
		name, endpoint, answer string
		wantFinish             string
		wantReasoning          int
	}{
		{"chat", "/v1/chat/completions", chat, "length", 2},
		{"completions", "/v1/completions", completion, "stop", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, last := wholeServer(t, 200, 40*time.Millisecond, tt.answer)
			c := newTestClient(t, srv.URL, tt.endpoint, func(c *wire.Config) {
				c.NoStream, c.KeepText, c.ContinuousUsage = true, true, true
			})
			rec := run(t, c, &wire.Request{ID: "r1", Prompt: "hi", MaxTokens: 7, PromptTokens: 10})
			if !rec.OK() {
				t.Fatalf("failed: %s %s", rec.ErrorClass, rec.Error)
			}
			body, hdr := last()
			if body["stream"] != false {
				t.Errorf("body stream = %v; want false", body["stream"])
			}
			if _, ok := body["stream_options"]; ok {
				t.Errorf("body has stream_options %v; want none without streaming (vLLM rejects it)", body["stream_options"])
			}
			if a := hdr.Get("Accept"); a != "application/json" {
				t.Errorf("Accept = %q; want application/json", a)
			}
			// One chunk when the body arrived, carrying usage's 7 tokens.
			if len(rec.Chunks) != 1 || rec.Chunks[0].Tokens != 7 || !rec.Chunks[0].Visible || rec.Chunks[0].T != rec.End {
				t.Fatalf("chunks = %+v (end %d); want one visible chunk of 7 tokens at the end", rec.Chunks, rec.End)
			}
			if e2e, ok := rec.E2E(); !ok || e2e < 40*time.Millisecond {
				t.Errorf("E2E = %v, %v; want ≥ 40ms (the answer came after 40ms)", e2e, ok)
			}
			if rec.TokenSource != runlog.TokensUsage || rec.PromptTokens != 12 || rec.CompletionTokens != 7 || rec.ReasoningTokens != tt.wantReasoning {
				t.Errorf("tokens = %s prompt %d completion %d reasoning %d; want usage 12 7 %d",
					rec.TokenSource, rec.PromptTokens, rec.CompletionTokens, rec.ReasoningTokens, tt.wantReasoning)
			}
			if rec.FinishReason != tt.wantFinish || rec.GeneratedText != "Hello world" {
				t.Errorf("finish %q text %q; want %q and the content only", rec.FinishReason, rec.GeneratedText, tt.wantFinish)
			}
		})
	}
}

func TestNoStreamOddAnswers(t *testing.T) {
	for _, tt := range []struct {
		name, answer string
		status       int
		wantClass    runlog.ErrorClass
		wantChunks   int
		wantTokens   int
	}{
		// No usage: the text is one counted token, as a stream without usage
		// counts one per chunk.
		{"no usage", `{"choices":[{"index":0,"text":"Hello"}]}`, 200, "", 1, 1},
		// Nothing generated: no chunk, so no E2E (an empty response).
		{"empty", `{"choices":[{"index":0,"text":""}],"usage":{"prompt_tokens":3,"completion_tokens":0}}`, 200, "", 0, 0},
		{"error object", `{"object":"error","message":"boom"}`, 200, runlog.ErrStream, 0, 0},
		{"not json", `<html>oops</html>`, 200, runlog.ErrMalformed, 0, 0},
		{"status", `{"error":{"message":"overloaded"}}`, 503, runlog.ErrHTTP5xx, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := wholeServer(t, tt.status, 0, tt.answer)
			c := newTestClient(t, srv.URL, "/v1/completions", func(c *wire.Config) { c.NoStream = true })
			rec := run(t, c, &wire.Request{ID: "r1", Prompt: "hi", PromptTokens: 3})
			if rec.ErrorClass != tt.wantClass || len(rec.Chunks) != tt.wantChunks || rec.CompletionTokens != tt.wantTokens {
				t.Errorf("class %q (%s), chunks %d, completion %d; want %q, %d, %d",
					rec.ErrorClass, rec.Error, len(rec.Chunks), rec.CompletionTokens, tt.wantClass, tt.wantChunks, tt.wantTokens)
			}
			if rec.GeneratedText != "" {
				t.Errorf("text %q kept without KeepText", rec.GeneratedText)
			}
		})
	}
}

func TestKeepText(t *testing.T) {
	// Streamed: the content of every chunk in order (inline <think> text
	// included, as vLLM's generated_text), not the reasoning fields.
	steps := []step{data(roleChunk), data(reasoning("let me see")), data(content("<think>x</think>")),
		data(content("Hello")), data(content(` "world"`)), data(finish("!")), data(usageChunk), data("[DONE]")}
	srv := scripted(t, 200, steps...)
	for _, keep := range []bool{true, false} {
		c := newTestClient(t, srv.URL, "/v1/chat/completions", func(c *wire.Config) { c.KeepText = keep })
		rec := run(t, c, &wire.Request{ID: "r1", Prompt: "hi"})
		want := ""
		if keep {
			want = `<think>x</think>Hello "world"!`
		}
		if !rec.OK() || rec.GeneratedText != want {
			t.Errorf("KeepText %v: text %q (%s); want %q", keep, rec.GeneratedText, rec.Error, want)
		}
	}
}

func TestDecodeResponseReadsMessage(t *testing.T) {
	body := []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"a\nb","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	var d ChunkDecoder
	var c wire.Chunk
	if err := d.DecodeResponse(body, &c); err != nil {
		t.Fatal(err)
	}
	if string(c.Content) != "a\nb" || c.ToolArgs != 3 || string(c.FinishReason) != "tool_calls" || !c.Role {
		t.Errorf("DecodeResponse = content %q tool args %d finish %q role %v; want \"a\\nb\", 3, tool_calls, true",
			c.Content, c.ToolArgs, c.FinishReason, c.Role)
	}
	// A streamed chunk's "message" is not text: only its delta counts.
	chunk := []byte(`{"choices":[{"index":0,"delta":{"content":"x"},"message":{"content":"the whole text"}}]}`)
	if err := d.Decode(chunk, &c); err != nil {
		t.Fatal(err)
	}
	if string(c.Content) != "x" {
		t.Errorf("Decode(chunk with message) content = %q; want the delta's %q", c.Content, "x")
	}
}

func TestModelMissing(t *testing.T) {
	tests := []struct {
		name   string
		status int
		msg    string
		want   bool
	}{
		{"vllm", 404, "HTTP 404: The model `foo` does not exist.", true},
		{"openai", 404, "HTTP 404: The model `gpt-9` does not exist or you do not have access to it.", true},
		{"ollama", 404, `HTTP 404: model "foo" not found, try pulling it first`, true},
		{"bad request naming it", 400, "HTTP 400: Unknown model: foo", true},
		{"wrong path", 404, "HTTP 404: Not Found", false},
		{"context too long", 400, "HTTP 400: This model's maximum context length is 4096 tokens", false},
		{"overloaded", 503, "HTTP 503: model foo not found", false},
		{"ok", 200, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &runlog.Record{Status: tt.status, Error: tt.msg}
			if tt.status != 200 {
				rec.ErrorClass = runlog.StatusClass(tt.status)
			}
			if got := wire.ModelMissing(rec); got != tt.want {
				t.Errorf("wire.ModelMissing(%d %q) = %v; want %v", tt.status, tt.msg, got, tt.want)
			}
		})
	}
}

func TestTry(t *testing.T) {
	srv, last := wholeServer(t, 404, 0, `{"object":"error","message":"The model `+"`m`"+` does not exist.","type":"NotFoundError","code":404}`)
	c := newTestClient(t, srv.URL, "/v1/completions", nil)
	rec := c.Try(t.Context(), "probe-1")
	if !wire.ModelMissing(&rec) || rec.ID != "probe-1" {
		t.Errorf("Try against a server without the model = %+v; want a model-missing record with id probe-1", rec)
	}
	if body, _ := last(); body["max_tokens"] != 1.0 || body["model"] != "m" {
		t.Errorf("Try body = %v; want model m and max_tokens 1", body)
	}
}

func TestInsecure(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: "+finish("x")+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	// httptest's certificate is signed by no trusted authority.
	rec := run(t, newTestClient(t, srv.URL, "/v1/completions", nil), &wire.Request{ID: "r1", Prompt: "hi"})
	if rec.ErrorClass != runlog.ErrConnect {
		t.Errorf("without Insecure: class %q (%s); want %q (the certificate is not trusted)", rec.ErrorClass, rec.Error, runlog.ErrConnect)
	}
	rec = run(t, newTestClient(t, srv.URL, "/v1/completions", func(c *wire.Config) { c.Insecure = true }), &wire.Request{ID: "r2", Prompt: "hi"})
	if !rec.OK() {
		t.Errorf("with Insecure: %s %s; want success", rec.ErrorClass, rec.Error)
	}
}

func TestModelsRedirectToAnotherOrigin(t *testing.T) {
	// GET /v1/models carries the key too: it never follows a redirect to
	// another origin either.
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, `{"data":[{"id":"m"}]}`)
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, "/v1/completions", func(c *wire.Config) { c.APIKey = "sk-models-key"; c.FollowRedirects = true })
	_, err := c.Models(t.Context())
	if err == nil || !strings.Contains(err.Error(), "another origin") || hits.Load() != 0 {
		t.Errorf("Models() = %v with %d requests to the other origin; want an error naming another origin, none", err, hits.Load())
	}
}
