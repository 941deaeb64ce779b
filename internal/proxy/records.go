package proxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goodput/goodput/internal/runlog"
)

// DefaultRecordsMaxBytes is the size at which a records file is rotated
// when RecordsOptions gives none: 100 MiB.
const DefaultRecordsMaxBytes = 100 << 20

// RotatingWriter appends runlog Records to a JSON Lines file and rotates it
// by size. Every file, the first and each one after a rotation, starts with
// the same Meta line, so each is a complete records file on its own that
// `goodput report` reads; record times in all of them count from the one
// Meta.Started.
//
// The live file is always at the configured path. A full file is renamed to
// the path with a sequence number before its extension (records.jsonl →
// records.1.jsonl, records.2.jsonl, …; higher is newer), and a file left at
// the path by an earlier run is moved aside the same way at start, so a
// restart never mixes two runs' clocks in one file.
//
// RotatingWriter is safe for concurrent use.
type RotatingWriter struct {
	path     string
	maxBytes int64
	keep     int
	meta     runlog.Meta

	mu   sync.Mutex
	f    *os.File
	size int64
	seq  int // highest sequence number in use
	buf  []byte
	n    int
	err  error
}

// NewRotatingWriter creates (or moves aside and recreates) the file at path
// and writes meta to it. maxBytes ≤ 0 means DefaultRecordsMaxBytes; keep > 0
// deletes the oldest rotated files beyond keep, 0 keeps them all.
func NewRotatingWriter(path string, maxBytes int64, keep int, meta runlog.Meta) (*RotatingWriter, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultRecordsMaxBytes
	}
	w := &RotatingWriter{path: path, maxBytes: maxBytes, keep: keep, meta: meta}
	seqs, err := w.rotated()
	if err != nil {
		return nil, err
	}
	if len(seqs) > 0 {
		w.seq = seqs[len(seqs)-1]
	}
	if _, err := os.Stat(path); err == nil {
		if err := w.moveAside(); err != nil {
			return nil, err
		}
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// rotatedName is the name of rotated file number seq.
func (w *RotatingWriter) rotatedName(seq int) string {
	ext := filepath.Ext(w.path)
	return strings.TrimSuffix(w.path, ext) + "." + strconv.Itoa(seq) + ext
}

// rotated lists the sequence numbers of rotated files present, ascending.
func (w *RotatingWriter) rotated() ([]int, error) {
	ext := filepath.Ext(w.path)
	stem := filepath.Base(strings.TrimSuffix(w.path, ext)) + "."
	ents, err := os.ReadDir(filepath.Dir(w.path))
	if err != nil {
		return nil, fmt.Errorf("records %s: %w", w.path, err)
	}
	var seqs []int
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, stem) || !strings.HasSuffix(name, ext) || len(name) <= len(stem)+len(ext) {
			continue
		}
		if n, err := strconv.Atoi(name[len(stem) : len(name)-len(ext)]); err == nil && n > 0 {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// moveAside renames the live file to the next sequence number and prunes.
func (w *RotatingWriter) moveAside() error {
	w.seq++
	if err := os.Rename(w.path, w.rotatedName(w.seq)); err != nil {
		return fmt.Errorf("records: rotate %s: %w", w.path, err)
	}
	if w.keep <= 0 {
		return nil
	}
	seqs, err := w.rotated()
	if err != nil {
		return err
	}
	for len(seqs) > w.keep {
		if err := os.Remove(w.rotatedName(seqs[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("records: prune: %w", err)
		}
		seqs = seqs[1:]
	}
	return nil
}

// open creates the live file and writes the Meta line.
func (w *RotatingWriter) open() error {
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("records: %w", err)
	}
	b, err := runlog.AppendMeta(w.buf[:0], &w.meta)
	if err != nil {
		f.Close()
		return err
	}
	w.buf = b
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("records: write %s: %w", w.path, err)
	}
	w.f, w.size = f, int64(len(b))
	return nil
}

// Write appends one record, as one write call, rotating first when the
// record would take the file past the size limit (a file always takes at
// least one record, however large). After the first error every later call
// returns it.
func (w *RotatingWriter) Write(rec *runlog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		return errors.New("records: writer closed")
	}
	w.buf = runlog.AppendRecord(w.buf[:0], rec)
	line := w.buf
	if w.size+int64(len(line)) > w.maxBytes && w.n > 0 {
		w.err = w.rotate()
		if w.err != nil {
			return w.err
		}
		line = runlog.AppendRecord(w.buf[:0], rec) // open reused buf for the meta line
		w.buf = line
	}
	if _, err := w.f.Write(line); err != nil {
		w.err = fmt.Errorf("records: write %s: %w", w.path, err)
		return w.err
	}
	w.size += int64(len(line))
	w.n++
	return nil
}

// rotate closes the live file, moves it aside and opens a fresh one.
func (w *RotatingWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("records: close %s: %w", w.path, err)
	}
	w.f = nil
	if err := w.moveAside(); err != nil {
		return err
	}
	w.n = 0
	return w.open()
}

// Close closes the live file.
func (w *RotatingWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("records: close %s: %w", w.path, err)
	}
	return w.err
}
