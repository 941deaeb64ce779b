package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestRepeatedInterruptKeepsSummary runs goodput as a process (the test
// binary as "goodput", see TestMain) and interrupts a bench twice, as GNU
// timeout does, the second time once the first has cancelled the
// requests in flight: the summary, the result file and the records' end
// line must all be written, and the exit code says interrupted.
func TestRepeatedInterruptKeepsSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process")
	}
	held := make(chan struct{})      // a request is being held open
	cancelled := make(chan struct{}) // the client gave it up
	var hits atomic.Int64
	var holdOnce, cancelOnce sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			http.NotFound(w, r) // no model list, metrics or tokenizer
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"a "}]}`+"\n\n")
		w.(http.Flusher).Flush()
		if strings.HasPrefix(r.Header.Get("X-Request-Id"), "goodput-probe-") || hits.Add(1) <= 5 {
			fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"b","finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		holdOnce.Do(func() { close(held) })
		<-r.Context().Done()
		cancelOnce.Do(func() { close(cancelled) })
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cmd := exec.Command("goodput", "bench", "--base-url", srv.URL, "--model", "m", "--duration", "1h", "--request-rate", "100",
		"--records", "r.jsonl", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-held
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-cancelled
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != ExitInterrupted {
		t.Fatalf("goodput bench interrupted twice: exit %d (%v); want %d\nstderr:\n%s", code, err, ExitInterrupted, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Serving Benchmark Result") {
		t.Errorf("no summary after two interrupts; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("no result after two interrupts: %v", err)
	}
	recs, err := os.ReadFile(filepath.Join(dir, "r.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(recs)), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, `{"end":`) {
		t.Errorf("records' last line = %.80s; want the end line", last)
	}
}

// TestInterruptContext interrupts this very process: the first SIGINT
// cancels the context, the second is absorbed with a note (without the
// fix it killed the test binary).
func TestInterruptContext(t *testing.T) {
	noted := make(chan string, 1)
	ctx, stop := InterruptContext(writerFunc(func(p []byte) (int, error) {
		noted <- string(p)
		return len(p), nil
	}))
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if got := <-noted; !strings.Contains(got, "interrupt once more") {
		t.Errorf("note on the second interrupt = %q; want it to say how to quit", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
