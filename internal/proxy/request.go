package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/goodput/goodput/internal/tokenize"
)

// Route labels: the two streamed LLM routes and everything else.
const (
	RouteCompletions = "/v1/completions"
	RouteChat        = "/v1/chat/completions"
	RouteOther       = "other"
)

// RouteOf maps a request path to its route label. A path ending in
// /chat/completions or /completions counts as that route whatever prefix a
// gateway puts in front (e.g. /openai/v1/chat/completions), so the label
// set stays fixed at three values.
func RouteOf(path string) string {
	path = strings.TrimRight(path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return RouteChat
	case strings.HasSuffix(path, "/completions"):
		return RouteCompletions
	}
	return RouteOther
}

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
	return ri
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
// the fact, so inspecting the body never delays sending it.
type captureBody struct {
	r        io.ReadCloser
	buf      []byte
	max      int
	overflow bool
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && !c.overflow {
		if len(c.buf)+n > c.max {
			c.overflow = true
			c.buf = nil
		} else {
			c.buf = append(c.buf, p[:n]...)
		}
	}
	return n, err
}

func (c *captureBody) Close() error { return c.r.Close() }

// secretHeaders are request headers whose values are credentials.
var secretHeaders = []string{
	"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key",
	"X-Goog-Api-Key", "Cookie", "Openai-Organization", "Openai-Project",
}

// secretsOf lists the credential values a request carries, so that any
// text the proxy keeps (records, logs) can be scrubbed of them even when an
// upstream echoes them back in an error message.
func secretsOf(r *http.Request) []string {
	var out []string
	for _, h := range secretHeaders {
		for _, v := range r.Header.Values(h) {
			out = appendSecret(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok { // "Bearer sk-…"
				out = appendSecret(out, strings.TrimSpace(tok))
			}
		}
	}
	if r.URL.RawQuery != "" {
		for k, vs := range r.URL.Query() {
			if secretParam(k) {
				for _, v := range vs {
					out = appendSecret(out, v)
				}
			}
		}
	}
	return out
}

// appendSecret adds v unless it is too short to scrub safely (a one- or
// two-letter value would blank ordinary words).
func appendSecret(out []string, v string) []string {
	if len(v) < 4 {
		return out
	}
	return append(out, v)
}

// secretParam reports whether a query parameter name looks like it carries
// a credential (key=, api_key=, access_token=, sig=, …).
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"key", "token", "secret", "sig", "auth", "pass", "cred"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// scrub replaces every secret in s with "[redacted]".
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// redactURL renders u without user info and with every query value
// replaced, for logs and records that name the upstream.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}
