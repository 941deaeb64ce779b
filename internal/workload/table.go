package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// table is a parsed CSV file: an optional header and rows with their line
// numbers, for errors that name file:line.
type table struct {
	header []string // nil when the first row is data
	width  int
	rows   []tableRow
}

type tableRow struct {
	line   int
	fields []string
}

// readTable reads a CSV (LF or CRLF, final newline optional, UTF-8 BOM
// allowed). The first row is a header when any of its fields is not a
// number. Every row must have the first row's number of fields.
func readTable(r io.Reader, file string) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	cr.TrimLeadingSpace = true
	t := &table{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				if errors.Is(pe.Err, csv.ErrFieldCount) {
					return nil, fmt.Errorf("%s:%d: %d fields; want %d like the first row", file, pe.Line, len(rec), t.width)
				}
				return nil, fmt.Errorf("%s:%d: %w", file, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		line, _ := cr.FieldPos(0)
		if t.width == 0 {
			rec[0] = strings.TrimPrefix(rec[0], "\ufeff")
			t.width = len(rec)
			if !allNumeric(rec) {
				t.header = rec
				continue
			}
		}
		t.rows = append(t.rows, tableRow{line: line, fields: rec})
	}
	if len(t.rows) == 0 {
		return nil, fmt.Errorf("%s: no data rows", file)
	}
	return t, nil
}

func allNumeric(rec []string) bool {
	for _, f := range rec {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err != nil {
			return false
		}
	}
	return true
}

// column returns the index of the header column named name (case
// insensitive), or -1.
func (t *table) column(name string) int {
	for i, h := range t.header {
		if strings.EqualFold(strings.TrimSpace(h), name) {
			return i
		}
	}
	return -1
}

// firstColumn returns the index of the first header column among names, or -1.
func (t *table) firstColumn(names ...string) int {
	for _, n := range names {
		if i := t.column(n); i >= 0 {
			return i
		}
	}
	return -1
}

func (t *table) describeColumns() string {
	if t.header == nil {
		return fmt.Sprintf("no header, %d columns", t.width)
	}
	return strings.Join(t.header, ",")
}

// parseTokens parses a token count: a non-negative integer, also written as
// a float with no fraction ("374.0"), as some exports do.
func parseTokens(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%q is negative; want a token count", s)
		}
		if n > maxLen {
			return 0, fmt.Errorf("%q is too large for a token count", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > maxLen {
		return 0, fmt.Errorf("%q is not a token count (a non-negative integer)", s)
	}
	return int(f), nil
}
