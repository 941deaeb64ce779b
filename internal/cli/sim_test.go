package cli

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// The virtual-time run is deterministic for a seed, so its whole report is
// a golden file.
func TestSimGolden(t *testing.T) {
	args := []string{"sim", "--model", "llama-3.1-8b", "--gpu", "a100-80gb", "--request-rate", "4", "--num-prompts", "60",
		"--random-input-len", "1500", "--random-range-ratio", "0.5", "--random-output-len", "100", "--seed", "7",
		"--goodput", "ttft:500", "tpot:40", "--quiet"}
	dir := t.TempDir()
	r := runCLI(t, t.Context(), nil, append(args, "--records", filepath.Join(dir, "a.jsonl"))...)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "sim.golden", r.stdout)
	r2 := runCLI(t, t.Context(), nil, append(args, "--records", filepath.Join(dir, "b.jsonl"))...)
	if r2.stdout != r.stdout {
		t.Error("a second run with the same seed printed a different report")
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.jsonl"))
	if !bytes.Equal(a, b) || len(a) == 0 {
		t.Error("two runs with the same seed wrote different records")
	}
	_, recs := readRecords(t, filepath.Join(dir, "a.jsonl"))
	if len(recs) != 60 || recs[0].Server == nil {
		t.Errorf("records = %d (server timing %v); want 60 with the engine's own timing", len(recs), recs[0].Server)
	}
}

func TestSimUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu", "tpu"}, "--gpu"},
		{[]string{"--model", "gpt-9"}, "--model"},
		{[]string{"--max-num-seqs", "-3"}, "--max-num-seqs"},
		{[]string{"--scheduler", "magic"}, "--scheduler"},
		{[]string{"--request-rate", "-1"}, "--request-rate"},
	} {
		r := runCLI(t, t.Context(), nil, append([]string{"sim", "--quiet", "--records", "none"}, tc.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("sim %v: exit %d, stderr %q; want %d and one line naming %s", tc.args, r.code, r.stderr, ExitUsage, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServe(t *testing.T) {
	var errb syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"serve", "--port", "0", "--model", "qwen3-32b", "--gpu", "h200", "--tp", "2"},
			Env{Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now})
	}()
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	var url string
	// A minute is a sanity limit (a loaded machine under -race took over
	// the former 2 s to announce), not a claim about start-up time.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if url = re.FindString(errb.String()); url != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		cancel()
		t.Fatalf("no URL announced; stderr %q", errb.String())
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Qwen3-32B") {
		t.Errorf("/v1/models = %s; want the Qwen3-32B model", body)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("serve exited %d after Ctrl-C; want 0 (stderr %q)", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute after its context was cancelled")
	}
}
