package wire

import (
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSniff(t *testing.T) {
	cases := []struct {
		name, ctype, body string
		want              int
	}{
		{"event stream believed unread", "text/event-stream; charset=utf-8", "<html>", bodyEvents},
		{"JSON", "application/json", `{"choices":[]}`, bodyJSON},
		{"JSON after white space and a BOM", "", "\ufeff \r\n\t{}", bodyJSON},
		{"JSON labelled text/plain", "text/plain; charset=utf-8", `{"choices":[]}`, bodyJSON},
		{"stream labelled application/json", "application/json", "data: {}\n\n", bodyEvents},
		{"stream labelled text/plain", "text/plain", "data: {}\n\n", bodyEvents},
		{"stream opening with a comment", "", ": ping\n\n", bodyEvents},
		{"stream opening with an event field", "application/octet-stream", "event: message\ndata: {}\n\n", bodyEvents},
		{"bare data line", "", "data\n\n", bodyEvents},
		{"empty body", "", "", bodyEvents},
		{"empty JSON body", "application/json", "", bodyJSON},
		{"HTML", "text/html", "<!DOCTYPE html><html>", bodyOther},
		{"HTML whatever it opens with", "text/html; charset=utf-8", "{}", bodyOther},
		{"HTML without a type", "", "<html>", bodyOther},
		{"plain text", "text/plain", "Internal error", bodyOther},
		{"plain text that opens like a field name", "text/plain", "identity theft", bodyOther},
		{"short plain text", "", "OK", bodyOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per read: sniff must read on until it can tell.
			kind, rd := sniff(tc.ctype, iotest.OneByteReader(strings.NewReader(tc.body)))
			if kind != tc.want {
				t.Errorf("sniff(%q, %q) = %d; want %d", tc.ctype, tc.body, kind, tc.want)
			}
			if got, err := io.ReadAll(rd); string(got) != tc.body || err != nil {
				t.Errorf("sniff(%q, %q) left %q, %v; want every byte, nil", tc.ctype, tc.body, got, err)
			}
		})
	}
	t.Run("read error kept", func(t *testing.T) {
		boom := errors.New("boom")
		_, rd := sniff("", io.MultiReader(strings.NewReader("  "), iotest.ErrReader(boom)))
		if got, err := io.ReadAll(rd); string(got) != "  " || !errors.Is(err, boom) {
			t.Errorf("after a read error: %q, %v; want the bytes read, then boom", got, err)
		}
	})
}

func TestOrigin(t *testing.T) {
	same := [][2]string{
		{"http://h:80/a", "http://H/b?x=1"},
		{"https://h/a", "HTTPS://h:443/"},
		{"http://[::1]:8000/a", "http://[::1]:8000/b"},
	}
	differ := [][2]string{
		{"http://h:8000/", "http://h:8001/"},
		{"http://h/", "https://h/"},
		{"http://h/", "http://h.example/"},
		{"http://127.0.0.1:8000/", "http://localhost:8000/"},
	}
	for _, p := range same {
		a, _ := url.Parse(p[0])
		b, _ := url.Parse(p[1])
		if origin(a) != origin(b) {
			t.Errorf("origin(%s) = %s, origin(%s) = %s; want equal", p[0], origin(a), p[1], origin(b))
		}
	}
	for _, p := range differ {
		a, _ := url.Parse(p[0])
		b, _ := url.Parse(p[1])
		if origin(a) == origin(b) {
			t.Errorf("origin(%s) = origin(%s) = %s; want different", p[0], p[1], origin(a))
		}
	}
}

func TestJoinURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"http://127.0.0.1:8000", "/v1/completions", "http://127.0.0.1:8000/v1/completions"},
		{"http://127.0.0.1:8000/", "/v1/models", "http://127.0.0.1:8000/v1/models"},
		{"https://gw.example.com/openai/", "/v1/chat/completions", "https://gw.example.com/openai/v1/chat/completions"},
		// A query in the base URL (Azure's api-version) stays a query, after the path.
		{"https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21", "/chat/completions",
			"https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"},
		{"http://h?a=1", "/tokenize?b=2", "http://h/tokenize?a=1&b=2"},
	} {
		u, err := url.Parse(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if got := joinURL(u, tc.path); got != tc.want {
			t.Errorf("joinURL(%q, %q) = %q; want %q", tc.base, tc.path, got, tc.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"count":12,"max_model_len":4096,"tokens":[1,2]}`, 12, true},
		{`{"tokens":[1,2,3]}`, 3, true},
		{`{"tokens":[{"id":1,"piece":"a"},{"id":2,"piece":"b"}]}`, 2, true},
		{`{"tokens":[]}`, 0, true},
		{`[{"id":1,"text":"a","start":0,"stop":1}]`, 1, true},
		{`{"count":-1}`, 0, false},
		{`{"error":"no"}`, 0, false},
		{`<html>`, 0, false},
	} {
		n, err := parseCount([]byte(tc.in))
		if n != tc.want || (err == nil) != tc.ok {
			t.Errorf("parseCount(%s) = %d, %v; want %d, ok %v", tc.in, n, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{`{"count":3}`, `{"tokens":[1]}`, `[{"id":1}]`, `{"count":null,"tokens":null}`, `x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := parseCount(b); n < 0 || (err != nil && n != 0) {
			t.Errorf("parseCount(%q) = %d, %v; want a count ≥ 0, or 0 and an error", b, n, err)
		}
	})
}

// TestRunawayCap pins the cap: max(4 × max_tokens, max_tokens + 1024), or
// the configured (else default) cap without max_tokens.
func TestRunawayCap(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct{ max, cfg, want int }{
		{1, 0, 1025}, {256, 0, 1280}, {341, 0, 1365}, {342, 0, 1368}, {4096, 0, 16384},
		{0, 0, DefaultMaxResponseTokens}, {0, 77, 77}, {10, 77, 1034},
	} {
		c.cfg.MaxResponseTokens = tc.cfg
		if got := c.tokenCap(tc.max); got != int64(tc.want) {
			t.Errorf("tokenCap(max_tokens %d, MaxResponseTokens %d) = %d; want %d", tc.max, tc.cfg, got, tc.want)
		}
	}
}
