package sse

import "bytes"

// The line and field grammar of the event stream, shared by Reader (which
// pulls from a connection) and the proxy's framer (which is pushed the
// bytes passing through it), so the two read a stream alike.

// BOM is the UTF-8 byte order mark, dropped at the very start of a stream.
const BOM = "\xEF\xBB\xBF"

// LineEnd returns the index in b of the first line ending, or -1 when b
// holds none. An ending is LF or CR; cr reports a CR, after which an LF that
// follows (CRLF) belongs to the same ending and must be skipped.
func LineEnd(b []byte) (i int, cr bool) {
	i = bytes.IndexByte(b, '\n')
	limit := b
	if i >= 0 {
		limit = b[:i]
	}
	// CR is rare in practice; look for it only before the next LF.
	if j := bytes.IndexByte(limit, '\r'); j >= 0 {
		return j, true
	}
	return i, false
}

// SplitField splits a non-empty, non-comment line into its field name and
// value: the value follows the first colon, less one leading space, and is
// empty when there is no colon. value is always a suffix of line.
func SplitField(line []byte) (name, value []byte) {
	c := bytes.IndexByte(line, ':')
	if c < 0 {
		return line, line[len(line):]
	}
	name, value = line[:c], line[c+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return name, value
}
