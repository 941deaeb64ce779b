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
			[]string{"request_id,level,input_tokens", "r0,0,100,4,0,100.000,100.000,10.000,130.000,130.000,200,\n"}, nil, nil},
		{"incompatible", []string{"report", "a.jsonl", "other.jsonl"}, ExitUsage, nil,
			[]string{"a.jsonl and other.jsonl differ in model (m vs other-model)", "--force"}, nil},
		{"forced", []string{"report", "a.jsonl", "other.jsonl", "--force"}, ExitOK, nil, []string{"merged anyway"}, nil},
		{"bad per-request", []string{"report", "a.jsonl", "--per-request", "xml"}, ExitUsage, nil, []string{"--per-request \"xml\""}, nil},
		{"missing file", []string{"report", "nope.jsonl"}, ExitRun, nil, []string{"nope.jsonl"}, nil},
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
