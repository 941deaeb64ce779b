package setting

import (
	"strconv"
	"strings"
)

// FileError is a mistake in a file the user wrote (a cluster file, a
// watch config): the file, the line, the part of the file and the key at
// fault, then what is wrong, on one line. Unlike Error it names no Go
// field: the user's words are the file's own keys.
type FileError struct {
	// File is how messages call the file (its path, as given).
	File string
	// Line is the line at fault, from 1; 0 when not known.
	Line int
	// Part is the part of the file the key belongs to, as a reader finds
	// it (`pool "big"`); "" when the key says it all or is top-level.
	Part string
	// Key is the key at fault as the file spells it ("router",
	// "targets[1].interval"); "" for the file as a whole (bad YAML, an
	// empty file).
	Key string
	// Err is what is wrong.
	Err error
}

// Error reads "FILE:LINE: PART: KEY: problem", the parts not known left
// out, on one line whatever Err says (a YAML error may span several).
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Part != "" {
		b.WriteString(e.Part + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(strings.Join(strings.Fields(e.Err.Error()), " "))
	return b.String()
}

// Unwrap is what is wrong.
func (e *FileError) Unwrap() error { return e.Err }
