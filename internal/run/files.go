package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
)

// A run never truncates or shares a file it did not make: the records file
// is created exclusively, default names (which have one-second resolution)
// take the next free "-N" suffix when two runs start in the same second, and
// a name the user gave that already exists is refused unless Overwrite.

// maxNameTries bounds the search for a free default name.
const maxNameTries = 1000

// FileExistsError is a file of the name the user gave that exists (and
// Overwrite is off): Field is "ResultName" or "Records".
type FileExistsError struct {
	Field, Path string
}

func (e *FileExistsError) Error() string {
	return e.Path + ": the file exists; choose another name, or overwrite it"
}

// paths names the result and records files like vLLM names its result:
// LABEL-LOAD[-concurrencyN]-MODEL-STAMP.json, the records beside it.
func (o *Output) paths(label, model string, conc int, load, stamp string) (result, records string) {
	name := o.ResultName
	if name == "" {
		cs := ""
		if conc > 0 {
			cs = fmt.Sprintf("-concurrency%d", conc)
		}
		if i := strings.LastIndex(model, "/"); i >= 0 {
			model = model[i+1:]
		}
		if sh := o.shard; sh != nil {
			// Shards started in the same second must not clash.
			stamp = fmt.Sprintf("shard%d-of-%d-%s", sh.Index, sh.Count, stamp)
		}
		name = fmt.Sprintf("%s-%s%s-%s-%s.json", sanitize(label), load, cs, sanitize(model), stamp)
	}
	result = filepath.Join(o.Dir, name)
	switch o.Records {
	case "none", "-":
		records = ""
	case "":
		records = strings.TrimSuffix(result, ".json") + ".records.jsonl"
	default:
		records = o.Records
	}
	return result, records
}

// rateName is a fixed rate's part of a result file name: RATEqps, infqps
// for 0 (unpaced).
func rateName(rate float64) string {
	if rate > 0 {
		return strconv.FormatFloat(rate, 'f', -1, 64) + "qps"
	}
	return "infqps"
}

// loadName is a level's part of a result file name: its rate, or a ramp's
// ramp-up-STRATEGY-STARTqps-ENDqps as vLLM writes it.
func loadName(l runlog.Level) string {
	if r := l.Ramp; r != nil {
		return fmt.Sprintf("ramp-up-%s-%sqps-%sqps", r.Strategy,
			strconv.FormatFloat(r.StartRPS, 'f', -1, 64), strconv.FormatFloat(r.EndRPS, 'f', -1, 64))
	}
	return rateName(l.RequestRate)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == ':' || r == '\\' {
			return '_'
		}
		return r
	}, s)
}

// suffixed is path with "-k" before its extension (k ≥ 2).
func suffixed(path, ext string, k int) string {
	return strings.TrimSuffix(path, ext) + "-" + strconv.Itoa(k) + ext
}

// exists reports whether path names an existing file (or anything else).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// openRecords creates the records file and writes its meta line. Names
// goodput made (the default result name, a records name derived from the
// result's) move to the first free "-N" name, the result's and records'
// together; a name the user gave must not exist unless Overwrite (nor,
// when the result will be saved, the result file). An empty *records means
// no records file (nil, nil).
func (o *Output) openRecords(result, records *string, meta *runlog.Meta) (*recordsFile, error) {
	// A shard's identity is known only once it agreed its start: its meta
	// line gets it here, where the line is written.
	meta.Shard = o.shard
	if !o.Overwrite && o.Saving && o.ResultName != "" && exists(*result) {
		return nil, &FileExistsError{Field: "ResultName", Path: *result}
	}
	if *records == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(*records), 0o755); err != nil {
		return nil, &ConfigError{Field: "Records", Err: err}
	}
	res0, rec0 := *result, *records
	for k := 1; ; k++ {
		if k > 1 {
			if o.ResultName == "" {
				*result = suffixed(res0, ".json", k)
			}
			*records = suffixed(rec0, ".records.jsonl", k)
		}
		if o.ResultName == "" && !o.Overwrite && o.Saving && exists(*result) {
			continue
		}
		f, err := createFile(*records, o.Overwrite)
		if errors.Is(err, fs.ErrExist) && o.Records == "" && k < maxNameTries {
			continue
		}
		if errors.Is(err, fs.ErrExist) {
			return nil, &FileExistsError{Field: "Records", Path: *records}
		}
		if err != nil {
			return nil, &ConfigError{Field: "Records", Err: err}
		}
		// Every line passes the output filter: a server's error text may
		// echo a credential.
		w := runlog.NewWriter(o.filtered(f))
		if err := w.WriteMeta(meta); err != nil {
			f.Close()
			return nil, &ConfigError{Field: "Records", Err: fmt.Errorf("%s: %w", *records, err)}
		}
		return &recordsFile{path: *records, f: f, w: w}, nil
	}
}

// createFile creates path for writing: exclusively (fs.ErrExist if it is
// there), or replacing it when overwrite.
func createFile(path string, overwrite bool) (*os.File, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_EXCL
	if overwrite {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	return os.OpenFile(path, flags, 0o644)
}

// WriteResult writes a result file whole (through a temporary file, so a
// reader never sees half of it), creating its directory if needed, and
// returns the path written. It never replaces a file unless Overwrite: a
// default name taken meanwhile moves to the next "-N" name, a name the user
// gave is a FileExistsError.
func (o *Output) WriteResult(path string, b []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".goodput-result-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := o.filtered(tmp).Write(b); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	if o.Overwrite {
		return path, os.Rename(tmp.Name(), path)
	}
	for k := 1; k <= maxNameTries; k++ {
		p := path
		if k > 1 {
			p = suffixed(path, ".json", k)
		}
		// A hard link fails if the name is taken: an exclusive rename.
		err := os.Link(tmp.Name(), p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if o.ResultName != "" {
			return "", &FileExistsError{Field: "ResultName", Path: p}
		}
	}
	return "", fmt.Errorf("%s: no free name", path)
}

// AppendResult appends a result to path as vLLM's --append-result does:
// one JSON line, after a newline when the file already has content.
func (o *Output) AppendResult(path string, b []byte) error {
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := o.filtered(f)
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		if _, err := w.Write([]byte("\n")); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := w.Write(line.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteFile writes a report file whole through a temporary file, so a
// failed render does not leave half a page behind.
func (o *Output) WriteFile(path string, render func(w *bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".goodput-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := o.filtered(tmp).Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
