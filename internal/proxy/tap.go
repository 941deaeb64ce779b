package proxy

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
)

// tap wraps the body of a streamed completion response on its way to the
// client. It measures the stream as it passes and never alters it, except
// that with usage injection it drops the usage-only chunk the client did
// not ask for.
//
// Without stripping, Read hands the upstream's bytes out the moment they
// arrive (the ReverseProxy writes and flushes them right away) and only
// parses them at the start of the next Read, after they have gone out:
// parsing adds no latency to the chunk it parses. The arrival time, taken
// right after the upstream Read, travels with the bytes, so the timing is
// the same as if they had been parsed at once.
//
// With stripping, a chunk must be seen whole before it may go out, so Read
// holds the bytes of an incomplete event until the event completes.
//
// A tap serves one response on the handler's goroutine and is not safe for
// concurrent use.
type tap struct {
	p    *Proxy
	ex   *exchange
	body io.ReadCloser
	rec  runlog.Record
	fr   framer
	m    wire.StreamMeter
	// decs are the tap's decoders by route, made on first use.
	decs map[string]wire.EventDecoder

	// pending are bytes handed out but not yet parsed, and their arrival.
	pending   []byte
	pendingAt int64

	// The event being fed: its bytes, arrival and the offset in them where
	// the next event starts (for stripping).
	feedBuf   []byte
	feedAt    int64
	feedStart int
	emit      func(data []byte, end int) // t.onEvent, bound once

	strip  bool
	buf    []byte // upstream read buffer (strip mode)
	out    []byte // bytes ready for the client (strip mode)
	outOff int
	held   []byte // bytes of the incomplete event (strip mode)

	readErr error // the upstream Read's error, sticky
	errAt   int64
	eofDone bool
	closed  bool

	// Bounding the record (bound): whether a visible chunk was kept, the
	// index of the first one, and how many chunks were folded.
	sawVisible bool
	visAt      int
	folded     int
	maxEvent   int // the largest event's data, bytes (putTap)

	// hop is the answer's way through (Record.Hop), filled as it passes.
	hop runlog.HopTiming
}

// maxRecordChunks bounds the chunk entries one record keeps (16 bytes
// each, 2 MiB in all): a stream past it (a never-ending one, or a very long
// generation) has its later chunks folded into the last entry.
const maxRecordChunks = 1 << 17

// reset readies t for a response.
func (t *tap) reset(p *Proxy, ex *exchange, body io.ReadCloser, strip bool) {
	t.p, t.ex, t.body, t.strip = p, ex, body, strip
	t.rec = runlog.Record{Chunks: t.rec.Chunks[:0]}
	t.fr.reset()
	dec := t.decs[ex.route]
	if dec == nil {
		if t.decs == nil {
			t.decs = map[string]wire.EventDecoder{}
		}
		dec = decoderFor(ex.route)
		t.decs[ex.route] = dec
	}
	t.m.SetDecoder(dec)
	t.m.Reset(&t.rec)
	t.pending, t.pendingAt = t.pending[:0], 0
	t.feedBuf, t.feedAt, t.feedStart = nil, 0, 0
	if t.emit == nil {
		t.emit = t.onEvent
	}
	t.out, t.outOff, t.held = t.out[:0], 0, t.held[:0]
	if strip && t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	t.readErr, t.errAt, t.eofDone, t.closed = nil, 0, false, false
	t.sawVisible, t.visAt, t.folded = false, -1, 0
	t.hop = runlog.HopTiming{}
}

// delivered notes that everything read before now has gone downstream:
// the first byte's and, once parsed, the first token's delivery.
func (t *tap) delivered(now int64) {
	if t.hop.DeliveredFirstByteNs == 0 {
		t.hop.DeliveredFirstByteNs = now
	}
	if t.hop.DeliveredFirstTokenNs == 0 && t.rec.FirstTokenAt() >= 0 {
		t.hop.DeliveredFirstTokenNs = now
	}
}

// upstream notes bytes from the upstream arriving at at.
func (t *tap) upstream(at int64) {
	if t.hop.UpstreamFirstByteNs == 0 {
		t.hop.UpstreamFirstByteNs = at
	}
}

// Read implements io.Reader.
func (t *tap) Read(p []byte) (int, error) {
	if t.outOff < len(t.out) {
		n := copy(p, t.out[t.outOff:])
		t.outOff += n
		return n, nil
	}
	if t.strip {
		return t.readStrip(p)
	}
	if len(t.pending) > 0 {
		// The ReverseProxy asks for more only once it has written and
		// flushed the last read to the client: the bytes' stay here.
		held := t.p.now() - t.pendingAt
		t.p.hold.Observe(float64(held) / 1e9)
		if t.p.onHold != nil {
			t.p.onHold(held)
		}
		t.feed(t.pending, t.pendingAt)
		t.pending = t.pending[:0]
		t.delivered(t.pendingAt + held)
	}
	if t.readErr != nil {
		return 0, t.readErr
	}
	n, err := t.body.Read(p)
	at := t.p.now()
	if n > 0 {
		t.upstream(at)
		// A copy, not p itself: the caller may recycle its buffer before
		// the next Read (ReverseProxy's BufferPool) or Close.
		t.pending = append(t.pending[:0], p[:n]...)
		t.pendingAt = at
	}
	if err != nil {
		t.readErr, t.errAt = err, at
	}
	return n, err
}

// readStrip fills t.out with whole events (less the stripped one) and
// serves p from it.
func (t *tap) readStrip(p []byte) (int, error) {
	for t.outOff == len(t.out) {
		if len(t.out) > 0 {
			t.delivered(t.p.now())
		}
		t.out, t.outOff = t.out[:0], 0
		if t.readErr != nil {
			return 0, t.readErr
		}
		n, err := t.body.Read(t.buf)
		at := t.p.now()
		if n > 0 {
			t.upstream(at)
			t.feed(t.buf[:n], at)
		}
		if err != nil {
			t.readErr, t.errAt = err, at
			if err == io.EOF {
				t.endOfStream()
			}
			// Whatever is held goes out: the stream is over either way.
			t.out = append(t.out, t.held...)
			t.held = t.held[:0]
		}
		if !t.strip { // the framer gave up: pass the rest through as is
			return t.Read(p)
		}
	}
	n := copy(p, t.out[t.outOff:])
	t.outOff += n
	return n, nil
}

// feed parses b, which arrived at at.
func (t *tap) feed(b []byte, at int64) {
	t.feedBuf, t.feedAt, t.feedStart = b, at, 0
	t.fr.push(b, t.emit)
	if t.strip {
		t.held = append(t.held, b[t.feedStart:]...)
	}
	if t.fr.overflow {
		// One class with bench's for the same stream: a runaway, not a
		// broken one (the proxy still forwards it; it stops measuring).
		t.m.Abort(at, runlog.ErrRunaway, fmt.Sprintf("an event over %d bytes: stopped reading", maxEventSize))
		if t.strip {
			t.strip = false
			t.out = append(t.out, t.held...)
			t.held = t.held[:0]
		}
	}
	t.feedBuf = nil
}

// onEvent is the framer's callback for an event ending at offset end of
// the bytes being fed.
func (t *tap) onEvent(data []byte, end int) {
	n := len(t.rec.Chunks)
	usageOnly := t.m.Event(data, t.feedAt, false)
	if len(t.rec.Chunks) > n {
		t.bound()
	}
	t.maxEvent = max(t.maxEvent, len(data))
	if !t.strip {
		return
	}
	if !usageOnly {
		t.out = append(t.out, t.held...)
		t.out = append(t.out, t.feedBuf[t.feedStart:end]...)
	}
	t.held = t.held[:0]
	t.feedStart = end
}

// bound keeps the record within maxRecordChunks entries (two more at
// most) once a chunk has been appended: past the bound, each new chunk is
// folded into the last entry, which takes its time and adds its tokens.
// Token counts, TTFT, TTP (the first visible chunk is always kept as it
// came), TPOT and E2E stay exact; the folded part's inter-token gaps
// become one gap.
func (t *tap) bound() {
	c := t.rec.Chunks
	n := len(c)
	last := c[n-1]
	firstVisible := last.Visible && !t.sawVisible
	if firstVisible {
		t.sawVisible, t.visAt = true, n-1
	}
	if n <= maxRecordChunks || firstVisible || n-2 == t.visAt {
		return
	}
	f := &c[n-2]
	f.T = last.T
	f.Tokens = int32(min(int64(f.Tokens)+int64(last.Tokens), math.MaxInt32))
	f.Visible = f.Visible || last.Visible
	t.rec.Chunks = c[:n-1]
	t.folded++
}

// endOfStream handles the upstream's clean end: an unterminated last event
// is measured (as truncated), then the stream's end.
func (t *tap) endOfStream() {
	if t.eofDone {
		return
	}
	t.eofDone = true
	t.fr.finish(func(data []byte) { t.m.Event(data, t.errAt, true) })
	t.m.EOF(t.errAt)
}

// Close implements io.Closer: it closes the upstream body and completes
// the record, which the proxy then observes and writes.
func (t *tap) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	err := t.body.Close()
	if len(t.pending) > 0 {
		t.feed(t.pending, t.pendingAt)
		t.pending = t.pending[:0]
	}
	// What was handed on has gone by the close (the ReverseProxy closes
	// after its last write).
	t.delivered(t.p.now())
	if f := t.rec.FirstTokenAt(); f >= 0 {
		t.hop.UpstreamFirstTokenNs = f
	} else {
		t.hop.DeliveredFirstTokenNs = 0
	}
	if t.hop.UpstreamFirstByteNs != 0 {
		hop := t.hop
		t.rec.Hop = &hop
	}
	switch {
	case t.readErr == io.EOF:
		t.endOfStream()
	case t.readErr != nil:
		if t.ex.ctx.Err() != nil {
			t.m.Abort(t.errAt, runlog.ErrCancelled, "client disconnected")
		} else {
			t.m.Abort(t.errAt, runlog.ErrStream, "upstream: "+errText(t.readErr))
		}
	default:
		// The ReverseProxy stopped reading before the end: the client's
		// connection failed under a write.
		t.m.Abort(t.p.now(), runlog.ErrCancelled, "client disconnected")
	}
	t.m.Close(t.ex.info().promptTokens)
	if t.folded > 0 {
		t.p.log.Info("long stream: chunks past the record's bound folded into its last entry",
			"route", t.ex.route, "kept", len(t.rec.Chunks), "folded", t.folded)
	}
	t.p.finish(t.ex, &t.rec)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// tapBody is the per-response handle given to the ReverseProxy, so that a
// pooled tap is returned to the pool exactly once and a stray second Close
// can never reach a tap already serving another response.
type tapBody struct{ t *tap }

func (b *tapBody) Read(p []byte) (int, error) {
	if b.t == nil {
		return 0, errors.New("read after close")
	}
	return b.t.Read(p)
}

func (b *tapBody) Close() error {
	t := b.t
	if t == nil {
		return nil
	}
	b.t = nil
	err := t.Close()
	t.p.putTap(t)
	return err
}
