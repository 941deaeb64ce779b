package simserve

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/goodput/goodput/internal/publish"
)

// publishWriter is the publish path in front of one streamed answer
// (Options.Publish): while it holds, what the protocol writes is kept
// back and flushes do nothing, so the client sees a release's tokens at
// once, when the policy releases them.
type publishWriter struct {
	http.ResponseWriter
	hold bool
	buf  bytes.Buffer
}

// Write keeps p back while holding.
func (w *publishWriter) Write(p []byte) (int, error) {
	if w.hold {
		return w.buf.Write(p)
	}
	if err := w.drain(); err != nil {
		return 0, err
	}
	return w.ResponseWriter.Write(p)
}

// drain writes what was kept back.
func (w *publishWriter) drain() error {
	if w.buf.Len() == 0 {
		return nil
	}
	_, err := w.ResponseWriter.Write(w.buf.Bytes())
	w.buf.Reset()
	return err
}

// FlushError flushes unless holding (http.ResponseController's and the
// SSE writer's flush).
func (w *publishWriter) FlushError() error {
	if w.hold {
		return nil
	}
	if err := w.drain(); err != nil {
		return err
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for writers that look for http.Flusher (the SSE
// writer).
func (w *publishWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the connection's writer for what
// else it controls (deadlines).
func (w *publishWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// publisher is one answer's publish path: its writer, the policy's state
// and the moderation delays' draws.
type publisher struct {
	w   *publishWriter
	buf *publish.Buffer
	mod publish.Policy
	rng *rand.Rand
}

// publishing wraps w in the publish path when Options.Publish is active
// (nil publisher: none).
func (s *Server) publishing(w http.ResponseWriter, seq uint64) (http.ResponseWriter, *publisher) {
	p := s.opt.Publish
	if !p.Active() {
		return w, nil
	}
	pw := &publishWriter{ResponseWriter: w}
	return pw, &publisher{w: pw, buf: p.Buffer(), mod: p, rng: rand.New(rand.NewPCG(seq, 0x9b15))}
}

// piece readies the writer for d: a hidden piece passes (the user never
// sees it), a visible one is held unless it ends a release (or the
// answer), which first waits its moderation delay — one release at a
// time, in stream order, as the simulator's virtual time has it. False
// means the client left while it waited.
func (p *publisher) piece(ctx context.Context, d delivery, last bool) bool {
	if p == nil {
		return true
	}
	if d.hidden {
		p.w.hold = false
		return true
	}
	if !p.buf.Boundary(d.tokens, "") && !last {
		p.w.hold = true
		return true
	}
	p.w.hold = false
	if p.mod.Moderation != nil {
		t := time.NewTimer(time.Duration(p.mod.Moderation.Sample(p.rng)) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// release lets everything kept back go (the stream ends).
func (p *publisher) release() {
	if p != nil {
		p.w.hold = false
	}
}
