package watch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// A target's records file, <dir>/<name>.records.jsonl, holds one run:
// a meta line, then a record per probe. A later watch of the same target
// (same URL, backend, endpoint, model and probe) continues that run: it
// appends an updated meta line with the file's start time, which the
// reader takes as the same run's (runlog.RunDiff), and writes its records
// on the file's clock, so goodput report reads the whole history as one
// run, the time the watch was stopped showing as a gap. A file of another
// run (the model or probe changed) is moved aside to
// <name>-<its start>.records.jsonl first, so the current name always
// holds the current configuration's probes and no file is ever lost.

// RecordsPath is the records file of the target named name in dir.
func RecordsPath(dir, name string) string { return filepath.Join(dir, name+".records.jsonl") }

// recordsFile appends one target's records.
type recordsFile struct {
	path string
	f    *os.File
	w    *runlog.Writer
	// offset is added to the watch clock's times to put them on the
	// file's clock (ns).
	offset int64
}

// openRecords opens (continuing or creating) the records file of meta's
// run in dir for the target named name; start is the watch clock's zero.
// filter, when set, passes every byte written. note tells the user what
// happened to an earlier file.
func openRecords(dir, name string, meta *runlog.Meta, start time.Time, filter func(io.Writer) io.Writer, note func(string)) (*recordsFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := RecordsPath(dir, name)
	m := *meta
	m.Started = start
	offset := int64(0)
	flags := os.O_CREATE | os.O_EXCL | os.O_WRONLY
	switch prev, err := previousRun(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err == nil && prev != nil && sameRun(prev, meta):
		m.Started = prev.Started
		offset = int64(start.Sub(prev.Started))
		flags = os.O_WRONLY | os.O_APPEND
		note(fmt.Sprintf("%s: continuing the records of the same target and probe, started %s", path, prev.Started.Format(time.RFC3339)))
	default:
		stamp := time.Time{}
		if prev != nil {
			stamp = prev.Started
		}
		aside, merr := moveAside(path, name, stamp)
		if merr != nil {
			return nil, merr
		}
		why := "it holds another run (the target, model or probe changed)"
		if err != nil {
			why = "it does not read as one watch run: " + err.Error()
		}
		note(fmt.Sprintf("%s: %s; moved it to %s", path, why, aside))
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	var out io.Writer = f
	if filter != nil {
		out = filter(f)
	}
	w := runlog.NewWriter(out)
	if err := w.WriteMeta(&m); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &recordsFile{path: path, f: f, w: w, offset: offset}, nil
}

// sameRun reports whether a file begun by prev may go on with meta's
// probes: the same target, backend, endpoint, model and probe.
func sameRun(prev, meta *runlog.Meta) bool {
	m := *meta
	m.Started = prev.Started
	return prev.Command == meta.Command && runlog.RunDiff(prev, &m) == ""
}

// previousRun reads the run of an existing records file: its meta line,
// nil when it has none. A torn last line (a watch killed mid-write) is cut
// off first, so records appended after it stay readable. The error wraps
// fs.ErrNotExist when there is no file.
func previousRun(path string) (*runlog.Meta, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errors.New("the file is empty")
	}
	if data[len(data)-1] != '\n' {
		keep := bytes.LastIndexByte(data, '\n') + 1
		if err := os.Truncate(path, int64(keep)); err != nil {
			return nil, err
		}
		data = data[:keep]
	}
	runs, _, err := runlog.ReadRuns(bytes.NewReader(data), path, runlog.ReadOptions{})
	switch {
	case err != nil:
		return nil, err
	case len(runs) != 1 || runs[0].Meta == nil:
		return nil, fmt.Errorf("%d runs in it", len(runs))
	}
	return runs[0].Meta, nil
}

// moveAside renames path to <name>-<stamp>[-N].records.jsonl beside it,
// never over an existing file, and returns the new path.
func moveAside(path, name string, stamp time.Time) (string, error) {
	if stamp.IsZero() {
		if st, err := os.Stat(path); err == nil {
			stamp = st.ModTime()
		}
	}
	base := filepath.Join(filepath.Dir(path), name+"-"+stamp.UTC().Format("20060102-150405"))
	for k := 1; k <= 1000; k++ {
		p := base + ".records.jsonl"
		if k > 1 {
			p = base + "-" + strconv.Itoa(k) + ".records.jsonl"
		}
		// A hard link fails if the name is taken: an exclusive rename.
		err := os.Link(path, p)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return p, os.Remove(path)
	}
	return "", fmt.Errorf("%s: no free name to move it to", path)
}

// write appends rec on the file's clock (a copy: rec stays on the watch's).
func (r *recordsFile) write(rec *runlog.Record) error {
	if r.offset == 0 {
		return r.w.Write(rec)
	}
	var c runlog.Record
	rec.CopyTo(&c)
	c.Shift(r.offset)
	return r.w.Write(&c)
}

func (r *recordsFile) close() error { return r.f.Close() }
