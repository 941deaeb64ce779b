package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchFreshSeed: a bench against a server without --seed sends
// prompts of a fresh seed (from the run's start time), says so, and
// records it in the meta, so that a second run does not find the prefix
// cache warm from the first; --seed reproduces exactly, and the embedded
// simulator keeps the default seed, so its runs repeat.
func TestBenchFreshSeed(t *testing.T) {
	srv, _ := fakeServer(t, 200, 0, 0, 2)
	dir := t.TempDir()
	n := 0
	run := func(args ...string) (int64, string) {
		t.Helper()
		n++
		path := filepath.Join(dir, fmt.Sprintf("r%d.jsonl", n))
		r := runCLI(t, t.Context(), nil, append([]string{"bench", "--num-prompts", "3", "--calibrate", "off", "--records", path}, args...)...)
		if r.code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		meta, _ := readRecords(t, path)
		return meta.Seed, r.stderr
	}
	// runCLI's clock: 2026-11-29T10:00:00Z.
	want := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixNano() % 1_000_000_000
	if want <= 0 {
		want += 1_000_000_000
	}
	seed, stderr := run("--base-url", srv.URL)
	if seed != want {
		t.Errorf("seed %d; want the fresh %d", seed, want)
	}
	if !strings.Contains(stderr, "fresh for this run") || !strings.Contains(stderr, "--seed ") {
		t.Errorf("stderr %q; want a note of the fresh seed and how to repeat it", stderr)
	}
	if seed, stderr := run("--base-url", srv.URL, "--seed", "5"); seed != 5 || strings.Contains(stderr, "fresh") {
		t.Errorf("--seed 5: seed %d, stderr %q; want 5 and no note", seed, stderr)
	}
	if seed, stderr := run("--base-url", srv.URL, "--quiet"); seed != want || strings.Contains(stderr, "fresh") {
		t.Errorf("--quiet: seed %d, stderr %q; want %d, no note", seed, stderr, want)
	}
	if seed, _ := run(); seed != 0 {
		t.Errorf("embedded simulator: seed %d; want the default 0", seed)
	}
}
