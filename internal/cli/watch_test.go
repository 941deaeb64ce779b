package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
)

// keyEchoServer is a vendor that echoes the key it was sent everywhere it
// can: as the model id it lists (which becomes the model label) and in the
// error body of every completion.
func keyEchoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Path == "/v1/models" {
			fmt.Fprintf(w, `{"data":[{"id":%q,"owned_by":"someone"}]}`, auth)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Echo", auth)
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"error":{"message":"invalid key %s"}}`, auth)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWatchKeyNeverLeaks runs watch --once against two loopback vendors,
// one honest (the simulator) and one that echoes the key back, then greps
// every byte written — stdout, stderr, every records file — and the
// /metrics page for the key.
func TestWatchKeyNeverLeaks(t *testing.T) {
	const key = "sk-watch-LEAKCHECK-7f3a9c1e5b"
	honest, stopSim, err := simserve.Start(t.Context(), "127.0.0.1:0", sim.DefaultConfig(), simserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	evil := keyEchoServer(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`probe: {prompt_tokens: 16, max_tokens: 4}
targets:
  - name: honest
    base_url: %s
    api_key_env: WATCH_TEST_KEY
  - name: evil
    base_url: %s
    backend: openai
    api_key_env: WATCH_TEST_KEY
`, honest, evil.URL)
	if err := os.WriteFile(filepath.Join(dir, "watch.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Now: time.Now, Dir: dir,
		Getenv: func(k string) string {
			if k == "WATCH_TEST_KEY" {
				return key
			}
			return ""
		}}
	// As Main does: every stream passes the secrets filter.
	env.secrets = &redact.Secrets{}
	env.Stdout, env.Stderr = env.secrets.Writer(env.Stdout), env.secrets.Writer(env.Stderr)
	var page string
	o := &WatchOptions{served: func(url string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
	}}
	cmd := watchCmd(env, o)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs([]string{"--config", "watch.yaml", "--listen", "127.0.0.1:0", "--records-dir", "rec", "--once"})
	err = cmd.ExecuteContext(context.Background())
	var ge *runspec.GateError
	if !errors.As(err, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "evil: http_5xx" {
		t.Fatalf("watch = %v; want the gate to fail on evil's 5xx alone\nstderr: %s", err, errb.String())
	}
	texts := map[string]string{"stdout": out.String(), "stderr": errb.String(), "/metrics": page}
	filepath.WalkDir(filepath.Join(dir, "rec"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			texts[p] = string(b)
		}
		return nil
	})
	if len(texts) != 5 {
		t.Fatalf("outputs %v: want stdout, stderr, /metrics and two records files", keys(texts))
	}
	for name, text := range texts {
		if strings.Contains(text, "LEAKCHECK") {
			i := strings.Index(text, "LEAKCHECK")
			t.Errorf("%s holds the key: …%s…", name, text[max(i-60, 0):min(i+40, len(text))])
		}
	}
	// The test is only worth something if the echo reached the outputs.
	if !strings.Contains(page, `goodput_watch_probes_total{model="[redacted]",outcome="http_5xx",vendor="evil"} 1`) {
		t.Errorf("/metrics lacks evil's redacted model label:\n%s", page)
	}
	if !strings.Contains(texts[filepath.Join(dir, "rec", "evil.records.jsonl")], "invalid key [redacted]") {
		t.Errorf("evil's records hold no redacted echo")
	}
	if !strings.Contains(out.String(), "honest") || !strings.Contains(out.String(), " ok ") {
		t.Errorf("stdout:\n%s", out.String())
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestWatchConfigErrors: each mistake is one line naming file, line and
// field, with exit code 2, before any probe is sent.
func TestWatchConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         string
	}{
		{"unknown backend", "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    backend: tgi\n", nil,
			`goodput: w.yaml:4: targets[0].backend: "tgi": want openai`},
		{"key variable unset", "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    api_key_env: NOT_SET_ANYWHERE\n", nil,
			"goodput: w.yaml:4: targets[0].api_key_env: the environment variable NOT_SET_ANYWHERE is not set"},
		{"bad yaml", "targets:\n  - name: a\n   base_url: x\n", nil, "goodput: w.yaml:3: not valid YAML: "},
		{"bad field", "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    interval: soon\n", nil,
			`goodput: w.yaml:4: targets[0].interval: "soon" is not a duration`},
		{"no config", "", []string{"watch"}, "goodput: --config is required"},
		{"missing file", "", []string{"watch", "--config", "nope.yaml"}, "goodput: nope.yaml: no such file or directory"},
		{"once with duration", "targets: []\n", []string{"watch", "--config", "w.yaml", "--once", "--duration", "1m"}, "goodput: --once probes every target once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.config != "" {
				os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(tc.config), 0o644)
			}
			args := tc.args
			if args == nil {
				args = []string{"watch", "--config", "w.yaml", "--once"}
			}
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Now: time.Now, Dir: dir, Getenv: func(string) string { return "" }}
			code := Main(context.Background(), args, env)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if code != ExitUsage || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line starting %q", code, errb.String(), tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("stdout %q; want nothing", out.String())
			}
		})
	}
}
