package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReportReproducesFindings: re-summarising a run's records gives the
// findings (and the SLA sentence among them) that the run itself printed
// and saved.
func TestReportReproducesFindings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"sim overloaded", []string{"sim", "--num-prompts", "300", "--request-rate", "80", "--random-input-len", "3000", "--goodput", "ttft:500", "tpot:50"}},
		{"bench embedded", []string{"bench", "--num-prompts", "30", "--max-concurrency", "4", "--random-output-len", "24", "--goodput", "ttft:2000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(tc.args, "--quiet", "--save-result", "--result-filename", "run.json", "--records", filepath.Join(dir, "run.jsonl"))
			code, runOut, errOut := runReportCLI(t, dir, args...)
			if code != ExitOK {
				t.Fatalf("%s: exit %d\n%s", tc.args[0], code, errOut)
			}
			code, repOut, errOut := runReportCLI(t, dir, "report", "run.jsonl", "--goodput", strings.Join(sloOf(tc.args), " "), "--json", "rep.json")
			if code != ExitOK {
				t.Fatalf("report: exit %d\n%s", code, errOut)
			}
			run, rep := findingsOf(t, filepath.Join(dir, "run.json")), findingsOf(t, filepath.Join(dir, "rep.json"))
			if len(run) == 0 {
				t.Fatal("the run saved no findings; the test needs some")
			}
			if d := cmp.Diff(run, rep); d != "" {
				t.Errorf("report findings differ from the run's (-run +report):\n%s", d)
			}
			// The terminal shows them too, SLA sentence included.
			for _, want := range []string{"Findings", "SLO"} {
				if strings.Contains(runOut, want) && !strings.Contains(repOut, want) {
					t.Errorf("report output lacks %q, which the run printed:\n%s", want, repOut)
				}
			}
		})
	}
}

// sloOf returns the SLO words after --goodput in args.
func sloOf(args []string) []string {
	for i, a := range args {
		if a == "--goodput" {
			var out []string
			for _, w := range args[i+1:] {
				if strings.HasPrefix(w, "--") {
					break
				}
				out = append(out, w)
			}
			return out
		}
	}
	return nil
}

func findingsOf(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []any `json:"findings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.Findings
}
