package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/redact"
)

func TestInspect(t *testing.T) {
	tests := []struct {
		name, body string
		want       reqInfo
	}{
		// Approx: "hello" 1 token, "world" 1; "tokens" 2 (5 letters per token).
		{"completions string", `{"model":"m","stream":true,"prompt":"hello world"}`, reqInfo{ok: true, model: "m", stream: true, promptTokens: 2}},
		{"token ids", `{"model":"m","prompt":[1,2,3,4]}`, reqInfo{ok: true, model: "m", promptTokens: 4}},
		{"batch of strings", `{"prompt":["hello","tokens"]}`, reqInfo{ok: true, promptTokens: 3}},
		{"batch of token ids", `{"prompt":[[1,2],[3]]}`, reqInfo{ok: true, promptTokens: 3}},
		{"chat parts", `{"messages":[{"role":"system","content":"hello"},{"role":"user","content":[{"type":"text","text":"world tokens"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, reqInfo{ok: true, promptTokens: 4}},
		{"include usage", `{"stream":true,"stream_options":{"include_usage":true}}`, reqInfo{ok: true, stream: true, includeUsage: true}},
		{"not json", `stream=true`, reqInfo{}},
		{"wrong types", `{"stream":"yes"}`, reqInfo{}},
		{"array", `[1]`, reqInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inspect([]byte(tt.body)); got != tt.want {
				t.Errorf("inspect(%s) = %+v; want %+v", tt.body, got, tt.want)
			}
		})
	}
}

func TestInjectUsageBody(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]any // nil: not rewritten
	}{
		{"adds", `{"stream":true,"model":"m"}`, map[string]any{"stream": true, "model": "m", "stream_options": map[string]any{"include_usage": true}}},
		{"keeps others", `{"stream":true,"stream_options":{"continuous_usage_stats":true}}`, map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}},
		{"null options", `{"stream":true,"stream_options":null}`, map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{"keeps html", `{"stream":true,"prompt":"<a>&"}`, map[string]any{"stream": true, "prompt": "<a>&", "stream_options": map[string]any{"include_usage": true}}},
		{"not streamed", `{"stream":false}`, nil},
		{"no stream", `{"model":"m"}`, nil},
		{"options not an object", `{"stream":true,"stream_options":3}`, nil},
		{"not json", `{`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := injectUsage([]byte(tt.in))
			if tt.want == nil {
				if err == nil {
					t.Errorf("injectUsage(%s) = %s; want errNoInject", tt.in, out)
				}
				return
			}
			var got map[string]any
			if err != nil || json.Unmarshal(out, &got) != nil {
				t.Fatalf("injectUsage(%s) = %s, %v; want valid JSON", tt.in, out, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("injectUsage(%s) (-want +got):\n%s", tt.in, diff)
			}
			if bytes.Contains([]byte(tt.in), []byte("<a>")) && !bytes.Contains(out, []byte("<a>&")) {
				t.Errorf("injectUsage(%s) = %s; want HTML characters unescaped", tt.in, out)
			}
		})
	}
}

func TestSecretsAndScrub(t *testing.T) {
	r, _ := http.NewRequest("POST", "http://x/v1/completions?api_key=qk-123456&model=m&sig=ab", nil)
	r.Header.Set("Authorization", "Bearer sk-abcdef")
	r.Header.Set("api-key", "azure-key")
	r.Header.Set("X-Other", "visible-value")
	up, _ := url.Parse("https://user:pw-secret@api.example.com/v1?key=abc123&x=1")
	s := secretsOf(r, up)
	// "ab" is too short to scrub; X-Other is not a credential header.
	msg := "invalid key sk-abcdef (azure-key) q qk-123456 up pw-secret abc123 model m visible-value ab"
	if got, want := s.String(msg), "invalid key [redacted] ([redacted]) q [redacted] up [redacted] [redacted] model m visible-value ab"; got != want {
		t.Errorf("scrub(%q) = %q; want %q", msg, got, want)
	}
	if got, want := redact.URL(up), "https://api.example.com/v1?key=redacted&x=1"; got != want {
		t.Errorf("redact.URL = %q; want %q", got, want)
	}
	line := `Post "http://h/v1?key=SECRET": Authorization: Bearer tok123 sk-proj-abcdefgh`
	if got, want := redact.Generic(line), `Post "http://h/v1[redacted]": Authorization: Bearer [redacted] [redacted]`; got != want {
		t.Errorf("redact.Generic(%q) = %q; want %q", line, got, want)
	}
}

func TestRequestID(t *testing.T) {
	for _, c := range []struct {
		hdr  string
		want string
	}{{"abc-1", "abc-1"}, {"", "proxy-7"}, {"has space", "proxy-7"}, {string(bytes.Repeat([]byte("a"), 129)), "proxy-7"}} {
		if got := requestID(c.hdr, 7); got != c.want {
			t.Errorf("requestID(%q) = %q; want %q", c.hdr, got, c.want)
		}
	}
}

// FuzzInspect checks the request readers never panic, and that a rewritten
// body keeps every member and asks for usage.
func FuzzInspect(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"prompt":"hello","stream_options":{"x":1}}`))
	f.Add([]byte(`{"messages":[{"content":[{"text":"a"}]}],"stream":true}`))
	f.Add([]byte(`{"prompt":[[1],[2,3]],"stream":true,"stream_options":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ri := inspect(body)
		if ri.promptTokens < 0 {
			t.Errorf("inspect(%q) prompt tokens = %d", body, ri.promptTokens)
		}
		out, err := injectUsage(body)
		if err != nil {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil || json.Unmarshal(out, &after) != nil {
			t.Fatalf("injectUsage(%q) = %q: not both JSON objects", body, out)
		}
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if json.Unmarshal(after["stream_options"], &so) != nil || !so.IncludeUsage {
			t.Errorf("injectUsage(%q) = %q; want include_usage true", body, out)
		}
		for k, v := range before {
			if k == "stream_options" {
				continue
			}
			var a, b any
			if json.Unmarshal(v, &a) != nil || json.Unmarshal(after[k], &b) != nil || !cmp.Equal(a, b) {
				t.Errorf("injectUsage(%q) changed member %q: %s → %s", body, k, v, after[k])
			}
		}
	})
}
