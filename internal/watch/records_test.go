package watch

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// watchOnce makes a Watcher of cfg writing to dir, probes n times with
// Once, and closes it.
func watchOnce(t *testing.T, cfg *Config, dir string, n int, o Options) {
	t.Helper()
	fs := &fakes{answers: map[string]func(int) answer{}}
	if o.Open == nil {
		o.Open = fs.open
	}
	o.RecordsDir = dir
	w, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := w.Once(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readRun reads path as a records file, strictly: exactly one run.
func readRun(t *testing.T, path string) runlog.RecordsFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, warns, err := runlog.ReadRecordsFile(f, path, runlog.ReadOptions{})
	if err != nil {
		t.Fatalf("ReadRecordsFile: %v", err)
	}
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	return files[0]
}

// TestRecordsContinue: a second watch of the same target appends to the
// first one's file as the same run, on the file's clock, so the file reads
// as one run (goodput report summarises all of it).
func TestRecordsContinue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := testTargets(1, 30*time.Second)
		var notes []string
		o := Options{Note: func(s string) { notes = append(notes, s) }}
		watchOnce(t, cfg, dir, 2, o)
		time.Sleep(time.Hour) // the watch was stopped for an hour
		watchOnce(t, cfg, dir, 1, o)

		path := RecordsPath(dir, "a")
		run := readRun(t, path)
		if len(run.Records) != 3 {
			t.Fatalf("%d records; want 3", len(run.Records))
		}
		if run.Meta == nil || run.Meta.Command != "watch" || run.Meta.Model != "m" || run.Meta.Analysis == nil {
			t.Fatalf("meta %+v", run.Meta)
		}
		gap := time.Duration(run.Records[2].Sent - run.Records[1].Sent)
		if gap < time.Hour || gap > time.Hour+time.Minute {
			t.Errorf("the continued record was sent %v after the last; want about the hour the watch was stopped", gap)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "continuing the records") {
			t.Errorf("notes = %q", notes)
		}
		ids := map[string]bool{}
		for _, r := range run.Records {
			if ids[r.ID] {
				t.Errorf("record id %s twice", r.ID)
			}
			ids[r.ID] = true
		}
	})
}

// TestRecordsMovedAside: a watch whose probe changed does not mix its
// records into the old run: the old file moves aside under its start
// time, and a new one begins.
func TestRecordsMovedAside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := testTargets(1, 30*time.Second)
		watchOnce(t, cfg, dir, 2, Options{})
		time.Sleep(time.Minute)
		cfg.Targets[0].Probe.MaxTokens = 99
		var notes []string
		watchOnce(t, cfg, dir, 1, Options{Note: func(s string) { notes = append(notes, s) }})

		if run := readRun(t, RecordsPath(dir, "a")); len(run.Records) != 1 || !strings.Contains(run.Meta.Dataset, "max_tokens=99") {
			t.Errorf("new file: %d records, dataset %q; want 1 of max_tokens=99", len(run.Records), run.Meta.Dataset)
		}
		aside := filepath.Join(dir, "a-20000101-000000.records.jsonl") // synctest's clock starts in 2000
		if run := readRun(t, aside); len(run.Records) != 2 {
			t.Errorf("old file: %d records; want 2", len(run.Records))
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "moved it to "+aside) {
			t.Errorf("notes = %q", notes)
		}
	})
}

// TestRecordsTornLine: a watch killed mid-write leaves a torn last line;
// the next one cuts it off before appending, so the file stays readable
// by the strict reader.
func TestRecordsTornLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := testTargets(1, 30*time.Second)
		watchOnce(t, cfg, dir, 1, Options{})
		path := RecordsPath(dir, "a")
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(`{"id":"torn","level":0,"inten`)
		f.Close()
		watchOnce(t, cfg, dir, 1, Options{})
		if run := readRun(t, path); len(run.Records) != 2 {
			t.Errorf("%d records; want 2", len(run.Records))
		}
	})
}

// TestRecordsFiltered: every byte of a records file passes the filter
// (the CLI's blanks credentials), meta line included.
func TestRecordsFiltered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := testTargets(1, 30*time.Second)
		cfg.Targets[0].BaseURL = "http://127.0.0.1:1/secret-path"
		filter := func(w io.Writer) io.Writer { return replacer{w} }
		watchOnce(t, cfg, dir, 1, Options{Filter: filter})
		b, err := os.ReadFile(RecordsPath(dir, "a"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("secret")) || !bytes.Contains(b, []byte("[redacted]-path")) {
			t.Errorf("records file not filtered:\n%s", b)
		}
	})
}

type replacer struct{ w io.Writer }

func (r replacer) Write(p []byte) (int, error) {
	_, err := r.w.Write(bytes.ReplaceAll(p, []byte("secret"), []byte("[redacted]")))
	return len(p), err
}

// TestRecordsUnreachable: a probe that failed before its request (the
// target did not answer its model list) is in the records too, a failed
// request, so that goodput report on them shows the outage.
func TestRecordsUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		fs := &fakes{resolveFails: 2}
		w, err := New(testTargets(1, 30*time.Second), Options{Open: fs.open, RecordsDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := w.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		run := readRun(t, RecordsPath(dir, "a"))
		if len(run.Records) != 3 {
			t.Fatalf("%d records; want 3 (two failed, one ok)", len(run.Records))
		}
		ids := map[string]bool{}
		for i, r := range run.Records {
			if ids[r.ID] {
				t.Errorf("record id %s twice", r.ID)
			}
			ids[r.ID] = true
			if failed := i < 2; failed != (r.ErrorClass != runlog.ErrNone) {
				t.Errorf("record %d: class %q; want the first two failed", i, r.ErrorClass)
			}
		}
		if r := run.Records[0]; !strings.Contains(r.Error, "connection refused") {
			t.Errorf("first record's error %q; want the resolve failure", r.Error)
		}
	})
}
