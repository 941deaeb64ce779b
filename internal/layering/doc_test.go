package layering

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// floorsMarker heads docs/architecture.md's list of the floors: the fenced
// block after the marker line, one floor per line, bottom up.
const floorsMarker = "<!-- floors: checked by internal/layering's TestArchitectureListsFloors -->"

// TestArchitectureListsFloors keeps docs/architecture.md's floor list the
// same as the floors this package enforces, so the doc cannot drift.
func TestArchitectureListsFloors(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := docFloors(floors)
	got, ok := floorsInDoc(string(b))
	if !ok {
		t.Fatalf("docs/architecture.md has no floor list after %q; it should read:\n%s", floorsMarker, want)
	}
	if got != want {
		t.Errorf("docs/architecture.md's floor list differs from internal/layering's floors; it should read:\n%s\ngot:\n%s", want, got)
	}
}

// docFloors writes fs as the doc lists them: "N  pkg pkg …", each
// package without the internal/ prefix.
func docFloors(fs [][]string) string {
	var sb strings.Builder
	for i, f := range fs {
		names := make([]string, len(f))
		for j, p := range f {
			names[j] = strings.TrimPrefix(p, "internal/")
		}
		fmt.Fprintf(&sb, "%2d  %s\n", i, strings.Join(names, " "))
	}
	return sb.String()
}

// floorsInDoc is the text of the fenced block after the marker.
func floorsInDoc(doc string) (string, bool) {
	_, rest, ok := strings.Cut(doc, floorsMarker)
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "```\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "```")
	return block, ok
}

// TestDocFloorsFormat pins the doc's format, so the check above reads
// what it should.
func TestDocFloorsFormat(t *testing.T) {
	got := docFloors([][]string{{"internal/sse", "internal/runlog"}, {"cmd/goodput"}})
	if want := " 0  sse runlog\n 1  cmd/goodput\n"; got != want {
		t.Errorf("docFloors = %q, want %q", got, want)
	}
	if got, ok := floorsInDoc("x\n" + floorsMarker + "\n```\n 0  sse\n```\n"); !ok || got != " 0  sse\n" {
		t.Errorf("floorsInDoc = %q, %v", got, ok)
	}
}
