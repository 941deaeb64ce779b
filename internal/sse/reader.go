// Package sse reads and writes text/event-stream (Server-Sent Events) as
// specified by the WHATWG HTML standard, section "Server-sent events".
//
// It knows nothing of JSON: an Event carries the raw bytes of its fields,
// passed through unchanged (no UTF-8 decoding or replacement; a leading
// byte order mark is stripped, as the standard requires).
// The Reader is the timing hot path of goodput, so it stamps every event with
// a clock reading taken right after the underlying Read that completed it,
// reuses one buffer for the whole stream and allocates nothing per event in
// steady state.
//
// Reader and Writer are not safe for concurrent use.
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultBufSize is the Reader's initial buffer size in bytes, used when
// NewReader is given a size ≤ 0. It holds any ordinary chunk of an LLM
// response many times over, so the buffer normally never grows.
const DefaultBufSize = 64 << 10

// DefaultMaxEventSize is the largest event, in bytes of wire text, a Reader
// accepts unless told otherwise (see Reader.SetMaxEventSize). A final chunk
// carrying prompt logprobs for a long context can run to megabytes; anything
// beyond this is treated as a broken stream rather than buffered without end.
const DefaultMaxEventSize = 64 << 20

// ErrEventTooLong is returned by Reader.Next when one event exceeds the
// reader's maximum event size.
var ErrEventTooLong = errors.New("sse: event exceeds maximum size")

// Event is one dispatched server-sent event. Its byte slices alias the
// Reader's buffers and are valid only until the next call to Next or Reset.
type Event struct {
	// Type is the value of the last "event" field; nil when the event had
	// none (the WHATWG default type is then "message").
	Type []byte
	// ID is the value of the last "id" field of this event; nil when it had
	// none. Unlike the WHATWG "last event ID" it does not carry over from
	// earlier events: goodput never reconnects, and a per-event value is
	// cheaper and easier to reason about.
	ID []byte
	// Data is the values of all "data" fields joined with "\n" (one leading
	// space stripped from each). It is empty, not nil, for "data:" alone.
	Data []byte
	// At is the caller's clock reading (ns, from the now func given to
	// NewReader) taken immediately after the underlying Read that delivered
	// the bytes completing this event. Several events completed by one Read
	// share one reading.
	At int64
	// Truncated is true when the stream ended (io.EOF) before the blank line
	// that closes this event. The event is delivered anyway (WHATWG would
	// drop it) because some servers end the body right after a complete
	// "data:" line; the last line may however be cut short, so a caller that
	// cannot parse Data should blame the stream, not the server's encoder.
	Truncated bool
}

// maxEmptyReads bounds consecutive (0, nil) reads before giving up, as
// bufio does, so a misbehaving io.Reader cannot make Next spin forever.
const maxEmptyReads = 100

// Reader parses a text/event-stream from an io.Reader. Create one with
// NewReader; reuse it for another stream with Reset.
type Reader struct {
	src     io.Reader
	now     func() int64
	buf     []byte
	maxSize int

	// buf[start:end] holds unparsed bytes; start is the beginning of the
	// event being assembled. All offsets below are absolute indexes in buf
	// and are shifted together when the buffer is compacted.
	start, end int
	lineStart  int // beginning of the current (unterminated) line
	scan       int // next byte not yet examined for a line terminator

	skipLF  bool // the last terminator was CR: a LF right after belongs to it
	bomDone bool // the byte order mark check at stream start is done
	eof     bool // src returned io.EOF
	err     error
	at      int64 // clock reading after the last Read that returned bytes

	// The event being assembled: field values as offsets into buf (so
	// compaction does not invalidate them), -1 when absent.
	typOff, typLen int
	idOff, idLen   int
	dataOff        int // offset of the single data value, when nData == 1
	dataLen        int
	nData          int
	dataBuf        []byte // joined values once nData ≥ 2

	retry    int64
	hasRetry bool
}

// NewReader returns a Reader that reads src, stamping events with now (a
// monotonic clock in ns chosen by the caller), with an initial buffer of
// bufSize bytes (DefaultBufSize if bufSize ≤ 0). The buffer grows only when a
// single event does not fit, up to the maximum event size.
func NewReader(src io.Reader, now func() int64, bufSize int) *Reader {
	if bufSize <= 0 {
		bufSize = DefaultBufSize
	}
	r := &Reader{now: now, buf: make([]byte, bufSize), maxSize: DefaultMaxEventSize}
	r.Reset(src)
	return r
}

// Reset makes r read a new stream from src, keeping its buffers (and its
// maximum event size) so pooled readers allocate nothing per request.
func (r *Reader) Reset(src io.Reader) {
	r.src = src
	r.start, r.end, r.lineStart, r.scan = 0, 0, 0, 0
	r.skipLF, r.bomDone, r.eof, r.err = false, false, false, nil
	r.at = 0
	r.retry, r.hasRetry = 0, false
	r.clearEvent()
}

// SetMaxEventSize sets the largest event, in bytes of wire text, that Next
// accepts before failing with ErrEventTooLong. n ≤ 0 restores
// DefaultMaxEventSize.
func (r *Reader) SetMaxEventSize(n int) {
	if n <= 0 {
		n = DefaultMaxEventSize
	}
	r.maxSize = n
}

// Retry returns the reconnection time in milliseconds from the last valid
// "retry" field seen on the stream; ok is false when there was none.
func (r *Reader) Retry() (ms int64, ok bool) { return r.retry, r.hasRetry }

func (r *Reader) clearEvent() {
	r.typOff, r.typLen = -1, 0
	r.idOff, r.idLen = -1, 0
	r.dataOff, r.dataLen, r.nData = -1, 0, 0
	r.dataBuf = r.dataBuf[:0]
}

// Next returns the next event. It returns io.EOF at the clean end of the
// stream, ErrEventTooLong for an oversized event, or the error of the
// underlying reader. Comments and events without data are consumed silently.
func (r *Reader) Next() (Event, error) {
	for {
		if ev, ok := r.parse(); ok {
			return ev, nil
		}
		if r.err != nil {
			return Event{}, r.err
		}
		if r.eof {
			return r.finish()
		}
		if err := r.fill(); err != nil {
			return Event{}, err
		}
	}
}

// finish handles the end of the stream: the event being assembled, if it
// has data, is delivered as Truncated (see Event.Truncated), then io.EOF.
func (r *Reader) finish() (Event, error) {
	r.err = io.EOF
	if r.lineStart < r.end { // a last line without its terminator
		r.processLine(r.lineStart, r.end)
		r.lineStart, r.scan = r.end, r.end
	}
	if r.nData == 0 {
		return Event{}, io.EOF
	}
	ev := r.event()
	ev.Truncated = true
	return ev, nil
}

// parse consumes complete lines from the buffer until an event is
// dispatched (ok) or the buffer holds no further complete line.
func (r *Reader) parse() (Event, bool) {
	if !r.bomDone {
		if !r.stripBOM() {
			return Event{}, false
		}
	}
	for r.scan < r.end {
		if r.skipLF {
			r.skipLF = false
			if r.buf[r.scan] == '\n' && r.scan == r.lineStart {
				r.scan++
				r.lineStart = r.scan
				r.dropConsumed()
				continue
			}
		}
		i, cr := LineEnd(r.buf[r.scan:r.end])
		r.skipLF = cr
		if i < 0 {
			r.scan = r.end
			return Event{}, false
		}
		lineEnd := r.scan + i
		r.scan = lineEnd + 1
		ls := r.lineStart
		r.lineStart = r.scan
		if lineEnd == ls { // blank line: dispatch
			if r.nData > 0 {
				ev := r.event()
				r.start = r.lineStart
				return ev, true
			}
			r.clearEvent()
			r.dropConsumed()
			continue
		}
		r.processLine(ls, lineEnd)
		if r.err != nil {
			return Event{}, false
		}
		r.dropConsumed()
	}
	return Event{}, false
}

// dropConsumed advances start past lines that hold nothing the current
// event refers to, so compaction copies as little as possible.
func (r *Reader) dropConsumed() {
	if r.typOff < 0 && r.idOff < 0 && r.dataOff < 0 {
		r.start = r.lineStart
	}
}

// event builds the dispatched Event and resets the assembly state. The
// slices stay valid because the buffer is not touched until the next Next.
func (r *Reader) event() Event {
	ev := Event{At: r.at}
	if r.typOff >= 0 {
		ev.Type = r.buf[r.typOff : r.typOff+r.typLen : r.typOff+r.typLen]
	}
	if r.idOff >= 0 {
		ev.ID = r.buf[r.idOff : r.idOff+r.idLen : r.idOff+r.idLen]
	}
	if r.nData == 1 {
		ev.Data = r.buf[r.dataOff : r.dataOff+r.dataLen : r.dataOff+r.dataLen]
	} else {
		ev.Data = r.dataBuf
	}
	r.typOff, r.idOff, r.dataOff, r.nData = -1, -1, -1, 0
	r.dataBuf = r.dataBuf[:0]
	return ev
}

// stripBOM removes a UTF-8 byte order mark at the very start of the stream.
// It reports false when too few bytes are buffered to decide.
func (r *Reader) stripBOM() bool {
	const bom = BOM
	n := r.end - r.start
	if n < len(bom) && !r.eof && bytes.HasPrefix([]byte(bom), r.buf[r.start:r.end]) {
		return false
	}
	if n >= len(bom) && string(r.buf[r.start:r.start+len(bom)]) == bom {
		r.start += len(bom)
		r.lineStart, r.scan = r.start, r.start
	}
	r.bomDone = true
	return true
}

// processLine interprets one line buf[ls:le] (terminator excluded).
func (r *Reader) processLine(ls, le int) {
	line := r.buf[ls:le]
	if len(line) == 0 {
		return
	}
	if line[0] == ':' {
		return // comment, e.g. a keep-alive
	}
	name, val := SplitField(line)
	voff := le - len(val) // val is a suffix of the line
	switch string(name) {
	case "data":
		switch r.nData {
		case 0:
			r.dataOff, r.dataLen = voff, len(val)
		case 1:
			r.dataBuf = append(r.dataBuf[:0], r.buf[r.dataOff:r.dataOff+r.dataLen]...)
			r.dataBuf = append(r.dataBuf, '\n')
			r.dataBuf = append(r.dataBuf, val...)
			r.dataOff = -1 // no longer refers to buf
		default:
			if len(r.dataBuf)+1+len(val) > r.maxSize {
				// Many data lines join into one event: bound the joined
				// data as one long line is bounded.
				r.err = fmt.Errorf("%w (%d bytes of joined data lines)", ErrEventTooLong, r.maxSize)
				return
			}
			r.dataBuf = append(r.dataBuf, '\n')
			r.dataBuf = append(r.dataBuf, val...)
		}
		r.nData++
	case "event":
		r.typOff, r.typLen = voff, len(val)
	case "id":
		if bytes.IndexByte(val, 0) < 0 { // WHATWG: ignore ids containing NUL
			r.idOff, r.idLen = voff, len(val)
		}
	case "retry":
		if ms, ok := parseDigits(val); ok {
			r.retry, r.hasRetry = ms, true
		}
	}
}

// parseDigits parses a non-empty run of ASCII digits; ok is false for
// anything else or on overflow.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// fill reads more bytes into the buffer, compacting or growing it first
// when there is no room at the end.
func (r *Reader) fill() error {
	if r.start == r.end && r.start > 0 {
		// Nothing left to keep (start only passes lines no open field
		// refers to): rewind for free.
		r.shift(r.start)
	}
	// Compact before the free tail gets so small that reads come back
	// short: a short read splits an event the server sent in one write.
	if r.start > 0 && len(r.buf)-r.end < len(r.buf)/4 {
		r.shift(r.start)
	}
	if r.end == len(r.buf) {
		if err := r.grow(); err != nil {
			r.err = err
			return err
		}
	}
	for range maxEmptyReads {
		n, err := r.src.Read(r.buf[r.end:])
		t := r.now() // once per Read, immediately after it returns
		if n < 0 || n > len(r.buf)-r.end {
			r.err = fmt.Errorf("sse: invalid read count %d", n)
			return r.err
		}
		if n > 0 {
			r.at = t
			r.end += n
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				r.eof = true
				return nil
			}
			// Deliver what was read before failing: complete events first.
			r.err = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	r.err = io.ErrNoProgress
	return r.err
}

// shift moves buf[d:end] to the front and adjusts every offset by d.
func (r *Reader) shift(d int) {
	if d == 0 {
		return
	}
	copy(r.buf, r.buf[d:r.end])
	r.start -= d
	r.end -= d
	r.lineStart -= d
	r.scan -= d
	if r.typOff >= 0 {
		r.typOff -= d
	}
	if r.idOff >= 0 {
		r.idOff -= d
	}
	if r.dataOff >= 0 {
		r.dataOff -= d
	}
}

// grow doubles the buffer, failing once an event would exceed maxSize.
func (r *Reader) grow() error {
	if len(r.buf) >= r.maxSize {
		return fmt.Errorf("%w (%d bytes)", ErrEventTooLong, r.maxSize)
	}
	n := min(2*len(r.buf), r.maxSize)
	nb := make([]byte, n)
	copy(nb, r.buf[:r.end])
	r.buf = nb
	return nil
}
