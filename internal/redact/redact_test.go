package redact

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSecretsString(t *testing.T) {
	var s Secrets
	s.Add("Bearer sk-abcdef123456")
	s.Add("ab") // too short: ignored
	s.AddHeader(http.Header{"X-Custom": {"custom-value-9"}, "Accept": {"text/plain"}}, true)
	s.AddHeader(http.Header{"X-Api-Key": {"xkey-7777"}, "Accept": {"application/json-only"}}, false)
	u, _ := url.Parse("http://user1:pa%22ss@host:8000/v1?api-key=K123456&model=m")
	s.AddURL(u)
	for _, tc := range []struct{ in, want string }{
		{"auth failed for Bearer sk-abcdef123456", "auth failed for [redacted]"},
		{`{"error":"bad key sk-abcdef123456"}`, `{"error":"bad key [redacted]"}`},
		{"header was custom-value-9", "header was [redacted]"},
		{"x-api-key: xkey-7777", "x-api-key: [redacted]"},
		{"Accept: application/json-only", "Accept: application/json-only"}, // not a credential header, not all
		{"Accept: text/plain", "Accept: [redacted]"},                       // a user-configured header
		{"password pa\"ss, user user1", "password [redacted], user [redacted]"},
		{`json "pa\"ss"`, `json "[redacted]"`},
		{`html pa&#34;ss`, `html [redacted]`},
		{"GET /v1?api-key=K123456", "GET /v1?api-key=[redacted]"},
		{"ab is fine", "ab is fine"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriter(t *testing.T) {
	var s Secrets
	s.Add("topsecret")
	var buf bytes.Buffer
	w := s.Writer(&buf)
	n, err := fmt.Fprintf(w, "key=%s!\n", "topsecret")
	if err != nil || n != len("key=topsecret!\n") {
		t.Errorf("Fprintf = %d, %v; want %d, nil", n, err, len("key=topsecret!\n"))
	}
	if buf.String() != "key=[redacted]!\n" {
		t.Errorf("wrote %q", buf.String())
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://user:PASS@host:8000/v1/?api-key=K&model=m", "http://host:8000/v1/?api-key=redacted&model=m"},
		{"https://api.example.com/v1", "https://api.example.com/v1"},
		{"http://h/?access_token=abc&sig=x", "http://h/?access_token=redacted&sig=redacted"},
	} {
		if got := URLString(tc.in); got != tc.want {
			t.Errorf("URLString(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	// Text that is not a URL is still cut at its query and user info.
	if got := URLString("http://u:p@h:1/%zz?key=1"); strings.Contains(got, "p@") || strings.Contains(got, "key") {
		t.Errorf("URLString(unparsable) = %q; leaks user info or query", got)
	}
}

func TestGeneric(t *testing.T) {
	in := `proxy error: Authorization: Bearer abc.def-ghi "sk-live12345678" GET http://h/x?key=v done`
	got := Generic(in)
	for _, leak := range []string{"abc.def-ghi", "sk-live12345678", "key=v"} {
		if strings.Contains(got, leak) {
			t.Errorf("Generic left %q in %q", leak, got)
		}
	}
}

func FuzzSecretsString(f *testing.F) {
	f.Add("sk-abcdef", "error: sk-abcdef sk-abcdef")
	f.Add("Bearer x y z", "Bearer x y z")
	f.Fuzz(func(t *testing.T, secret, text string) {
		var s Secrets
		s.Add(secret)
		got := s.String(text)
		// Every form the set holds is gone from the output.
		for _, v := range s.vals {
			if strings.Contains(got, string(v)) && !strings.Contains(Mask, string(v)) {
				t.Fatalf("String(%q) with secret %q = %q: still holds %q", text, secret, got, v)
			}
		}
	})
}
