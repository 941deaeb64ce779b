// Package redact keeps credentials out of everything goodput writes or
// prints: the secret values a run was configured with (API keys, header
// values, URL user info and credential-like query parameters) are replaced
// wherever they appear — in a server's error text that echoes them, in a
// URL, in a line of a records file. The bench client and the proxy share
// it.
//
// A Secrets is safe for concurrent use once filled; a Writer is as safe as
// the writer it wraps.
package redact

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask is what a secret is replaced with.
const Mask = "[redacted]"

// minLen is the shortest value treated as a secret: blanking one- to
// three-letter values would mangle ordinary words.
const minLen = 4

// Headers are request headers whose values are credentials.
var Headers = []string{
	"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key",
	"X-Goog-Api-Key", "Cookie", "Openai-Organization", "Openai-Project",
}

// Secrets is a set of values to keep out of output. The zero value is an
// empty set.
type Secrets struct {
	mu   sync.RWMutex
	vals [][]byte // longest first, so a secret containing another goes whole
}

// Add records v as a secret, and the token of a "Scheme token" value
// ("Bearer sk-…") on its own; values under four bytes are ignored.
func (s *Secrets) Add(v string) {
	v = strings.TrimSpace(v)
	if _, tok, ok := strings.Cut(v, " "); ok {
		s.add(strings.TrimSpace(tok))
	}
	s.add(v)
}

func (s *Secrets) add(v string) {
	if len(v) < minLen {
		return
	}
	forms := []string{v}
	// As it appears inside a JSON string, a URL and an HTML page.
	if b, err := json.Marshal(v); err == nil {
		if q := string(b[1 : len(b)-1]); q != v {
			forms = append(forms, q)
		}
	}
	if e := url.QueryEscape(v); e != v {
		forms = append(forms, e)
	}
	if e := html.EscapeString(v); e != v {
		forms = append(forms, e) // as an HTML report shows it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range forms {
		if !slices.ContainsFunc(s.vals, func(b []byte) bool { return string(b) == f }) {
			s.vals = append(s.vals, []byte(f))
		}
	}
	slices.SortStableFunc(s.vals, func(a, b []byte) int { return len(b) - len(a) })
}

// AddHeader records the values of h that are credentials: every value of a
// credential header (Headers), and every value when all is set (headers a
// user configured, whose meaning goodput cannot know).
func (s *Secrets) AddHeader(h http.Header, all bool) {
	for k, vs := range h {
		if all || slices.ContainsFunc(Headers, func(n string) bool { return strings.EqualFold(n, k) }) {
			for _, v := range vs {
				s.Add(v)
			}
		}
	}
}

// AddURL records the credentials a URL carries: its user name and password
// and the values of credential-like query parameters (see Param).
func (s *Secrets) AddURL(u *url.URL) {
	if u == nil {
		return
	}
	if u.User != nil {
		s.Add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			s.Add(p)
		}
	}
	for k, vs := range u.Query() {
		if Param(k) {
			for _, v := range vs {
				s.Add(v)
			}
		}
	}
}

// Empty reports whether there is nothing to redact.
func (s *Secrets) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals) == 0
}

// String returns text with every secret replaced by Mask.
func (s *Secrets) String(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.vals {
		if strings.Contains(text, string(v)) {
			text = strings.ReplaceAll(text, string(v), Mask)
		}
	}
	return text
}

// Bytes returns b with every secret replaced by Mask; b itself is returned
// (not copied) when it holds none.
func (s *Secrets) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.vals {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte(Mask))
		}
	}
	return b
}

// Writer returns w wrapped so that every Write has the secrets replaced. A
// secret split across two writes is not caught: wrap writers whose callers
// write whole lines or documents (fmt.Fprintf, a records line, a JSON
// file). Write reports len(p) written on success, as io.Writer requires,
// even when the replacement changed the length.
func (s *Secrets) Writer(w io.Writer) io.Writer { return &writer{s: s, w: w} }

type writer struct {
	s *Secrets
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.s.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Param reports whether a query parameter name looks like it carries a
// credential (key=, api_key=, access_token=, sig=, …).
func Param(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"key", "token", "secret", "sig", "auth", "pass", "cred"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// URL renders u without user info and with the value of every
// credential-like query parameter (Param) replaced, for logs, records and
// reports that name a server.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			if Param(k) {
				q[k] = []string{"redacted"}
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// URLString is URL of a URL in text form; text that does not parse is cut
// at its query and stripped of anything before an "@" in its authority.
func URLString(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return URL(u)
	}
	raw, _, _ = strings.Cut(raw, "?")
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
		if path != "" {
			host += "/" + path
		}
		return scheme + "://" + host
	}
	return raw
}

// generic matches credentials in text goodput did not build and whose
// secrets it was not told (a library's log line): bearer tokens, sk- keys
// and URL query strings.
var generic = regexp.MustCompile(`(?i)(bearer\s+)[^\s"',]+|\bsk-[A-Za-z0-9_\-]{6,}|\?[^\s"']+`)

// Generic blanks what looks like a credential in text: bearer tokens, sk-
// keys, URL query strings.
func Generic(text string) string {
	return generic.ReplaceAllString(text, "${1}"+Mask)
}
