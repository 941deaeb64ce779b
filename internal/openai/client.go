// Package openai speaks the OpenAI-compatible HTTP API that vLLM, SGLang,
// TGI, llama.cpp, Ollama and commercial APIs serve: it builds streaming
// completion and chat requests, reads their server-sent events, and fills a
// runlog.Record with every token-carrying chunk's arrival time.
//
// A Client is safe for concurrent use; one Stream call measures one request.
package openai

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sse"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what to send: a prompt (completions) or messages (chat).
type Request struct {
	// ID is sent as x-request-id and kept in the record.
	ID string
	// Prompt is the completion prompt; for chat it becomes one user message
	// when Messages is empty.
	Prompt string
	// Messages is the chat conversation.
	Messages []Message
	// MaxTokens caps the output (sent as max_tokens); 0 sends none.
	MaxTokens int
	// PromptTokens is the prompt length the workload intended (0 unknown).
	PromptTokens int
}

// Config configures a Client.
type Config struct {
	// BaseURL is the server root, e.g. http://127.0.0.1:8000.
	BaseURL string
	// Endpoint is the path, e.g. /v1/completions or /v1/chat/completions.
	Endpoint string
	// Model is the model id to request.
	Model string
	// APIKey is sent as a bearer token; it is never logged or recorded.
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
	// Timeout bounds a whole request; 0 means none.
	Timeout time.Duration
	// IdleTimeout bounds the server's silence, from the send to the first
	// byte and between bytes; 0 means none.
	IdleTimeout time.Duration
	// MaxConns sizes the connection pool (the run's concurrency); no other
	// cap is applied.
	MaxConns int
	// Now is the monotonic clock in ns from the run start.
	Now func() int64
}

// Client sends streaming requests and measures them.
type Client struct {
	cfg     Config
	url     string
	chat    bool
	hc      *http.Client
	fresh   *http.Client // for a retry after a reused connection raced a closing server
	authHdr string
	// closes is set once the server was seen closing a kept-alive
	// connection under a request (llama.cpp does after every stream); from
	// then on every request gets a fresh connection, as vLLM's client does.
	closes atomic.Bool
	// pool holds streamStates whose readers use this client's clock.
	pool sync.Pool
}

// NewClient checks cfg and returns a Client.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--base-url %q: want http(s)://host[:port]", cfg.BaseURL)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "/v1/completions"
	}
	if !strings.HasPrefix(cfg.Endpoint, "/") {
		cfg.Endpoint = "/" + cfg.Endpoint
	}
	if cfg.Now == nil {
		start := time.Now()
		cfg.Now = func() int64 { return int64(time.Since(start)) }
	}
	c := &Client{
		cfg:  cfg,
		url:  strings.TrimRight(cfg.BaseURL, "/") + cfg.Endpoint,
		chat: strings.Contains(cfg.Endpoint, "chat"),
	}
	if cfg.APIKey != "" {
		c.authHdr = "Bearer " + cfg.APIKey
	}
	c.pool.New = func() any {
		return &streamState{sr: sse.NewReader(nil, c.cfg.Now, sse.DefaultBufSize)}
	}
	conns := max(cfg.MaxConns, 16)
	c.hc = &http.Client{Transport: newTransport(conns, false, cfg.Insecure)}
	c.fresh = &http.Client{Transport: newTransport(conns, true, cfg.Insecure)}
	return c, nil
}

// Chat reports whether the endpoint is a chat endpoint.
func (c *Client) Chat() bool { return c.chat }

func newTransport(conns int, noKeepAlive, insecure bool) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	var tc *tls.Config
	if insecure {
		tc = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for with --insecure
	}
	return &http.Transport{
		TLSClientConfig:     tc,
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.DialContext,
		MaxIdleConns:        0, // no global cap: the per-host limit is the one that matters
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 30 * time.Second,
		DisableKeepAlives:   noKeepAlive,
		DisableCompression:  true, // a gzip layer would batch events and hide their timing
		ReadBufferSize:      64 << 10,
		WriteBufferSize:     64 << 10,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1, as the servers measured speak it
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
	if c.chat {
		msgs := r.Messages
		if len(msgs) == 0 {
			msgs = []Message{{Role: "user", Content: r.Prompt}}
		}
		m["messages"] = msgs
	} else {
		m["prompt"] = r.Prompt
	}
	if r.MaxTokens > 0 {
		field := c.cfg.MaxTokensField
		if field == "" {
			field = "max_tokens"
		}
		m[field] = r.MaxTokens
	}
	m["stream"] = !c.cfg.NoStream
	if !c.cfg.NoStream {
		// stream_options is allowed only with streaming (vLLM rejects it
		// otherwise); a whole answer carries its usage anyway.
		so := map[string]any{"include_usage": true}
		if c.cfg.ContinuousUsage {
			so["continuous_usage_stats"] = true
		}
		m["stream_options"] = so
	}
	if c.cfg.IgnoreEOS {
		m["ignore_eos"] = true
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

var (
	errIdle    = errors.New("idle timeout")
	errTimeout = errors.New("request timeout")
)

// Stream sends one request whose body was built by Body and fills rec: Sent,
// ConnectNs, Chunks, End, token counts, Status and error class. rec.ID and
// rec.Intended are the caller's. Failures are recorded, never returned: the
// error result is only for a cancelled ctx, and even then rec is complete
// (class cancelled).
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
	// The hooks run on the transport's goroutines (a dial may outlive a
	// failed attempt), so they touch only these atomics, never rec.
	var reused, wrote atomic.Bool
	var connStart, connDone atomic.Int64
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused.Store(info.Reused) },
		ConnectStart: func(_, _ string) {
			connStart.CompareAndSwap(0, c.cfg.Now())
		},
		ConnectDone:      func(_, _ string, _ error) { connDone.Store(c.cfg.Now()) },
		TLSHandshakeDone: func(tls.ConnectionState, error) { connDone.Store(c.cfg.Now()) },
		WroteRequest:     func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.url, bytes.NewReader(body))
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
	h["X-Request-Id"] = []string{r.ID}
	if c.authHdr != "" {
		h["Authorization"] = []string{c.authHdr}
	}
	for k, v := range c.cfg.Headers {
		h[k] = v
	}
	hc := c.hc
	if fresh {
		hc = c.fresh
	}
	// The idle clock runs from the send: a server that accepts the request
	// and never answers (no headers, no bytes) is caught too.
	var idle *idleReader
	if c.cfg.IdleTimeout > 0 {
		idle = newIdleReader(nil, c.cfg.IdleTimeout, func() { cancel(errIdle) })
		defer idle.stop()
	}
	rec.Sent = c.cfg.Now()
	resp, err := hc.Do(req)
	if cs, cd := connStart.Load(), connDone.Load(); cs != 0 && cd > cs && !reused.Load() {
		rec.ConnectNs = cd - cs
	}
	if err != nil {
		rec.End = c.cfg.Now()
		if mayRetry && reused.Load() && ctx.Err() == nil && (!wrote.Load() || IsReset(err)) {
			return true
		}
		c.classifyErr(ctx, rec, err, true)
		return false
	}
	defer resp.Body.Close()
	var rd io.Reader = resp.Body
	if idle != nil {
		idle.r = resp.Body
		idle.t.Reset(c.cfg.IdleTimeout) // the headers were bytes too
		rd = idle
	}
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(rd, 4096))
		rec.End = c.cfg.Now()
		c.fail(rec, runlog.StatusClass(resp.StatusCode), fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorText(msg)))
		return false
	}
	if c.cfg.NoStream {
		c.readWhole(ctx, rd, rec)
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

// read consumes the event stream into rec. It reports whether the stream
// ended cleanly with [DONE], leaving the body worth draining.
func (c *Client) read(ctx context.Context, body io.Reader, rec *runlog.Record) (clean bool) {
	st := c.pool.Get().(*streamState)
	defer c.pool.Put(st)
	st.sr.Reset(body)
	m := &st.meter
	m.Reset(rec)
	keep := c.cfg.KeepText
	st.text = st.text[:0]
	for !m.Stopped() {
		ev, err := st.sr.Next()
		if err == io.EOF {
			m.EOF(c.cfg.Now())
			break
		}
		if err != nil {
			class, msg := c.classify(ctx, err, false)
			m.Abort(c.cfg.Now(), class, msg)
			break
		}
		m.Event(ev.Data, ev.At, ev.Truncated)
		if keep {
			st.keepText(ev.Data)
		}
	}
	m.Close(rec.RequestedPromptTokens)
	if keep {
		rec.GeneratedText = string(st.text)
	}
	return m.Done()
}

// keepText appends the visible text of one event to st.text. It decodes
// the event a second time (the meter keeps no text), after its arrival was
// stamped, so it costs CPU but no measured time.
func (st *streamState) keepText(data []byte) {
	if len(data) == 0 || bytes.Equal(data, doneMarker) {
		return
	}
	if st.dec.Decode(data, &st.ch) == nil {
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
	defer c.pool.Put(st)
	ch := &st.ch
	if err := st.dec.DecodeResponse(b, ch); err != nil {
		c.fail(rec, runlog.ErrMalformed, "response: "+err.Error())
		return
	}
	if len(ch.ErrMessage) > 0 {
		c.fail(rec, runlog.ErrStream, "error: "+string(ch.ErrMessage))
		return
	}
	rec.FinishReason = string(ch.FinishReason)
	var think ThinkSplitter
	vis, hid := think.Feed(ch.Content)
	hid += len(ch.Reasoning) + ch.ToolArgs
	n := 0
	if vis+hid > 0 {
		n = 1
	}
	if u := ch.Usage; u.Present {
		rec.PromptTokens = u.PromptTokens
		rec.CachedTokens = u.CachedTokens
		if u.CompletionTokens > 0 {
			rec.TokenSource = runlog.TokensUsage
			rec.CompletionTokens, rec.ReasoningTokens = u.CompletionTokens, u.ReasoningTokens
			n = u.CompletionTokens
		}
		if rec.PromptTokens == 0 {
			rec.PromptTokens = rec.RequestedPromptTokens
		}
	}
	if rec.TokenSource == runlog.TokensCounted {
		rec.CompletionTokens = n
	}
	if n > 0 {
		rec.Chunks = append(rec.Chunks, runlog.Chunk{T: at, Tokens: int32(min(n, 1<<31-1)), Visible: vis > 0})
	}
	if c.cfg.KeepText {
		rec.GeneratedText = string(ch.Content)
	}
}

// streamState is the per-stream reading machinery, pooled so a request does
// not allocate a 64 KiB buffer.
type streamState struct {
	sr    *sse.Reader
	meter StreamMeter
	// For KeepText and non-streamed answers: a decoder of their own, and
	// the text kept so far.
	dec  ChunkDecoder
	ch   Chunk
	text []byte
}

func (c *Client) fail(rec *runlog.Record, class runlog.ErrorClass, msg string) {
	if rec.ErrorClass != "" {
		return
	}
	rec.ErrorClass = class
	rec.Error = oneLine(msg)
}

// classifyErr records a transport error's class on rec.
func (c *Client) classifyErr(ctx context.Context, rec *runlog.Record, err error, beforeResponse bool) {
	class, msg := c.classify(ctx, err, beforeResponse)
	c.fail(rec, class, msg)
}

// classify maps a transport error to an error class and message.
func (c *Client) classify(ctx context.Context, err error, beforeResponse bool) (runlog.ErrorClass, string) {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errIdle):
		return runlog.ErrIdleTimeout, fmt.Sprintf("no data for %v", c.cfg.IdleTimeout)
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

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// idleReader cancels the request when no bytes arrive for a while.
type idleReader struct {
	r io.Reader
	d time.Duration
	t *time.Timer
}

func newIdleReader(r io.Reader, d time.Duration, onIdle func()) *idleReader {
	return &idleReader{r: r, d: d, t: time.AfterFunc(d, onIdle)}
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}

func (ir *idleReader) stop() { ir.t.Stop() }

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
	// Root is the model the id serves (vLLM: its path or Hugging Face id).
	Root string `json:"root,omitempty"`
}

// Models lists the server's models.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	u := strings.TrimRight(c.cfg.BaseURL, "/") + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.authHdr != "" {
		req.Header.Set("Authorization", c.authHdr)
	}
	for k, v := range c.cfg.Headers {
		req.Header[k] = v
	}
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
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", u, resp.StatusCode, oneLine(errorText(b)))
	}
	var list struct {
		Data []Model `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("GET %s: not a model list: %w", u, err)
	}
	return list.Data, nil
}

// SetModel sets the model id (after discovery).
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

// SetContinuousUsage turns per-chunk usage on or off (after discovery).
func (c *Client) SetContinuousUsage(on bool) { c.cfg.ContinuousUsage = on }
