package proxy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

func TestRotatingWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.jsonl")
	// A file left by an earlier run is moved aside, not appended to.
	if err := os.WriteFile(path, []byte("old run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	meta := runlog.Meta{Tool: "goodput", Command: "proxy", Started: time.Unix(1e9, 0).UTC()}
	rec := runlog.Record{ID: "r0", Status: 200, Chunks: []runlog.Chunk{{T: 5, Tokens: 1, Visible: true}}}
	line := len(runlog.AppendRecord(nil, &rec))
	metaLine, _ := runlog.AppendMeta(nil, &meta)
	// Room for the meta line and two records per file.
	w, err := NewRotatingWriter(path, int64(len(metaLine)+2*line), 2, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		rec.ID = "r" + string(rune('0'+i))
		if err := w.Write(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The old run became live.1.jsonl; then records 0-1 (live.2), 2-3
	// (live.3), 4-5 (live.4) were rotated out, and 6 is live. Keep 2:
	// live.1 and live.2 were pruned.
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if want := []string{"live.3.jsonl", "live.4.jsonl", "live.jsonl"}; !slices.Equal(names, want) {
		t.Fatalf("files = %q; want %q", names, want)
	}
	var ids []string
	for _, n := range []string{"live.3.jsonl", "live.4.jsonl", "live.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), string(metaLine)) {
			t.Errorf("%s does not start with the meta line:\n%s", n, b)
		}
		m, recs, warns, err := runlog.ReadAll(strings.NewReader(string(b)), n)
		if err != nil || len(warns) > 0 || m == nil || !m.Started.Equal(meta.Started) {
			t.Errorf("ReadAll(%s) = meta %v, warnings %v, err %v", n, m, warns, err)
		}
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
	}
	if want := []string{"r2", "r3", "r4", "r5", "r6"}; !slices.Equal(ids, want) {
		t.Errorf("record ids = %q; want %q", ids, want)
	}
	if err := w.Write(&rec); err == nil {
		t.Error("Write after Close = nil; want an error")
	}
}

func TestRotatingWriterOversizedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := NewRotatingWriter(path, 10, 0, runlog.Meta{Tool: "goodput"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rec := runlog.Record{ID: "big"}
	// Each file takes at least one record however small the limit, so
	// two records make two files, never an empty one.
	for range 2 {
		if err := w.Write(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(strings.TrimSuffix(path, ".jsonl") + ".1.jsonl"); err != nil {
		t.Errorf("no rotated file: %v", err)
	}
}
