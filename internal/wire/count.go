package wire

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// countTimeout bounds one request to a counting endpoint (/tokenize,
// /apply-template, /props, /v1/models): they answer in milliseconds, and
// one that never answers must not hold a caller whose context has no
// deadline.
const countTimeout = 30 * time.Second

// notUnderstood is an answer that shows the server did not read the body
// form: an error status, a body that is no tokenize answer, or no tokens
// for a non-empty text (llama.cpp answers {"tokens": []} to a body without
// "content"). Another form may fare better; a transport error would not.
type notUnderstood struct {
	msg    string
	status int // the HTTP status, 0 for an answer with status 200
}

func (e *notUnderstood) Error() string { return e.msg }

func notUnderstoodf(format string, args ...any) error {
	return &notUnderstood{msg: fmt.Sprintf(format, args...)}
}

// tokenizeForm is one way of asking a server to count a prompt.
type tokenizeForm struct {
	// name says which body the form sends, for descriptions.
	name  string
	count func(ctx context.Context, c *Client, text string) (int, error)
}

// completionForms are the /tokenize bodies tried, in order, for a
// completions endpoint: vLLM's and SGLang's (special tokens added, as for a
// completion), llama.cpp's, TGI's.
var completionForms = []tokenizeForm{
	{`{"prompt"}`, func(ctx context.Context, c *Client, text string) (int, error) {
		return c.tokenize(ctx, "/tokenize", map[string]any{"model": c.cfg.Model, "prompt": text})
	}},
	{`{"content"} (llama.cpp)`, llamaContent},
	{`{"inputs"} (TGI)`, func(ctx context.Context, c *Client, text string) (int, error) {
		return c.tokenize(ctx, "/tokenize", map[string]any{"inputs": text})
	}},
}

// chatForms are the bodies tried for a chat endpoint, whose prompts the
// server wraps in its chat template: vLLM's /tokenize of messages, then
// llama.cpp's template rendered by /apply-template and counted by /tokenize.
var chatForms = []tokenizeForm{
	{`{"messages"}`, func(ctx context.Context, c *Client, text string) (int, error) {
		return c.tokenize(ctx, "/tokenize", map[string]any{"model": c.cfg.Model, "messages": []Message{{Role: "user", Content: text}}})
	}},
	{`/apply-template, then {"content"} (llama.cpp)`, func(ctx context.Context, c *Client, text string) (int, error) {
		var out struct {
			Prompt *string `json:"prompt"`
		}
		if err := c.postJSON(ctx, "/apply-template", map[string]any{"messages": []Message{{Role: "user", Content: text}}}, &out); err != nil {
			return 0, err
		}
		if out.Prompt == nil || *out.Prompt == "" {
			return 0, notUnderstoodf("POST /apply-template: no prompt in the answer")
		}
		return llamaContent(ctx, c, *out.Prompt)
	}},
}

// llamaContent counts text the way llama.cpp's completion endpoints
// tokenize a prompt: with BOS, special tokens parsed.
func llamaContent(ctx context.Context, c *Client, text string) (int, error) {
	return c.tokenize(ctx, "/tokenize", map[string]any{"content": text, "add_special": true, "parse_special": true})
}

// Counter counts prompts with the server's tokenize endpoint, as prompts of
// its client's endpoint: with the chat template applied for chat, with
// special tokens (BOS) for completions. Servers differ in the body they
// read, so the first Count tries the known forms in turn — vLLM's and
// SGLang's {"model","prompt"|"messages"}, llama.cpp's {"content"} (for chat
// after /apply-template), TGI's {"inputs"} — and the first that counts is
// used from then on. An answer of no tokens for a non-empty text means the
// server did not read the form, not a count of 0.
//
// A Counter is safe for concurrent use.
type Counter struct {
	c     *Client
	forms []tokenizeForm
	// form is 1 + the index in forms of the form that counted; 0 before
	// one has.
	form atomic.Int32
}

// NewCounter returns a Counter for c's server and endpoint.
func NewCounter(c *Client) *Counter {
	k := &Counter{c: c, forms: completionForms}
	if c.Chat() {
		k.forms = chatForms
	}
	return k
}

// Form names the body form that counted, "" before one has.
func (k *Counter) Form() string {
	if i := k.form.Load(); i > 0 {
		return k.forms[i-1].name
	}
	return ""
}

// Count returns how many tokens text makes as a prompt. Before a form has
// worked it tries each in turn; an error then means the server offers no
// tokenize endpoint it could use (it lists what each form got). Once a form
// has worked only that form is sent, and an empty count is an error too.
func (k *Counter) Count(ctx context.Context, text string) (int, error) {
	if i := k.form.Load(); i > 0 {
		n, err := k.forms[i-1].count(ctx, k.c, text)
		if err == nil && n == 0 && text != "" {
			err = errors.New("POST /tokenize: counted no tokens")
		}
		return n, err
	}
	var why []string
	found := false // some form's endpoint exists
	for i, f := range k.forms {
		n, err := f.count(ctx, k.c, text)
		if err == nil && n == 0 && text != "" {
			err = notUnderstoodf("counted no tokens")
		}
		if err == nil {
			k.form.CompareAndSwap(0, int32(i+1))
			return n, nil
		}
		var nu *notUnderstood
		if ctx.Err() != nil || !errors.As(err, &nu) {
			// Out of time, or the server is unreachable: other forms
			// would fare no better.
			return 0, err
		}
		why = append(why, f.name+": "+strings.TrimPrefix(err.Error(), "POST /tokenize: "))
		found = found || nu.status != http.StatusNotFound
	}
	if !found {
		return 0, ErrNoTokenize
	}
	return 0, fmt.Errorf("POST /tokenize: no body form counted (%s)", strings.Join(why, "; "))
}

// ErrNoTokenize is Count's error for a server that answered every form
// with 404 Not Found: it has no tokenize endpoint.
var ErrNoTokenize = errors.New("the server has no /tokenize (HTTP 404)")

// tokenize posts body to path and returns the count in the answer.
func (c *Client) tokenize(ctx context.Context, path string, body map[string]any) (int, error) {
	var raw json.RawMessage
	if err := c.postJSON(ctx, path, body, &raw); err != nil {
		return 0, err
	}
	n, err := parseCount(raw)
	if err != nil {
		return 0, notUnderstoodf("POST %s: %v", path, err)
	}
	return n, nil
}

// parseCount reads a tokenize answer: vLLM's and SGLang's {"count"} or
// {"tokens"}, llama.cpp's {"tokens"}, TGI's list of tokens.
func parseCount(b []byte) (int, error) {
	var list []json.RawMessage
	if json.Unmarshal(b, &list) == nil {
		return len(list), nil
	}
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, errors.New("not a tokenize answer")
	}
	switch {
	case out.Count != nil && *out.Count >= 0:
		return *out.Count, nil
	case out.Count != nil:
		return 0, fmt.Errorf("a count of %d", *out.Count)
	case out.Tokens != nil:
		return len(out.Tokens), nil
	}
	return 0, errors.New("no count or tokens in the answer")
}

// postJSON posts body to path on the server and decodes the JSON answer
// into out. An error status or an answer that is not JSON is a
// *notUnderstood.
func (c *Client) postJSON(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, path, b, out)
}

func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, countTimeout)
	defer cancel()
	u := joinURL(c.base, path)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Named like the probe requests, so a server's logs (and a test
	// server's request count) tell them from the run's.
	req.Header.Set("X-Request-Id", "goodput-probe-"+strings.Trim(strings.ReplaceAll(path, "/", "-"), "-"))
	c.setAuth(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the server's, which the caller knows
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return &notUnderstood{msg: fmt.Sprintf("%s %s: HTTP %d", method, path, resp.StatusCode), status: resp.StatusCode}
	}
	if err := json.Unmarshal(rb, out); err != nil {
		return notUnderstoodf("%s %s: answer is not JSON", method, path)
	}
	return nil
}

// ContextLength returns the server's context length in tokens — the most a
// prompt and its output may make together in one request — and where it
// was read; 0 and "" when the server does not say. It reads llama.cpp's
// GET /props (default_generation_settings.n_ctx, the context of one slot,
// or a top-level n_ctx) and the model's entry in GET /v1/models (vLLM's and
// SGLang's max_model_len, a context_length, llama.cpp's meta.n_ctx_train,
// which the server's own context may undercut). Where several are given
// the smallest holds: it is the one a request runs into.
func (c *Client) ContextLength(ctx context.Context) (tokens int, from string) {
	consider := func(n int, where string) {
		if n > 0 && (tokens == 0 || n < tokens) {
			tokens, from = n, where
		}
	}
	var props struct {
		NCtx       int `json:"n_ctx"`
		TotalSlots int `json:"total_slots"`
		NParallel  int `json:"n_parallel"`
		Defaults   struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if c.call(ctx, http.MethodGet, "/props", nil, &props) == nil {
		consider(props.Defaults.NCtx, "/props default_generation_settings.n_ctx")
		consider(props.NCtx, "/props n_ctx")
		if n := cmp.Or(props.TotalSlots, props.NParallel); n > 0 && n <= maxSlots {
			c.slots.Store(int32(n))
		}
	}
	type entry struct {
		ID            string `json:"id"`
		MaxModelLen   int    `json:"max_model_len"`
		ContextLength int    `json:"context_length"`
		Meta          struct {
			NCtx      int `json:"n_ctx"`
			NCtxTrain int `json:"n_ctx_train"`
		} `json:"meta"`
	}
	var list struct {
		Data []entry `json:"data"`
	}
	if c.call(ctx, http.MethodGet, "/v1/models", nil, &list) == nil {
		for _, m := range list.Data {
			if len(list.Data) > 1 && m.ID != c.cfg.Model {
				continue
			}
			consider(m.MaxModelLen, "/v1/models max_model_len")
			consider(m.ContextLength, "/v1/models context_length")
			consider(m.Meta.NCtx, "/v1/models meta.n_ctx")
			consider(m.Meta.NCtxTrain, "/v1/models meta.n_ctx_train")
		}
	}
	return tokens, from
}

// maxSlots bounds a believable slot count.
const maxSlots = 1 << 16

// Slots is the requests the server generates at once as its /props said
// (llama.cpp's total_slots, its n_parallel), read by ContextLength; 0 when
// unknown. llama-server serves n_parallel+2 connections at a time, one per
// HTTP thread, so a client's side traffic must stay within it.
func (c *Client) Slots() int { return int(c.slots.Load()) }

// CloseIdle closes the idle kept-alive connections: those a client's side
// traffic (model checks, calibration) opened would otherwise each hold one
// of a llama-server's HTTP threads while the run needs them. The client
// stays usable.
func (c *Client) CloseIdle() {
	c.hc.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// ProbePrompt sends text as a one-token streaming request and returns the
// prompt tokens the server's usage reports (0 when it reports none).
func (c *Client) ProbePrompt(ctx context.Context, id, text string) (int, error) {
	r := &Request{ID: id, Prompt: text, MaxTokens: 1}
	body, err := c.Body(r)
	if err != nil {
		return 0, err
	}
	var rec runlog.Record
	c.Stream(ctx, r, body, &rec)
	if !rec.OK() {
		return 0, fmt.Errorf("probe request: %s: %s", rec.ErrorClass, rec.Error)
	}
	if rec.TokenSource != runlog.TokensUsage {
		return 0, nil
	}
	return rec.PromptTokens, nil
}
