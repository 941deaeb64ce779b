package jobgraph

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/setting"
)

// A Loader reads one trace file, named file in its errors, into jobs,
// each checked. Its error is one line naming file:line, a
// *setting.FileError.
type Loader func(file string, r io.Reader) ([]Job, error)

var (
	_ Loader = LoadWeka
	_ Loader = LoadTraceLab
	_ Loader = LoadOTel
)

// maxTraceBytes bounds what a loader reads of one file: a trace larger
// than this is more likely a wrong file than a trace.
const maxTraceBytes = 4 << 30

// readAll reads r whole, bounded by maxTraceBytes.
func readAll(file string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxTraceBytes+1))
	if err != nil {
		return nil, &setting.FileError{File: file, Err: err}
	}
	if len(b) > maxTraceBytes {
		return nil, &setting.FileError{File: file, Err: fmt.Errorf("larger than %d bytes", maxTraceBytes)}
	}
	return b, nil
}

// lineIndex maps byte offsets of a document to lines from 1.
type lineIndex []int // offsets of the '\n' bytes

func newLineIndex(data []byte) lineIndex {
	var li lineIndex
	for i, c := range data {
		if c == '\n' {
			li = append(li, i)
		}
	}
	return li
}

// line is the line holding byte off.
func (li lineIndex) line(off int) int {
	return 1 + sort.SearchInts(li, off)
}

// jsonDoc is a JSON document being read with jsonscan, for errors that
// name the line of the value at fault.
type jsonDoc struct {
	file string
	sc   jsonscan.Scanner
	li   lineIndex
	// lineBase, when not 0, is the file's line the whole document is on
	// (a JSONL line).
	lineBase int
	// scratch is reused to read arrays of hash ids.
	scratch []int64
}

func (d *jsonDoc) reset(data []byte, lineBase int) {
	d.sc.Reset(data)
	d.lineBase = lineBase
	if lineBase == 0 {
		d.li = newLineIndex(data)
	} else {
		d.li = nil
	}
}

// lineOf is the file's line of byte off of the document.
func (d *jsonDoc) lineOf(off int) int {
	if d.lineBase > 0 {
		return d.lineBase
	}
	return d.li.line(off)
}

// here is the line of the next value.
func (d *jsonDoc) here() int {
	d.sc.WS()
	return d.lineOf(d.sc.Pos())
}

// errAt is the one-line error for line, under key ("" for none).
func (d *jsonDoc) errAt(line int, key string, err error) error {
	var fe *setting.FileError
	if errors.As(err, &fe) {
		return err
	}
	return &setting.FileError{File: d.file, Line: max(line, 1), Key: key, Err: err}
}

// syntax wraps a jsonscan error with the line the scanner stopped on.
func (d *jsonDoc) syntax(err error) error {
	var fe *setting.FileError
	if errors.As(err, &fe) {
		return err
	}
	return &setting.FileError{File: d.file, Line: max(d.lineOf(d.sc.Pos()), 1), Err: err}
}

// str reads a string value (null reads as ""), for key.
func (d *jsonDoc) str(key string) (string, error) {
	line := d.here()
	if d.sc.Peek() == 'n' {
		return "", d.sc.Skip()
	}
	s, ok, err := d.sc.Str()
	if err != nil {
		return "", d.syntax(err)
	}
	if !ok {
		return "", d.errAt(line, key, errors.New("not a string"))
	}
	return string(d.sc.Bytes(s)), nil
}

// float reads a number, reporting ok false for null.
func (d *jsonDoc) float(key string) (v float64, ok bool, err error) {
	line := d.here()
	switch c := d.sc.Peek(); {
	case c == 'n':
		return 0, false, d.syntaxOrNil(d.sc.Skip())
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.sc.Pos()
		if _, _, err := d.sc.Number(); err != nil {
			return 0, false, d.syntax(err)
		}
		v, err := strconv.ParseFloat(string(d.sc.Data()[start:d.sc.Pos()]), 64)
		if err != nil || math.IsInf(v, 0) {
			return 0, false, d.errAt(line, key, fmt.Errorf("number out of range"))
		}
		return v, true, nil
	}
	if err := d.sc.Skip(); err != nil {
		return 0, false, d.syntax(err)
	}
	return 0, false, d.errAt(line, key, errors.New("not a number"))
}

func (d *jsonDoc) syntaxOrNil(err error) error {
	if err != nil {
		return d.syntax(err)
	}
	return nil
}

// integer reads an integer that fits an int (null reads as 0, not ok).
func (d *jsonDoc) integer(key string) (int, bool, error) {
	line := d.here()
	v, ok, err := d.float(key)
	if err != nil || !ok {
		return 0, false, err
	}
	if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, false, d.errAt(line, key, fmt.Errorf("%v is not an integer", v))
	}
	return int(v), true, nil
}

// seconds turns a trace's seconds into a Duration, rounded to the
// nanosecond and bounded so that sums of them cannot overflow.
func seconds(s float64) time.Duration {
	const limit = float64(100 * 365 * 24 * time.Hour)
	ns := math.Round(s * 1e9)
	return time.Duration(max(-limit, min(ns, limit)))
}

// fillNew sets each node's New from its recorded In and what its context
// carries given the recorded In of the nodes before it (the loaders'
// traces record whole prompts, not what each request adds), floored at 0
// when the trace's prompt is shorter than the carried context (a
// compacted history). The job must check.
func fillNew(j *Job) {
	prompt := make([]int, len(j.Nodes))
	for _, x := range j.order {
		nd := &j.Nodes[x]
		prompt[x] = nd.In
		nd.New = max(nd.In-j.carried(x, prompt), 0)
	}
}

// arrayOf calls each for every element of the array at the scanner, an
// error naming key when it is not an array.
func (d *jsonDoc) arrayOf(key string, each func() error) error {
	line := d.here()
	if d.sc.Peek() != '[' {
		if err := d.sc.Skip(); err != nil {
			return d.syntax(err)
		}
		return d.errAt(line, key, errors.New("not an array"))
	}
	more, err := d.sc.OpenArray()
	for ; more && err == nil; more, err = d.sc.NextElement() {
		if err := each(); err != nil {
			return err
		}
	}
	return d.syntaxOrNil(err)
}

// objectOf calls member for every key of the object at the scanner (which
// must read or skip its value), an error naming key when it is not an
// object.
func (d *jsonDoc) objectOf(key string, member func(k string) error) error {
	line := d.here()
	if d.sc.Peek() != '{' {
		if err := d.sc.Skip(); err != nil {
			return d.syntax(err)
		}
		return d.errAt(line, key, errors.New("not an object"))
	}
	_, err := d.sc.Members(func(k []byte) error { return member(string(k)) })
	return d.syntaxOrNil(err)
}
