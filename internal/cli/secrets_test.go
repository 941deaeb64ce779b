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
