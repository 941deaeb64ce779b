package servermetrics

import (
	"os"
	"strings"
	"testing"
)

// TestDocListsVocabulary keeps docs/server-metrics.md in step with the
// mapping: every canonical name and every source family must appear.
func TestDocListsVocabulary(t *testing.T) {
	doc, err := os.ReadFile("../../docs/server-metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Vocabulary() {
		if !strings.Contains(string(doc), "`"+string(d.Name)+"`") {
			t.Errorf("docs/server-metrics.md does not list %q", d.Name)
		}
		for _, srcs := range d.Sources {
			for _, s := range srcs {
				if !strings.Contains(string(doc), "`"+s.Family+"`") {
					t.Errorf("docs/server-metrics.md does not list %q (source of %s)", s.Family, d.Name)
				}
			}
		}
	}
}
