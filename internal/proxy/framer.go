package proxy

import "github.com/goodput/goodput/internal/sse"

// framer splits a text/event-stream into events as bytes are pushed into it,
// with the same rules as sse.Reader (LF, CR or CRLF line ends, a leading
// byte order mark stripped, comments and data-less events dropped, data
// lines joined with LF, an unterminated last event delivered as truncated).
// sse.Reader pulls from an io.Reader and blocks until an event completes;
// the proxy must instead hand every byte to the client the moment it
// arrives and look at it afterwards, so it needs a parser that is fed.
// A test checks both agree on every input and every split.
//
// A framer is not safe for concurrent use.
type framer struct {
	line    []byte // the current line so far, when it spans pushes
	data    []byte // the event's data values joined with LF
	hasData bool
	skipLF  bool // the last line ended with CR: a LF right after belongs to it
	bomSeen int  // bytes of the byte order mark matched at stream start; -1 when decided
	// overflow is set once one event outgrows maxEventSize; the framer
	// then ignores the rest of the stream rather than buffer without end.
	overflow bool
}

// maxEventSize is the largest event, in bytes, the framer assembles: the
// same limit as sse.Reader's default.
const maxEventSize = sse.DefaultMaxEventSize

// bom is stripped at the very start of a stream.
const bom = sse.BOM

// reset readies f for a new stream, keeping its buffers.
func (f *framer) reset() {
	f.line, f.data = f.line[:0], f.data[:0]
	f.hasData, f.skipLF, f.bomSeen, f.overflow = false, false, 0, false
}

// shrink drops buffers grown past max bytes (an event far larger than
// usual), so that a pooled framer does not keep them.
func (f *framer) shrink(max int) {
	if cap(f.line) > max {
		f.line = nil
	}
	if cap(f.data) > max {
		f.data = nil
	}
}

// push parses b. For each event completed inside b it calls emit with the
// event's data (valid only during the call) and end, the offset in b just
// past the blank line that dispatched the event.
func (f *framer) push(b []byte, emit func(data []byte, end int)) {
	if f.overflow {
		return
	}
	defer func() {
		if len(f.line)+len(f.data) > maxEventSize {
			f.overflow = true
			f.line, f.data = nil, nil
		}
	}()
	off := 0
	if f.bomSeen >= 0 {
		for off < len(b) && f.bomSeen < len(bom) && b[off] == bom[f.bomSeen] {
			off++
			f.bomSeen++
		}
		switch {
		case f.bomSeen == len(bom):
			f.bomSeen = -1
		case off < len(b): // a mismatch: the bytes matched so far are text
			f.line = append(f.line, bom[:f.bomSeen]...)
			f.bomSeen = -1
		default:
			return // still undecided: every byte so far is a BOM prefix
		}
	}
	for off < len(b) {
		if f.skipLF {
			f.skipLF = false
			if b[off] == '\n' {
				off++
				continue
			}
		}
		rest := b[off:]
		i, cr := sse.LineEnd(rest)
		f.skipLF = cr
		if i < 0 {
			f.line = append(f.line, rest...)
			return
		}
		ln := rest[:i]
		if len(f.line) > 0 {
			f.line = append(f.line, ln...)
			ln = f.line
		}
		off += i + 1
		if len(ln) == 0 {
			if f.hasData {
				emit(f.data, off)
				f.data, f.hasData = f.data[:0], false
			}
		} else {
			f.field(ln)
		}
		f.line = f.line[:0]
	}
}

// finish ends the stream: an event with data whose blank line never came is
// passed to emit (as sse.Reader delivers it, marked truncated). It reports
// whether there was one.
func (f *framer) finish(emit func(data []byte)) bool {
	if f.overflow {
		return false
	}
	if f.bomSeen > 0 { // the stream was only a BOM prefix: that is text
		f.line = append(f.line, bom[:f.bomSeen]...)
		f.bomSeen = -1
	}
	if len(f.line) > 0 {
		f.field(f.line)
		f.line = f.line[:0]
	}
	if !f.hasData {
		return false
	}
	emit(f.data)
	f.data, f.hasData = f.data[:0], false
	return true
}

// field interprets one non-empty line; only data fields matter here.
func (f *framer) field(ln []byte) {
	if ln[0] == ':' {
		return // a comment, e.g. a keep-alive
	}
	name, val := sse.SplitField(ln)
	if string(name) != "data" {
		return
	}
	if f.hasData {
		f.data = append(f.data, '\n')
	}
	f.data = append(f.data, val...)
	f.hasData = true
}
