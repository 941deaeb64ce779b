package cli

import (
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
// a name the user gave that already exists is refused unless --overwrite.

// maxNameTries bounds the search for a free default name.
const maxNameTries = 1000

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
// together; a name the user gave must not exist unless --overwrite (nor,
// when the result will be saved, the result file). An empty *records means
// no records file (nil, nil, nil).
func openRecords(env Env, o *outputFlags, result, records *string, meta *runlog.Meta) (*os.File, *runlog.Writer, error) {
	saving := o.SaveResult && !o.AppendResult
	if !o.Overwrite && saving && o.ResultFilename != "" && exists(*result) {
		return nil, nil, usagef("--result-filename %s: the file exists; choose another name, or --overwrite to replace it", *result)
	}
	if *records == "" {
		return nil, nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(*records), 0o755); err != nil {
		return nil, nil, fmt.Errorf("--records: %w", err)
	}
	res0, rec0 := *result, *records
	for k := 1; ; k++ {
		if k > 1 {
			if o.ResultFilename == "" {
				*result = suffixed(res0, ".json", k)
			}
			*records = suffixed(rec0, ".records.jsonl", k)
		}
		if o.ResultFilename == "" && !o.Overwrite && saving && exists(*result) {
			continue
		}
		f, err := createFile(*records, o.Overwrite)
		if errors.Is(err, fs.ErrExist) && o.Records == "" && k < maxNameTries {
			continue
		}
		if errors.Is(err, fs.ErrExist) {
			return nil, nil, usagef("--records %s: the file exists; choose another name, or --overwrite to replace it", *records)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--records: %w", err)
		}
		// Every line passes the secrets filter: a server's error text may
		// echo a credential.
		w := runlog.NewWriter(env.secrets.Writer(f))
		if err := w.WriteMeta(meta); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("--records %s: %w", *records, err)
		}
		return f, w, nil
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

// writeResult writes a result file whole (through a temporary file, so a
// reader never sees half of it), creating its directory (--result-dir) if
// needed, and returns the path written. It never replaces a file unless
// --overwrite: a default name taken meanwhile moves to the next "-N" name,
// a name the user gave is an error.
func writeResult(env Env, o *outputFlags, path string, b []byte) (string, error) {
	b = env.secrets.Bytes(b)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".goodput-result-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
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
		if o.ResultFilename != "" {
			return "", fmt.Errorf("%s exists; choose another --result-filename, or --overwrite to replace it", p)
		}
	}
	return "", fmt.Errorf("%s: no free name", path)
}
