// Package llamafake is a test server that behaves like llama.cpp's
// llama-server where goodput's measurements depend on it: a fixed number of
// slots (n_parallel) that generate, HTTP threads numbering n_parallel+2
// each holding one connection for as long as it is open (a connection
// beyond them is accepted by the kernel and waits for a thread), an idle
// kept-alive connection held for a keep-alive time (llama.cpp's 5 s),
// /tokenize, /apply-template, /props (total_slots), /metrics under
// llama.cpp's names, /v1/models, and OpenAI /v1/completions and
// /v1/chat/completions streaming with a final chunk carrying usage and
// timings (prompt_n, cache_n, predicted_n, prompt_ms, predicted_ms), with
// a per-slot prefix cache so that a repeated prompt prefix counts as
// cached.
//
// A word is a token: prompts are counted as their whitespace-separated
// words plus a BOS token; a chat prompt is its messages rendered in a
// small template ("<|role|> content" per message, then "<|assistant|>").
//
// It is test support, a real package so that the CLI's scripts and other
// packages' tests can start one. A Server is safe for concurrent use.
package llamafake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config shapes a Server; zero values take llama-server's defaults.
type Config struct {
	// Slots is n_parallel, the requests generated at once (0: 4).
	Slots int
	// Threads is the HTTP threads, each serving one connection at a time
	// (0: Slots+2, as llama-server sizes them).
	Threads int
	// KeepAlive is how long an idle kept-alive connection keeps its
	// thread before the server closes it (0: 5 s).
	KeepAlive time.Duration
	// TokenTime is the time per generated token (0: 1 ms), PromptTime
	// per prompt token not served from the cache (0: none).
	TokenTime, PromptTime time.Duration
	// Model is the model id served (0: "llamafake").
	Model string
	// NCtx is the context of one slot in tokens (0: 4096).
	NCtx int
	// NoCacheN leaves cache_n out of the timings, as llama.cpp versions
	// before it did: the cached tokens are then usage.prompt_tokens −
	// timings.prompt_n.
	NoCacheN bool
	// NoMetrics answers /metrics with 501, as llama-server without
	// --metrics does.
	NoMetrics bool
	// MetricsStall makes the first MetricsStall /metrics requests go
	// unanswered until the client gives up, as a llama-server whose
	// threads are all busy leaves a scrape.
	MetricsStall int
	// OnThreadWait, when set, is called as a connection starts waiting
	// for a thread (on the accepting goroutine), so a test can act on it
	// without polling.
	OnThreadWait func()
}

func (c Config) withDefaults() Config {
	if c.Slots <= 0 {
		c.Slots = 4
	}
	if c.Threads <= 0 {
		c.Threads = c.Slots + 2
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 5 * time.Second
	}
	if c.TokenTime <= 0 {
		c.TokenTime = time.Millisecond
	}
	if c.Model == "" {
		c.Model = "llamafake"
	}
	if c.NCtx <= 0 {
		c.NCtx = 4096
	}
	return c
}

// Stats is what the server saw, for tests to judge a client by.
type Stats struct {
	// Conns is the connections accepted; OpenConns those open now
	// (each holds a thread or waits for one); MaxOpenConns the most open
	// at once.
	Conns, OpenConns, MaxOpenConns int
	// ThreadWaits is the connections that had to wait for a thread, and
	// MaxThreadWait the longest such wait: a thread held by an idle
	// kept-alive connection shows as a wait of about KeepAlive, while a
	// closed one the server has not yet reaped (a busy host) is brief.
	ThreadWaits   int
	MaxThreadWait time.Duration
	// Generations is the completion requests started; MaxBusy the most
	// slots busy at once; SlotWaits the requests that waited for a slot.
	Generations, MaxBusy, SlotWaits int
	// Tokenizes and MetricsScrapes count /tokenize and /metrics answers.
	Tokenizes, MetricsScrapes int
	// BusyNs is the slots' busy time summed (ns): over a span where the
	// slots were in use, BusyNs/span is their mean concurrency.
	BusyNs int64
	// PromptTokens, CachedTokens and PredictedTokens sum the requests'.
	PromptTokens, CachedTokens, PredictedTokens int
}

// Server is a running fake llama-server.
type Server struct {
	// URL is its root, http://127.0.0.1:port.
	URL string
	cfg Config
	srv *http.Server
	ln  *threadListener

	mu    sync.Mutex
	st    Stats
	slots []slot
	free  chan int // indexes of free slots
	busy  int
	// stalled is the /metrics requests left unanswered (MetricsStall).
	stalled int
	done    chan struct{}
	wg      sync.WaitGroup
}

// slot is one generating slot and its cached prompt.
type slot struct{ cache []string }

// Start starts a Server on an ephemeral loopback port.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + l.Addr().String(), cfg: cfg, slots: make([]slot, cfg.Slots),
		free: make(chan int, cfg.Slots), done: make(chan struct{})}
	for i := range cfg.Slots {
		s.free <- i
	}
	s.ln = &threadListener{Listener: l, s: s, threads: make(chan struct{}, cfg.Threads)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]any{"status": "ok"}) })
	mux.HandleFunc("GET /props", s.props)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /models", s.models)
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("POST /apply-template", s.applyTemplate)
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("POST /v1/completions", s.completion(false))
	mux.HandleFunc("POST /completions", s.completion(false))
	mux.HandleFunc("POST /v1/chat/completions", s.completion(true))
	mux.HandleFunc("POST /chat/completions", s.completion(true))
	s.srv = &http.Server{Handler: mux, IdleTimeout: cfg.KeepAlive, ReadHeaderTimeout: time.Minute}
	s.wg.Go(func() { _ = s.srv.Serve(s.ln) })
	return s, nil
}

// Close stops the server, cutting open connections.
func (s *Server) Close() {
	close(s.done)
	_ = s.srv.Close()
	s.wg.Wait()
}

// Stats returns what the server has seen so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// threadListener hands the HTTP server a connection only when a thread is
// free, and frees the thread when the connection closes: the one
// connection per thread of llama-server's HTTP pool.
type threadListener struct {
	net.Listener
	s       *Server
	threads chan struct{}
}

func (l *threadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	s := l.s
	s.mu.Lock()
	s.st.Conns++
	s.st.OpenConns++
	s.st.MaxOpenConns = max(s.st.MaxOpenConns, s.st.OpenConns)
	s.mu.Unlock()
	tc := &threadConn{Conn: c, s: s, release: func() { <-l.threads }}
	select {
	case l.threads <- struct{}{}:
		return tc, nil
	default:
	}
	s.mu.Lock()
	s.st.ThreadWaits++
	s.mu.Unlock()
	if s.cfg.OnThreadWait != nil {
		s.cfg.OnThreadWait()
	}
	waitFrom := time.Now()
	select {
	case l.threads <- struct{}{}:
		s.mu.Lock()
		s.st.MaxThreadWait = max(s.st.MaxThreadWait, time.Since(waitFrom))
		s.mu.Unlock()
		return tc, nil
	case <-s.done:
		tc.release = func() {}
		_ = tc.Close()
		return nil, net.ErrClosed
	}
}

// threadConn frees its thread once closed.
type threadConn struct {
	net.Conn
	s       *Server
	release func()
	once    sync.Once
}

func (c *threadConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.release()
		c.s.mu.Lock()
		c.s.st.OpenConns--
		c.s.mu.Unlock()
	})
	return err
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg, "type": "invalid_request_error"}})
}

func (s *Server) props(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.cfg.NCtx, "params": map[string]any{"n_predict": -1}},
		"total_slots":                 s.cfg.Slots,
		"model_path":                  "/models/" + s.cfg.Model + ".gguf",
		"chat_template":               "{{ role }} {{ content }}",
		"build_info":                  "llamafake",
	})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.cfg.Model, "object": "model", "created": 0, "owned_by": "llamacpp",
		"meta": map[string]any{"n_ctx_train": 8 * s.cfg.NCtx},
	}}})
}

// words is text's tokens: its whitespace-separated words.
func words(text string) []string { return strings.Fields(text) }

// render is the chat template applied to messages.
func render(msgs []message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|%s|> %s ", m.Role, m.text())
	}
	b.WriteString("<|assistant|>")
	return b.String()
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is a message's content: a string, or the text parts of a list.
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, " ")
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content    *string `json:"content"`
		AddSpecial bool    `json:"add_special"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Content == nil {
		fail(w, http.StatusBadRequest, `"content" must be provided`)
		return
	}
	toks := []int{}
	if in.AddSpecial {
		toks = append(toks, 1)
	}
	for i := range words(*in.Content) {
		toks = append(toks, 100+i)
	}
	s.mu.Lock()
	s.st.Tokenizes++
	s.mu.Unlock()
	writeJSON(w, map[string]any{"tokens": toks})
}

func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Messages []message `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Messages) == 0 {
		fail(w, http.StatusBadRequest, `"messages" must be provided`)
		return
	}
	writeJSON(w, map[string]any{"prompt": render(in.Messages)})
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoMetrics {
		fail(w, http.StatusNotImplemented, "This server does not support metrics endpoint. Start it with `--metrics`")
		return
	}
	s.mu.Lock()
	if s.stalled < s.cfg.MetricsStall {
		s.stalled++
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	s.st.MetricsScrapes++
	st, busy := s.st, s.busy
	cached := 0
	for _, sl := range s.slots {
		cached += len(sl.cache)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	m := func(typ, name, help string, v float64) {
		fmt.Fprintf(w, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %g\n", name, help, name, typ, name, v)
	}
	m("counter", "prompt_tokens_total", "Number of prompt tokens processed.", float64(st.PromptTokens-st.CachedTokens))
	m("counter", "prompt_seconds_total", "Prompt process time", float64(st.PromptTokens-st.CachedTokens)*s.cfg.PromptTime.Seconds())
	m("counter", "tokens_predicted_total", "Number of generation tokens processed.", float64(st.PredictedTokens))
	m("counter", "tokens_predicted_seconds_total", "Predict process time", float64(st.PredictedTokens)*s.cfg.TokenTime.Seconds())
	m("counter", "n_decode_total", "Total number of llama_decode() calls", float64(st.PredictedTokens))
	m("gauge", "n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", float64(busy))
	m("gauge", "prompt_tokens_seconds", "Average prompt throughput in tokens/s.", 0)
	m("gauge", "predicted_tokens_seconds", "Average generation throughput in tokens/s.", 1/s.cfg.TokenTime.Seconds())
	m("gauge", "kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", float64(cached)/float64(s.cfg.NCtx*s.cfg.Slots))
	m("gauge", "kv_cache_tokens", "KV-cache tokens.", float64(cached))
	m("gauge", "requests_processing", "Number of requests processing.", float64(busy))
	m("gauge", "requests_deferred", "Number of requests deferred.", 0)
}

// request is the body fields the fake reads.
type request struct {
	Model         string    `json:"model"`
	Prompt        *string   `json:"prompt"`
	Messages      []message `json:"messages"`
	MaxTokens     *int      `json:"max_tokens"`
	MaxCompletion *int      `json:"max_completion_tokens"`
	NPredict      *int      `json:"n_predict"`
	Stream        bool      `json:"stream"`
}

func (q request) maxTokens() int {
	for _, p := range []*int{q.MaxCompletion, q.MaxTokens, q.NPredict} {
		if p != nil && *p > 0 {
			return *p
		}
	}
	return 16
}

// acquire waits for a free slot and returns it, or -1 when ctx ends.
func (s *Server) acquire(ctx context.Context) int {
	var i int
	select {
	case i = <-s.free:
	default:
		s.mu.Lock()
		s.st.SlotWaits++
		s.mu.Unlock()
		select {
		case i = <-s.free:
		case <-ctx.Done():
			return -1
		}
	}
	s.mu.Lock()
	s.busy++
	s.st.Generations++
	s.st.MaxBusy = max(s.st.MaxBusy, s.busy)
	s.mu.Unlock()
	return i
}

// cached takes slot i for prompt, returning how many of its leading tokens
// the slot's cache holds.
func (s *Server) cached(i int, prompt []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.slots[i].cache
	n := 0
	for n < len(c) && n < len(prompt) && c[n] == prompt[n] {
		n++
	}
	if n == len(prompt) && n > 0 {
		n-- // llama.cpp evaluates at least the last prompt token again
	}
	s.slots[i].cache = prompt
	return n
}

func (s *Server) release(i int, start time.Time, prompt, cached, predicted int) {
	s.mu.Lock()
	s.busy--
	s.st.BusyNs += int64(time.Since(start))
	s.st.PromptTokens += prompt
	s.st.CachedTokens += cached
	s.st.PredictedTokens += predicted
	s.mu.Unlock()
	s.free <- i
}

// errStopped is a generation cut by the client or the server's close.
var errStopped = errors.New("stopped")

// wait sleeps d, or returns errStopped when ctx or the server ends first.
func (s *Server) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
	case <-s.done:
	}
	return errStopped
}

func (s *Server) completion(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var q request
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			fail(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
			return
		}
		var text string
		switch {
		case chat && len(q.Messages) > 0:
			text = render(q.Messages)
		case !chat && q.Prompt != nil:
			text = *q.Prompt
		default:
			fail(w, http.StatusBadRequest, "no prompt or messages")
			return
		}
		prompt := append([]string{"<s>"}, words(text)...)
		n := q.maxTokens()
		if len(prompt)+n > s.cfg.NCtx {
			fail(w, http.StatusBadRequest, fmt.Sprintf("the request exceeds the available context size (%d tokens)", s.cfg.NCtx))
			return
		}
		ctx := r.Context()
		i := s.acquire(ctx)
		if i < 0 {
			return
		}
		start := time.Now()
		cached := s.cached(i, prompt)
		predicted := 0
		defer func() { s.release(i, start, len(prompt), cached, predicted) }()
		id := "chatcmpl-" + fmt.Sprint(time.Now().UnixNano())
		object := "text_completion"
		if chat {
			object = "chat.completion.chunk"
		}
		choice := func(tok string, finish any) map[string]any {
			if chat {
				d := map[string]any{}
				if tok != "" {
					d["content"] = tok
				}
				return map[string]any{"index": 0, "delta": d, "finish_reason": finish}
			}
			return map[string]any{"index": 0, "text": tok, "finish_reason": finish}
		}
		promptStart := time.Now()
		if s.wait(ctx, time.Duration(len(prompt)-cached)*s.cfg.PromptTime) != nil {
			return
		}
		promptMs := float64(time.Since(promptStart)) / 1e6
		fl, _ := w.(http.Flusher)
		if q.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		genStart := time.Now()
		var out []string
		for k := range n {
			if k > 0 && s.wait(ctx, s.cfg.TokenTime) != nil {
				return
			}
			tok := " tok"
			out = append(out, tok)
			predicted++
			if q.Stream {
				b, _ := json.Marshal(map[string]any{"id": id, "object": object, "created": 0, "model": s.cfg.Model,
					"choices": []any{choice(tok, nil)}})
				fmt.Fprintf(w, "data: %s\n\n", b)
				if fl != nil {
					fl.Flush()
				}
			}
		}
		predictedMs := float64(time.Since(genStart)) / 1e6
		timings := map[string]any{"prompt_n": len(prompt) - cached, "prompt_ms": promptMs,
			"predicted_n": n, "predicted_ms": predictedMs}
		if !s.cfg.NoCacheN {
			timings["cache_n"] = cached
		}
		usage := map[string]any{"prompt_tokens": len(prompt), "completion_tokens": n, "total_tokens": len(prompt) + n}
		if !q.Stream {
			msg := choice(strings.Join(out, ""), "length")
			if chat {
				delete(msg, "delta")
				msg["message"] = map[string]any{"role": "assistant", "content": strings.Join(out, "")}
			}
			writeJSON(w, map[string]any{"id": id, "object": strings.TrimSuffix(object, ".chunk"), "created": 0, "model": s.cfg.Model,
				"choices": []any{msg}, "usage": usage, "timings": timings})
			return
		}
		b, _ := json.Marshal(map[string]any{"id": id, "object": object, "created": 0, "model": s.cfg.Model,
			"choices": []any{choice("", "length")}, "usage": usage, "timings": timings})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}
