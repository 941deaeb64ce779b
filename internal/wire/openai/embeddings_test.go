package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/workload"
)

func TestEmbeddingsDecoder(t *testing.T) {
	for _, tt := range []struct {
		name          string
		body          string
		inputs, tok   int
		err, wantFail bool
	}{
		{"two vectors", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,3e-2]},{"index":1,"embedding":"AAAA"}],"model":"m","usage":{"prompt_tokens":12,"total_tokens":12}}`, 2, 12, false, false},
		{"no usage", `{"data":[{"embedding":[1]}]}`, 1, 0, false, false},
		{"error object", `{"error":{"message":"model not found","type":"invalid_request_error"}}`, 0, 0, false, true},
		{"not json", `{"data":[`, 0, 0, true, false},
	} {
		var d EmbeddingsDecoder
		var c wire.Chunk
		err := d.DecodeResponse([]byte(tt.body), &c)
		if (err != nil) != tt.err {
			t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.err)
			continue
		}
		if c.Inputs != tt.inputs || c.Usage.PromptTokens != tt.tok || (len(c.ErrMessage) > 0) != tt.wantFail {
			t.Errorf("%s: inputs %d tokens %d error %q; want %d, %d, failure %v", tt.name, c.Inputs, c.Usage.PromptTokens, c.ErrMessage, tt.inputs, tt.tok, tt.wantFail)
		}
	}
}

// FuzzEmbeddingsDecoder checks that no body panics the decoder and that
// it agrees with encoding/json on which bodies are JSON.
func FuzzEmbeddingsDecoder(f *testing.F) {
	f.Add([]byte(`{"data":[{"embedding":[0.1]}],"usage":{"prompt_tokens":3}}`))
	f.Add([]byte(`{"error":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d EmbeddingsDecoder
		var c wire.Chunk
		err := d.DecodeResponse(b, &c)
		isObject := json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
		if (err == nil) != isObject {
			t.Fatalf("decoder error %v, encoding/json disagrees", err)
		}
		if c.Inputs < 0 || c.Usage.PromptTokens < 0 {
			t.Fatalf("negative counts %+v", c)
		}
	})
}

// TestEmbeddingsClient measures one embeddings request end to end: the
// body sent, the record's inputs, prompt tokens and latency, no TTFT.
func TestEmbeddingsClient(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "wrong path or key", 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"embedding":[0.5,0.5]}],"usage":{"prompt_tokens":7,"total_tokens":7}}`)
	}))
	defer srv.Close()
	c, err := NewClient(wire.Config{BaseURL: srv.URL, Protocol: Embeddings, Model: "e5", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	call, err := c.Prepare("r1", workload.Request{Prompt: "hello world"})
	if err != nil {
		t.Fatal(err)
	}
	var rec runlog.Record
	call(context.Background(), &rec)
	if !rec.OK() || rec.Embeddings != 1 || rec.PromptTokens != 7 || rec.TokenSource != runlog.TokensUsage {
		t.Fatalf("record %+v: want OK, 1 embedding, 7 prompt tokens from usage", rec)
	}
	if _, ok := rec.TTFT(); ok {
		t.Error("an embeddings record has a TTFT")
	}
	if d, ok := rec.E2E(); !ok || d <= 0 {
		t.Errorf("E2E = %v, %v; want the answer's latency", d, ok)
	}
	if got["input"] != "hello world" || got["model"] != "e5" || got["stream"] != nil {
		t.Errorf("body %v: want input, model and no stream member", got)
	}
}

// TestRateLimitedRecord: a 429 is class http_429 with the wait its
// headers advertised.
func TestRateLimitedRecord(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
	}))
	defer srv.Close()
	c, err := NewClient(wire.Config{BaseURL: srv.URL, Protocol: ChatCompletions, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Try(context.Background(), "r")
	if rec.ErrorClass != runlog.ErrHTTP429 || rec.RetryAfterNs != int64(3*time.Second) || rec.Error != "HTTP 429: slow down" {
		t.Fatalf("record class %q wait %d error %q; want http_429, 3 s, the message", rec.ErrorClass, rec.RetryAfterNs, rec.Error)
	}
}
