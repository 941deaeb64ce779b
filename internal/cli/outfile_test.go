package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// TestRunsInTheSameSecondKeepTheirOwnFiles: default names have one-second
// resolution; runs started in the same second (here the same instant, at
// once) must still write separate, whole records and result files.
func TestRunsInTheSameSecondKeepTheirOwnFiles(t *testing.T) {
	dir := t.TempDir()
	const runs, n = 4, 50
	var wg sync.WaitGroup
	codes := make([]int, runs)
	for i := range runs {
		wg.Go(func() {
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
				Now: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }, Dir: dir}
			codes[i] = Main(context.Background(), []string{"sim", "--num-prompts", "50", "--quiet", "--save-result", "--result-dir", dir}, env)
			if codes[i] != ExitOK {
				t.Errorf("run %d: exit %d: %s", i, codes[i], errb.String())
			}
		})
	}
	wg.Wait()
	recs, _ := filepath.Glob(filepath.Join(dir, "*.records.jsonl"))
	results, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(recs)
	if len(recs) != runs || len(results) != runs {
		t.Fatalf("%d records files and %d results for %d runs: %v %v", len(recs), len(results), runs, recs, results)
	}
	for _, p := range recs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, rs, warns, err := runlog.ReadAll(f, p)
		f.Close()
		if err != nil || len(rs) != n || len(warns) != 0 {
			t.Errorf("%s: %d records, warnings %v, err %v; want %d whole records", filepath.Base(p), len(rs), warns, err, n)
		}
	}
}
