package sse

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrBadField is returned by Writer.WriteEvent when an event type or id
// contains a line break (it would inject extra fields) or an id contains NUL
// (readers ignore such ids).
var ErrBadField = errors.New("sse: invalid field value")

// Writer writes a text/event-stream. Each event goes out in one Write call
// and is flushed at once, because a token that sits in a buffer is latency
// the client measures.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w. If w has a Flush() or Flush() error method
// (http.ResponseWriter's http.Flusher, bufio.Writer), it is called after
// every event and comment.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteEvent writes one event: an "event" field when typ is not empty, an
// "id" field when id is not empty, and one "data" field per line of data
// (split on LF, CRLF or CR, so the reader rebuilds data with LF line breaks).
// Empty data is written as one empty data field, which readers dispatch as
// an event with empty Data.
func (w *Writer) WriteEvent(typ, id string, data []byte) error {
	if strings.ContainsAny(typ, "\r\n") {
		return fmt.Errorf("%w: event type %q", ErrBadField, typ)
	}
	if strings.ContainsAny(id, "\r\n\x00") {
		return fmt.Errorf("%w: id %q", ErrBadField, id)
	}
	b := w.buf[:0]
	if typ != "" {
		b = append(b, "event: "...)
		b = append(b, typ...)
		b = append(b, '\n')
	}
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = appendLines(b, "data: ", data)
	b = append(b, '\n')
	w.buf = b
	return w.send(b)
}

// WriteComment writes text as comment lines (one per line of text), which
// readers ignore; servers send them as keep-alives.
func (w *Writer) WriteComment(text string) error {
	b := appendLines(w.buf[:0], ": ", []byte(text))
	w.buf = b
	return w.send(b)
}

// appendLines appends prefix+line+"\n" for every line of p, splitting on LF,
// CRLF and CR; an empty p yields one empty line.
func appendLines(b []byte, prefix string, p []byte) []byte {
	for {
		i := 0
		for i < len(p) && p[i] != '\n' && p[i] != '\r' {
			i++
		}
		b = append(b, prefix...)
		b = append(b, p[:i]...)
		b = append(b, '\n')
		if i == len(p) {
			return b
		}
		if p[i] == '\r' && i+1 < len(p) && p[i+1] == '\n' {
			i++
		}
		p = p[i+1:]
	}
}

func (w *Writer) send(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("sse: write: %w", err)
	}
	switch f := w.w.(type) {
	case interface{ Flush() error }:
		if err := f.Flush(); err != nil {
			return fmt.Errorf("sse: flush: %w", err)
		}
	case interface{ Flush() }:
		f.Flush()
	}
	return nil
}
