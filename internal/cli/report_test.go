package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// writeRecords writes a records file of n requests, TTFT base+i%10 ms and
// 4 tokens 10 ms apart, for model.
func writeRecords(t *testing.T, path, model string, n int, base int64, rate float64) {
	t.Helper()
	ms := int64(time.Millisecond)
	meta := &runlog.Meta{Tool: "goodput", Command: "bench", Model: model, Backend: "openai", Endpoint: "/v1/completions",
		Dataset: "random", Levels: []runlog.Level{{RequestRate: rate, Burstiness: 1, NumPrompts: n}}}
	b, err := runlog.AppendMeta(nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		sent := int64(i) * 100 * ms
		first := sent + (base+int64(i%10))*ms
		r := runlog.Record{ID: fmt.Sprint("r", i), Sent: sent, Intended: sent, PromptTokens: 100, CompletionTokens: 4, Status: 200}
		for k := range 4 {
			r.Chunks = append(r.Chunks, runlog.Chunk{T: first + int64(k)*10*ms, Tokens: 1, Visible: true})
		}
		r.End = r.Chunks[3].T
		b = runlog.AppendRecord(b, &r)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runReportCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: func() time.Time { return time.Unix(0, 0) }, Dir: dir}
	code := Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

func TestReportAndCompareCommands(t *testing.T) {
	dir := t.TempDir()
	writeRecords(t, filepath.Join(dir, "a.jsonl"), "m", 200, 100, 10)
	writeRecords(t, filepath.Join(dir, "b.jsonl"), "m", 200, 150, 20)
	writeRecords(t, filepath.Join(dir, "other.jsonl"), "other-model", 10, 100, 10)
	tests := []struct {
		name   string
		args   []string
		code   int
		out    []string
		errOut []string
		files  []string
	}{
		{"summary with vLLM-style SLO words", []string{"report", "a.jsonl", "--goodput", "ttft:105", "tpot:20"}, ExitOK,
			[]string{"Successful requests:                     200", "Requests meeting SLO:                    120 of 200 (60.00%)"}, nil, nil},
		{"sweep of two files", []string{"report", "a.jsonl", "b.jsonl", "--html", "r.html", "--csv", "csv", "--json", "r.json"}, ExitOK,
			[]string{"# level 0: 10 req/s", "# level 1: 20 req/s"}, nil, []string{"r.html", "csv/summary.csv", "csv/requests.csv", "r.json"}},
		{"per-request csv", []string{"report", "a.jsonl", "--per-request", "csv"}, ExitOK,
			[]string{"request_id,level,input_tokens", "r0,0,100,4,0,100.000,100.000,10.000,130.000,130.000,200,,,,\n"}, nil, nil},
		{"incompatible", []string{"report", "a.jsonl", "other.jsonl"}, ExitUsage, nil,
			[]string{"a.jsonl and other.jsonl differ in model (m vs other-model); use --force to merge them anyway"}, nil},
		{"forced", []string{"report", "a.jsonl", "other.jsonl", "--force"}, ExitOK, nil, []string{"differ in model (m vs other-model): merged anyway, as forced"}, nil},
		{"bad per-request", []string{"report", "a.jsonl", "--per-request", "xml"}, ExitUsage, nil, []string{"--per-request \"xml\""}, nil},
		{"missing file", []string{"report", "nope.jsonl"}, ExitUsage, nil, []string{"nope.jsonl"}, nil},
		{"compare", []string{"compare", "a.jsonl", "b.jsonl", "--goodput", "ttft:120", "--html", "ab.html"}, ExitOK,
			[]string{"TTFT           P50   104   154   +50.0", "worse", "Every user pays the TTFT change"}, nil, []string{"ab.html"}},
		{"compare one file", []string{"compare", "a.jsonl"}, ExitUsage, nil, nil, nil},
		{"compare itl", []string{"compare", "a.jsonl", "b.jsonl", "--percentile-metrics", "itl"}, ExitUsage, nil, []string{"itl cannot be compared"}, nil},
		{"compare reading speed", []string{"compare", "a.jsonl", "b.jsonl", "--reading-speed-ms", "0"}, ExitUsage, nil, []string{"--reading-speed-ms"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runReportCLI(t, dir, tt.args...)
			if code != tt.code {
				t.Fatalf("goodput %s = exit %d; want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, out, errOut)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("goodput %s stdout lacks %q:\n%s", strings.Join(tt.args, " "), w, out)
				}
			}
			for _, w := range tt.errOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("goodput %s stderr lacks %q:\n%s", strings.Join(tt.args, " "), w, errOut)
				}
			}
			for _, f := range tt.files {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("goodput %s did not write %s: %v", strings.Join(tt.args, " "), f, err)
				}
			}
		})
	}
}

// TestReportBadInput: bad lines, concatenated runs, empty and garbage
// files each get one line naming the file (and line), the exit code, and
// the flag that gets past them.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	writeRecords(t, filepath.Join(dir, "a.jsonl"), "m", 20, 100, 10)
	writeRecords(t, filepath.Join(dir, "other.jsonl"), "other-model", 20, 100, 10)
	a, err := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(filepath.Join(dir, "other.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(a), "\n")
	// Line 4 holds a chunk of 2^32 tokens, line 6 an int64-max prompt.
	lines[3] = `{"id":"bad","sent_ns":0,"chunks":[[5,4294967296,1]],"end_ns":5,"status":200}` + "\n"
	lines[5] = `{"id":"big","sent_ns":0,"prompt_tokens":9223372036854775807,"status":200}` + "\n"
	files := map[string]string{
		"bad.jsonl":   strings.Join(lines, ""),
		"cat.jsonl":   string(a) + string(other),
		"empty.jsonl": "",
		"nul.jsonl":   strings.Repeat("\x00", 100_000),
		"meta.jsonl":  lines[0],
		"id5.jsonl":   string(a) + `{"id":5}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		out    []string
		errOut []string
	}{
		{"a bad middle line", []string{"report", "bad.jsonl"}, ExitRun, nil,
			[]string{"bad.jsonl:4: ", "token count out of range", "--skip-bad-lines"}},
		{"bad lines skipped", []string{"report", "bad.jsonl", "--skip-bad-lines"}, ExitOK,
			[]string{"Successful requests:                     18"},
			[]string{"bad.jsonl:4: skipped a bad line", "bad.jsonl:6: skipped a bad line", "prompt_tokens 9223372036854775807 out of range", "skipped 2 bad line(s)"}},
		{"concatenated runs", []string{"report", "cat.jsonl"}, ExitUsage, nil,
			[]string{"cat.jsonl holds 2 runs", "line 22 starts another run than line 1", "model (m vs other-model)",
				"as when files are concatenated; give --merge to summarise them together, each run on its own clock"}},
		{"merged runs of two models", []string{"report", "cat.jsonl", "--merge"}, ExitUsage, nil,
			[]string{"cat.jsonl:1 and cat.jsonl:22 differ in model", "; use --force to merge them anyway"}},
		{"merged and forced", []string{"report", "cat.jsonl", "--merge", "--force"}, ExitOK,
			[]string{"Successful requests:                     40"}, []string{"cat.jsonl holds 2 runs (starting at lines 1, 22): merged as separate runs, each on its own clock, as asked",
				"cat.jsonl:1 and cat.jsonl:22 differ in model (m vs other-model): merged anyway, as forced"}},
		{"empty file", []string{"report", "empty.jsonl"}, ExitRun, nil, []string{"empty.jsonl: no records: the file is empty"}},
		{"NULs", []string{"report", "nul.jsonl"}, ExitRun, nil, []string{"nul.jsonl:1: ", "--skip-bad-lines"}},
		{"NULs skipped", []string{"report", "nul.jsonl", "--skip-bad-lines"}, ExitRun, nil, []string{"nul.jsonl:1: skipped", "nul.jsonl: no records"}},
		{"only a meta line", []string{"report", "meta.jsonl"}, ExitRun, nil, []string{"meta.jsonl: no records: only meta lines"}},
		{"a complete bad last line", []string{"report", "id5.jsonl"}, ExitRun, nil, []string{"id5.jsonl:22: ", "bad record"}},
		{"compare a bad line", []string{"compare", "a.jsonl", "bad.jsonl"}, ExitRun, nil, []string{"bad.jsonl:4: ", "--skip-bad-lines"}},
		{"compare skipping", []string{"compare", "a.jsonl", "bad.jsonl", "--skip-bad-lines"}, ExitOK, []string{"TTFT"}, []string{"skipped 2 bad line(s)"}},
		{"compare concatenated", []string{"compare", "a.jsonl", "cat.jsonl"}, ExitUsage, nil, []string{"give --merge to summarise them together"}},
		{"compare merged", []string{"compare", "a.jsonl", "cat.jsonl", "--merge"}, ExitUsage, nil, []string{"differ in model", "; use --force to merge them anyway"}},
		{"compare merged and forced", []string{"compare", "a.jsonl", "cat.jsonl", "--merge", "--force"}, ExitOK, []string{"TTFT"},
			[]string{"merged as separate runs, each on its own clock, as asked", "merged anyway, as forced"}},
		{"compare empty", []string{"compare", "a.jsonl", "empty.jsonl"}, ExitRun, nil, []string{"empty.jsonl: no records"}},
		{"compare NULs", []string{"compare", "nul.jsonl", "a.jsonl"}, ExitRun, nil, []string{"nul.jsonl:1: neither a records file nor a result file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runReportCLI(t, dir, tt.args...)
			if code != tt.code {
				t.Fatalf("goodput %s = exit %d; want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, out, errOut)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("goodput %s stdout lacks %q:\n%s", strings.Join(tt.args, " "), w, out)
				}
			}
			for _, w := range tt.errOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("goodput %s stderr lacks %q:\n%s", strings.Join(tt.args, " "), w, errOut)
				}
			}
		})
	}
}

// TestReportRunsYearsApart: two runs of one load 25 years apart are
// summarised over the sum of their durations, not the years between them.
func TestReportRunsYearsApart(t *testing.T) {
	dir := t.TempDir()
	writeRecords(t, filepath.Join(dir, "a.jsonl"), "m", 20, 100, 10)
	b, err := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	nl := bytes.IndexByte(b, '\n')
	later := strings.Replace(string(b[:nl]), `"started":"0001-01-01T00:00:00Z"`, `"started":"2051-01-01T00:00:00Z"`, 1)
	first := strings.Replace(string(b[:nl]), `"started":"0001-01-01T00:00:00Z"`, `"started":"2026-01-01T00:00:00Z"`, 1)
	if later == string(b[:nl]) {
		t.Fatalf("meta line %s has no zero start time to replace", b[:nl])
	}
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), append([]byte(first), b[nl:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), append([]byte(later), b[nl:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	// One run lasts 1.9 s + 109 ms + 30 ms: the last send at 1.9 s, its
	// last token 139 ms later.
	for _, args := range [][]string{{"report", "a.jsonl", "b.jsonl"}, {"report", "cat.jsonl", "--merge"}} {
		if args[1] == "cat.jsonl" {
			a, _ := os.ReadFile(filepath.Join(dir, "a.jsonl"))
			bb, _ := os.ReadFile(filepath.Join(dir, "b.jsonl"))
			if err := os.WriteFile(filepath.Join(dir, "cat.jsonl"), append(a, bb...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := runReportCLI(t, dir, args...)
		if code != ExitOK {
			t.Fatalf("goodput %s = exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		if !strings.Contains(out, "Benchmark duration (s):                  4.08") || !strings.Contains(out, "Successful requests:                     40") {
			t.Errorf("goodput %s: want 40 requests over 2 × 2.04 s:\n%s", strings.Join(args, " "), out)
		}
		if !strings.Contains(errOut, "started 25.0 years after") || !strings.Contains(errOut, "laid end to end") {
			t.Errorf("goodput %s stderr lacks the laid-end-to-end warning:\n%s", strings.Join(args, " "), errOut)
		}
	}
}
