package setting

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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

// yamlLine is the "line N: " yaml.v3 starts a syntax error with.
var yamlLine = regexp.MustCompile(`^line (\d+): `)

// YAMLSyntaxError is yaml.v3's error err for the text data of file as a
// FileError: "FILE:LINE: not valid YAML: problem". yaml.v3 names the line
// its enclosing block began on, which may be well above the mistake; the
// first line whose text up to it no longer parses is nearer, and taken
// when later.
func YAMLSyntaxError(file string, err error, data []byte) *FileError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	return &FileError{File: file, Line: max(line, failingLine(data)), Err: fmt.Errorf("not valid YAML: %s", msg)}
}

// failingLine is the first line up to which data does not parse; 0 when
// none does or the file is too long to look (a parse per line).
func failingLine(data []byte) int {
	if len(data) > 16<<10 {
		return 0
	}
	var doc yaml.Node
	for line, end := 1, 0; end < len(data) && line <= 500; line++ {
		if nl := bytes.IndexByte(data[end:], '\n'); nl >= 0 {
			end += nl + 1
		} else {
			end = len(data)
		}
		if yaml.Unmarshal(data[:end], &doc) != nil {
			return line
		}
	}
	return 0
}
