package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer is a server that echoes the credentials it was sent in its
// error answers — in an HTTP error body and in a stream's error event — and
// answers every third request properly.
func echoServer(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		creds := fmt.Sprintf("auth=%q custom=%q", r.Header.Get("Authorization"), r.Header.Get("X-Custom"))
		if u, p, ok := r.BasicAuth(); ok {
			creds += " basic=" + u + ":" + p
		}
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprintf(w, `{"data":[{"id":"m","owned_by":"someone"}]}`)
			return
		case "/v1/completions":
		default:
			http.Error(w, `{"error":{"message":"no route; you sent `+creds+`"}}`, http.StatusNotFound)
			return
		}
		io.Copy(io.Discard, r.Body)
		switch n.Add(1) % 3 {
		case 0:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"rejected credentials %s"}}`, strings.ReplaceAll(creds, `"`, `\"`))
		case 1:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"mid-stream: %s\"}}\n\n", strings.ReplaceAll(creds, `"`, `\"`))
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			for range 3 {
				fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n")
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecretsNeverWritten greps everything a run writes — records, result
// JSON (with the detailed lists), HTML, the report's CSV and JSON, stdout
// and stderr — for each credential it was given, while the server echoes
// them back in its errors.
func TestSecretsNeverWritten(t *testing.T) {
	srv := echoServer(t)
	const apiKey, header, password = "sk-topsecret-123456", "hdrsecret42", "urlpass1234"
	base := strings.Replace(srv.URL, "http://", "http://alice:"+password+"@", 1)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Now: time.Now, Dir: dir,
		Getenv: func(k string) string {
			if k == "OPENAI_API_KEY" {
				return apiKey
			}
			return ""
		}}
	code := Main(context.Background(), []string{"bench", "--base-url", base, "--header", "X-Custom=" + header, "--model", "m",
		"--num-prompts", "12", "--calibrate", "off", "--quiet", "--save-result", "--save-detailed",
		"--result-filename", "r.json", "--html", filepath.Join(dir, "r.html")}, env)
	if code != ExitOK {
		t.Fatalf("bench exit %d: %s", code, errb.String())
	}
	for _, args := range [][]string{
		{"report", "r.records.jsonl", "--json", "rep.json", "--csv", "csv", "--html", "rep.html"},
		{"report", "r.records.jsonl", "--per-request", "jsonl"},
	} {
		if code := Main(context.Background(), args, env); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
	}
	texts := map[string]string{"stdout": out.String(), "stderr": errb.String()}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			texts[p] = string(b)
		}
		return nil
	})
	if len(texts) < 8 {
		t.Fatalf("only %d outputs to check: %v", len(texts), texts)
	}
	for name, text := range texts {
		for _, secret := range []string{apiKey, header, password} {
			if strings.Contains(text, secret) {
				i := strings.Index(text, secret)
				t.Errorf("%s holds the secret %q: …%s…", name, secret, text[max(i-60, 0):min(i+40, len(text))])
			}
		}
	}
	for _, p := range []string{"r.records.jsonl", "r.json"} {
		if text := texts[filepath.Join(dir, p)]; !strings.Contains(text, "rejected credentials") || !strings.Contains(text, "[redacted]") {
			t.Errorf("%s holds no redacted echo: the test needs the server's words to reach it", p)
		}
	}
}

// protocolEchoServer echoes the key it was sent (Authorization or
// x-api-key) in its errors, in the shapes of the Messages and Responses
// APIs: an HTTP error body, an error event mid-stream, and every third
// request a proper answer.
func protocolEchoServer(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		creds := strings.ReplaceAll(fmt.Sprintf("auth=%q key=%q", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")), `"`, `'`)
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m","owned_by":"someone"}]}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
		k := n.Add(1) % 3
		if k == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"bad key %s"}}`, creds)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch r.URL.Path {
		case "/v1/messages":
			ev("message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}`)
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
			if k == 1 {
				ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"mid-stream: `+creds+`"}}`)
				return
			}
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`)
			ev("message_stop", `{"type":"message_stop"}`)
		case "/v1/responses":
			ev("response.created", `{"type":"response.created","response":{"id":"resp_1"}}`)
			ev("response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"hi"}`)
			if k == 1 {
				ev("error", `{"type":"error","code":"server_error","message":"mid-stream: `+creds+`"}`)
				return
			}
			ev("response.completed", `{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"output_tokens":1}}}`)
		default:
			http.Error(w, "no route: "+creds, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecretsNeverWrittenProtocols: the Messages and Responses backends
// send the key their own way (x-api-key from ANTHROPIC_API_KEY; a bearer
// token), and no output holds it though the server echoes it back.
func TestSecretsNeverWrittenProtocols(t *testing.T) {
	srv := protocolEchoServer(t)
	for _, tt := range []struct{ backend, env string }{
		{"anthropic-messages", "ANTHROPIC_API_KEY"}, {"openai-responses", "OPENAI_API_KEY"},
	} {
		t.Run(tt.backend, func(t *testing.T) {
			const apiKey = "sk-ant-topsecret-987654"
			dir := t.TempDir()
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Now: time.Now, Dir: dir,
				Getenv: func(k string) string {
					if k == tt.env {
						return apiKey
					}
					return ""
				}}
			code := Main(context.Background(), []string{"bench", "--base-url", srv.URL, "--backend", tt.backend, "--model", "m",
				"--num-prompts", "12", "--calibrate", "off", "--quiet", "--save-result", "--save-detailed",
				"--result-filename", "r.json", "--html", filepath.Join(dir, "r.html")}, env)
			if code != ExitOK {
				t.Fatalf("bench exit %d: %s", code, errb.String())
			}
			texts := map[string]string{"stdout": out.String(), "stderr": errb.String()}
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					texts[p] = string(b)
				}
				return nil
			})
			for name, text := range texts {
				if i := strings.Index(text, apiKey); i >= 0 {
					t.Errorf("%s holds the key: …%s…", name, text[max(i-60, 0):min(i+40, len(text))])
				}
			}
			rec := texts[filepath.Join(dir, "r.records.jsonl")]
			if !strings.Contains(rec, "[redacted]") || !strings.Contains(rec, `"error_class":"stream_error"`) || !strings.Contains(rec, `"error_class":"http_4xx"`) {
				t.Errorf("records hold no redacted echo of both failures: the test needs the server's words to reach them:\n%s", rec)
			}
		})
	}
}
