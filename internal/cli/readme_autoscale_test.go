package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeAutoscaleExample runs the README's autoscaling example and
// checks it shows what it claims: under a load its two replicas cannot
// serve, the fleet scales up; it never scales down below where it started
// nor into overload (no failed request, no critical finding). The example
// used to run shorter than the cooldown and the provisioning delay and
// showed 2→2→1 replicas, then critical overload.
func TestReadmeAutoscaleExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.SplitSeq(string(readme), "\n") {
		if strings.HasPrefix(l, "goodput sim ") && strings.Contains(l, "--autoscale ") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatal("README.md has no goodput sim --autoscale example")
	}
	line, _, _ = strings.Cut(line, "#")
	args := append(strings.Fields(line)[1:], "--records", "none", "--quiet")
	r := runCLI(t, t.Context(), nil, args...)
	if r.code != ExitOK {
		t.Fatalf("%s: exit %d: %s", line, r.code, r.stderr)
	}
	if m := regexp.MustCompile(`(?m)^Failed requests:\s+(\d+)$`).FindStringSubmatch(r.stdout); m == nil || m[1] != "0" {
		t.Errorf("failed requests %v; want 0 (no overload):\n%s", m, r.stdout)
	}
	if strings.Contains(r.stdout, "[critical]") {
		t.Errorf("a critical finding:\n%s", r.stdout)
	}
	m := regexp.MustCompile(`(?m)^Autoscaler:\s+\S+ > \S+, (\d+)→(\d+)→(\d+) replicas`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no Autoscaler line:\n%s", r.stdout)
	}
	start, _ := strconv.Atoi(m[1])
	peak, _ := strconv.Atoi(m[2])
	final, _ := strconv.Atoi(m[3])
	if !(peak > start) || final < start {
		t.Errorf("replicas %d→%d→%d; want a scale-up and no scale-down below the start", start, peak, final)
	}
	// The timeline: active replicas never fall below the start.
	i := strings.Index(r.stdout, "\nTime ")
	if i < 0 {
		t.Fatalf("no timeline:\n%s", r.stdout)
	}
	rows := regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)$`).FindAllStringSubmatch(r.stdout[i:], -1)
	if len(rows) < 2 {
		t.Errorf("timeline rows %v; want the course of the replicas", rows)
	}
	for _, row := range rows {
		if a, _ := strconv.Atoi(row[2]); a < start {
			t.Errorf("at %s %d active replicas; want at least the %d it started with", row[1], a, start)
		}
	}
}
