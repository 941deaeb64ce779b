package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/runlog"
)

// notStreamQuote is how many bytes of an answer that is no event stream
// the record's error quotes.
const notStreamQuote = 64

// answerBody measures, as it passes unchanged, a 200 answer that is not an
// event stream to a request that asked for one: a JSON body (a server that
// ignores "stream") is measured as a non-streamed completion, E2E and
// usage from the body, as bench measures one; anything else (a gateway's
// HTML page) is a failure of class not_event_stream quoting its first
// bytes. It serves one response on the handler's goroutine.
type answerBody struct {
	p     *Proxy
	ex    *exchange
	body  io.ReadCloser
	ctype string
	json  bool // Content-Type says JSON, or there is none and the body opens an object
	keep  int  // bytes kept: the whole body for JSON, a quote otherwise
	buf   []byte
	over  bool // more than keep bytes came

	eof    bool
	err    error
	at     int64 // when the last byte (or the error) came
	closed bool
}

func newAnswerBody(p *Proxy, ex *exchange, body io.ReadCloser, ctype string) *answerBody {
	a := &answerBody{p: p, ex: ex, body: body, ctype: ctype, keep: notStreamQuote}
	mt, _, _ := mime.ParseMediaType(ctype)
	if a.json = mt == "application/json" || strings.HasSuffix(mt, "+json"); a.json || ctype == "" {
		a.keep = p.maxInspect
	}
	return a
}

func (a *answerBody) Read(b []byte) (int, error) {
	n, err := a.body.Read(b)
	if n > 0 || err != nil {
		a.at = a.p.now()
	}
	if n > 0 && !a.over {
		if room := a.keep - len(a.buf); n > room {
			a.buf = append(a.buf, b[:room]...)
			a.over = true
		} else {
			a.buf = append(a.buf, b[:n]...)
		}
	}
	if a.ctype == "" && !a.json && a.keep > notStreamQuote {
		// No Content-Type: JSON if the body opens an object, and only
		// then worth keeping whole.
		if t := bytes.TrimLeft(a.buf, " \t\r\n"); len(t) > 0 {
			if a.json = t[0] == '{'; !a.json {
				a.keep = notStreamQuote
				if len(a.buf) > a.keep {
					a.buf, a.over = a.buf[:a.keep], true
				}
			}
		}
	}
	switch {
	case err == io.EOF:
		a.eof = true
	case err != nil && a.err == nil:
		a.err = err
	}
	return n, err
}

// Close closes the upstream body and finishes the record.
func (a *answerBody) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	err := a.body.Close()
	rec := &runlog.Record{Status: 200, End: a.at, TokenSource: runlog.TokensCounted}
	if rec.End == 0 {
		rec.End = a.p.now()
	}
	ri := a.ex.info()
	rec.PromptTokens = ri.promptTokens
	switch {
	case !a.json:
		// A failure whatever came of the read: the client asked for
		// a stream and got something it cannot read as one.
		rec.ErrorClass, rec.Error = runlog.ErrNotEventStream, a.notStream()
	case a.err != nil || !a.eof:
		rec.ErrorClass, rec.Error = runlog.ErrCancelled, "client disconnected"
		if a.err != nil && a.ex.ctx.Err() == nil {
			rec.ErrorClass, rec.Error = runlog.ErrStream, "upstream: "+errText(a.err)
		}
	case a.over:
		rec.ErrorClass, rec.Error = runlog.ErrMalformed, fmt.Sprintf("JSON answer over %d bytes not measured", a.keep)
	default:
		a.ex.whole = true
		wire.MeasureWhole(decoderFor(a.ex.route), rec, a.buf, rec.End, ri.promptTokens)
	}
	a.p.finish(a.ex, rec)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// notStream is the error text of an answer that is no event stream: its
// type and first bytes, scrubbed of anything credential-like.
func (a *answerBody) notStream() string {
	q := a.buf[:min(len(a.buf), notStreamQuote)]
	return wire.NotEventStream(a.ctype, q, len(a.buf) > len(q) || a.over)
}
