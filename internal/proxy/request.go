package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/tokenize"
)

// reqInfo is what the proxy reads from a completion request's JSON body.
type reqInfo struct {
	// ok is false when the body was not a JSON object of the expected
	// shape (or was too large to inspect).
	ok bool
	// model is the body's "model" (raw: labels go through a modelSet).
	model string
	// stream is the body's "stream".
	stream bool
	// includeUsage is stream_options.include_usage as the client sent it.
	includeUsage bool
	// promptTokens estimates the prompt length: exact for token-id
	// prompts, else tokenize.Approx over the prompt or message texts.
	promptTokens int
}

// wireRequest is the part of a completion or chat request the proxy reads.
type wireRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	// System is Anthropic's top-level system prompt; Input and
	// Instructions are the Responses API's.
	System       json.RawMessage `json:"system"`
	Input        json.RawMessage `json:"input"`
	Instructions json.RawMessage `json:"instructions"`
}

// inspect reads a request body. It never fails: a body it cannot read
// gives a reqInfo with ok false, and the request is still passed through
// untouched.
func inspect(body []byte) reqInfo {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return reqInfo{}
	}
	ri := reqInfo{ok: true, model: w.Model, stream: w.Stream}
	if w.StreamOptions != nil {
		ri.includeUsage = w.StreamOptions.IncludeUsage
	}
	ri.promptTokens = promptTokens(w.Prompt)
	for _, m := range w.Messages {
		ri.promptTokens += contentTokens(m.Content)
	}
	ri.promptTokens += contentTokens(w.System) + contentTokens(w.Instructions) + inputTokens(w.Input)
	return ri
}

// inputTokens estimates a Responses input: a string, or items whose
// content (a string or text parts), output (a tool result) or arguments
// (a tool call) are counted.
func inputTokens(raw json.RawMessage) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return contentTokens(raw)
	}
	var items []struct {
		Content   json.RawMessage `json:"content"`
		Output    json.RawMessage `json:"output"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return 0
	}
	n := 0
	for _, it := range items {
		n += contentTokens(it.Content) + contentTokens(it.Output) + contentTokens(it.Arguments)
	}
	return n
}

// promptTokens estimates a completions prompt: a string, an array of
// strings, an array of token ids or an array of such arrays.
func promptTokens(raw json.RawMessage) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return tokenize.Approx{}.Count(s)
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		return len(ids)
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return 0
	}
	n := 0
	for _, p := range parts {
		p = bytes.TrimSpace(p)
		if len(p) > 0 && p[0] == '[' { // one prompt per element: count them all
			n += promptTokens(p)
			continue
		}
		if json.Unmarshal(p, &s) == nil {
			n += tokenize.Approx{}.Count(s)
		}
	}
	return n
}

// contentTokens estimates a chat message's content: a string or an array
// of parts whose "text" members are counted (images and audio are not).
func contentTokens(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return tokenize.Approx{}.Count(s)
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return 0
	}
	n := 0
	for _, p := range parts {
		n += tokenize.Approx{}.Count(p.Text)
	}
	return n
}

// errNoInject is returned by injectUsage when the body is not a streamed
// request it can safely rewrite.
var errNoInject = errors.New("not a streamed JSON request")

// injectUsage returns body with stream_options.include_usage set to true,
// keeping every other member (and any other stream_options member, such as
// vLLM's continuous_usage_stats) as it was. Member order at the top level
// may change; the values do not.
func injectUsage(body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, errNoInject
	}
	var stream bool
	if err := json.Unmarshal(top["stream"], &stream); err != nil || !stream {
		return nil, errNoInject
	}
	so := map[string]json.RawMessage{}
	if raw, ok := top["stream_options"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &so); err != nil || so == nil {
			return nil, errNoInject
		}
	}
	so["include_usage"] = json.RawMessage("true")
	b, err := json.Marshal(so)
	if err != nil {
		return nil, errNoInject
	}
	top["stream_options"] = b
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(top); err != nil {
		return nil, errNoInject
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// captureBody passes a request body through to the upstream unchanged
// while keeping a copy of its first max bytes, which the proxy reads after
// the fact (so inspecting the body never delays sending it) and sends again
// when an upstream connection turns out dead before it answered.
//
// The transport's writing goroutine reads it while the handler's goroutine
// looks at what it kept, so its state is guarded by a mutex.
type captureBody struct {
	r   io.ReadCloser
	max int

	mu       sync.Mutex
	buf      []byte
	overflow bool  // more than max bytes: buf is dropped
	eof      bool  // the client's body ended
	err      error // the client's body failed
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	if n > 0 && !c.overflow {
		if len(c.buf)+n > c.max {
			c.overflow = true
			c.buf = nil
		} else {
			c.buf = append(c.buf, p[:n]...)
		}
	}
	switch {
	case err == io.EOF:
		c.eof = true
	case err != nil && c.err == nil:
		c.err = err
	}
	c.mu.Unlock()
	return n, err
}

// Close does nothing: the server closes the client's body itself once the
// handler has returned, and the proxy may still need to read the rest of
// it (replay) after the transport is done with it.
func (c *captureBody) Close() error { return nil }

// whole returns the body when all of it has been read and kept.
func (c *captureBody) whole() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.eof && !c.overflow
}

// ended reports whether the client's body has been read to its end (or
// failed): no later Read can touch the client's connection.
func (c *captureBody) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eof || c.err != nil
}

// final reports whether what is kept will not change any more: the body
// ended, failed or outgrew max.
func (c *captureBody) final() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eof || c.err != nil || c.overflow
}

// readRest reads what the transport left of the client's body, while at
// most max bytes in all, and returns the whole body. It must be called
// only once nothing else reads the body.
func (c *captureBody) readRest() ([]byte, bool) {
	var scratch [4 << 10]byte
	for {
		c.mu.Lock()
		stop := c.eof || c.overflow || c.err != nil
		c.mu.Unlock()
		if stop {
			break
		}
		if _, err := c.Read(scratch[:]); err != nil {
			break
		}
	}
	return c.whole()
}

// secretsOf is the credentials a request carries — its credential headers,
// key-like query values — and those in the upstream URL, so that any text
// the proxy keeps (records, logs, error answers) can be scrubbed of them
// even when an upstream echoes them back in an error message.
func secretsOf(r *http.Request, upstream *url.URL) *redact.Secrets {
	s := &redact.Secrets{}
	s.AddHeader(r.Header, false)
	s.AddURL(r.URL)
	s.AddURL(upstream)
	return s
}
