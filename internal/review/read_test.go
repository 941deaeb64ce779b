package review

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// files opens names from a map, as a directory would.
func files(m map[string]string) Opener {
	return func(name string) (io.ReadCloser, error) {
		s, ok := m[name]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return io.NopCloser(strings.NewReader(s)), nil
	}
}

const (
	metaLine = `{"meta":{"tool":"goodput","command":"bench","started":"2026-12-01T00:00:00Z","target":"http://x","backend":"openai","endpoint":"/v1/completions","model":"m","seed":0,"levels":[{"request_rate":0,"burstiness":1,"max_concurrency":1,"num_prompts":1}]}}` + "\n"
	recLine  = `{"id":"a","level":0,"intended_ns":0,"sent_ns":0,"chunks":[],"end_ns":1000,"prompt_tokens":10,"completion_tokens":0,"status":500,"error_class":"http_5xx","error":"boom"}` + "\n"
)

// TestReadMerged: a missing file names itself; a bad line is skipped with
// a warning under SkipBadLines and stops the reading without it; two
// files of one run merge into their records together.
func TestReadMerged(t *testing.T) {
	open := files(map[string]string{"a.jsonl": metaLine + recLine, "b.jsonl": metaLine + recLine + "not json\n"})
	if _, err := ReadMerged(open, []string{"missing.jsonl"}, runlog.ReadOptions{}, false, func(string) {}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	var bad *runlog.BadLineError
	if _, err := ReadMerged(open, []string{"b.jsonl"}, runlog.ReadOptions{}, false, func(string) {}); !errors.As(err, &bad) {
		t.Errorf("bad line: %v; want a *runlog.BadLineError", err)
	}
	var warns []string
	m, err := ReadMerged(open, []string{"a.jsonl", "b.jsonl"}, runlog.ReadOptions{SkipBadLines: true}, false, func(w string) { warns = append(warns, w) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Records) != 2 || len(warns) == 0 || !strings.Contains(warns[0], "b.jsonl") {
		t.Errorf("merged %d records, warnings %q: want 2 records and a warning naming b.jsonl", len(m.Records), warns)
	}
	side, err := ReadCompareSide(strings.NewReader(metaLine+recLine), "a.jsonl", stats.Options{}, runlog.ReadOptions{}, false, func(string) {})
	if err != nil || len(side.Run.Records) != 1 || side.Run.Name != "a.jsonl" || len(side.Report.Levels) != 1 {
		t.Errorf("ReadCompareSide: %+v, %v; want one record and one level", side.Run, err)
	}
}
