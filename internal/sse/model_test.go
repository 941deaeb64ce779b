package sse

import (
	"strings"
)

// This file holds a deliberately naive model of the WHATWG event-stream
// interpretation ("Server-sent events" § "Interpreting an event stream"),
// written straight from the spec's prose over a whole string, with the one
// documented deviation of Reader: an event still open at end of stream is
// delivered as Truncated. github.com/tmaxmax/go-sse, the reference DESIGN.md
// names, is not served by the module proxy this project can reach, so the
// random-split and fuzz tests check Reader against this model instead.

// modelEvent is an Event in a form that compares easily; hasType/hasID
// distinguish an absent field from an empty one.
type modelEvent struct {
	Type      string
	HasType   bool
	ID        string
	HasID     bool
	Data      string
	Truncated bool
	// Done is the index in the input of the byte that completed the event
	// (the first byte of the blank line's terminator, or the last byte of
	// the stream for a Truncated event).
	Done int
}

// modelParse interprets a whole stream.
func modelParse(in string) (events []modelEvent, retry int64, hasRetry bool) {
	pos := 0
	if strings.HasPrefix(in, "\uFEFF") {
		pos = len("\uFEFF")
	}
	var (
		typ, id         string
		hasTyp, hasID   bool
		data            strings.Builder
		nData           int
		lineTerminators = "\r\n"
	)
	reset := func() {
		typ, id, hasTyp, hasID = "", "", false, false
		data.Reset()
		nData = 0
	}
	for pos < len(in) {
		// Collect one line: everything up to CRLF, LF or CR.
		end := strings.IndexAny(in[pos:], lineTerminators)
		if end < 0 {
			// An unterminated final line: processed as a line (deviation),
			// and the open event, if it has data, delivered as truncated.
			processModelLine(in[pos:], &typ, &hasTyp, &id, &hasID, &data, &nData, &retry, &hasRetry)
			break
		}
		line := in[pos : pos+end]
		term := pos + end
		pos = term + 1
		if in[term] == '\r' && pos < len(in) && in[pos] == '\n' {
			pos++
		}
		if line == "" {
			if nData > 0 {
				events = append(events, modelEvent{
					Type: typ, HasType: hasTyp, ID: id, HasID: hasID,
					Data: data.String(), Done: term,
				})
			}
			reset()
			continue
		}
		processModelLine(line, &typ, &hasTyp, &id, &hasID, &data, &nData, &retry, &hasRetry)
	}
	if nData > 0 {
		events = append(events, modelEvent{
			Type: typ, HasType: hasTyp, ID: id, HasID: hasID,
			Data: data.String(), Truncated: true, Done: len(in) - 1,
		})
	}
	return events, retry, hasRetry
}

func processModelLine(line string, typ *string, hasTyp *bool, id *string, hasID *bool,
	data *strings.Builder, nData *int, retry *int64, hasRetry *bool) {
	if strings.HasPrefix(line, ":") {
		return
	}
	name, value, found := strings.Cut(line, ":")
	if found {
		value = strings.TrimPrefix(value, " ")
	}
	switch name {
	case "event":
		*typ, *hasTyp = value, true
	case "data":
		if *nData > 0 {
			data.WriteByte('\n')
		}
		data.WriteString(value)
		*nData++
	case "id":
		if !strings.Contains(value, "\x00") {
			*id, *hasID = value, true
		}
	case "retry":
		if value != "" && len(value) <= 18 && strings.Trim(value, "0123456789") == "" {
			var n int64
			for _, c := range value {
				n = n*10 + int64(c-'0')
			}
			*retry, *hasRetry = n, true
		}
	}
}
