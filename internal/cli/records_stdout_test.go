package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordsToStdout runs bench as a Kubernetes shard pod does, records
// to /dev/stdout (a pipe here, as in a pod): stdout holds the records and
// nothing else, so reading them back needs no --skip-bad-lines, and the
// run succeeds (syncing a pipe once failed it). Its summary on stderr is
// marked line by line as goodput's own, so a log that merges the two
// streams (kubectl logs) reads back without --skip-bad-lines too.
func TestRecordsToStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process")
	}
	cmd := exec.Command("goodput", "bench", "--records", "/dev/stdout", "--overwrite", "--quiet", "--num-prompts", "4",
		"--random-input-len", "16", "--random-output-len", "4")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench --records /dev/stdout: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "{") {
			t.Fatalf("stdout line %d is not a record: %q", i+1, l)
		}
	}
	if !strings.HasPrefix(lines[len(lines)-1], `{"end":`) || !strings.Contains(stderr.String(), "Serving Benchmark Result") {
		t.Errorf("want the end line last on stdout and the summary on stderr; stderr:\n%s", stderr.String())
	}
	path := filepath.Join(cmd.Dir, "pod.log")
	if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := exec.Command("goodput", "report", path)
	if out, err := r.CombinedOutput(); err != nil || !strings.Contains(string(out), "Successful requests:") {
		t.Errorf("goodput report on the records: %v\n%s", err, out)
	}
	for i, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !strings.HasPrefix(l, "goodput: ") {
			t.Fatalf("stderr line %d is not marked as goodput's own: %q", i+1, l)
		}
	}
	// The log as kubectl logs gives it: the summary's lines amid the
	// records (here after the first record).
	merged := append([]byte(lines[0]+"\n"), stderr.Bytes()...)
	merged = append(merged, strings.Join(lines[1:], "\n")+"\n"...)
	mpath := filepath.Join(cmd.Dir, "merged.log")
	if err := os.WriteFile(mpath, merged, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("goodput", "report", mpath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Successful requests:") || strings.Contains(string(out), "bad line") ||
		!strings.Contains(string(out), "of goodput's own notes and summary") {
		t.Errorf("goodput report on a log merging stderr: %v; want it read, goodput's own lines skipped and counted, none bad:\n%s", err, out)
	}
}
