package proxy

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"slices"
	"testing"
	"time"
)

// A proxy before and after a scripted buffering gateway say what the
// gateway added to the first token: the time from proxy B (between the
// gateway and the server) delivering it to proxy A (in front of the
// gateway) receiving it, on one wall clock, is the gateway's own hold —
// it buffers until the third content event and then holds the burst
// 30 ms (a moderation call) — within 1 ms. A's record also shows the
// stream re-chunked: the first three tokens arrive together.
func TestHopAddedDelay(t *testing.T) {
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range sseHeader() {
			w.Header()[k] = v
		}
		w.WriteHeader(200)
		for range 6 {
			w.Write(events(`{"choices":[{"index":0,"delta":{"content":" a"}}]}`))
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
		w.Write([]byte("data: [DONE]\n\n"))
	})
	b := newHarness(t, upstream, nil)
	var got, sent time.Time // the gateway's first token in, its burst out, this request
	gateway := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), "POST", b.front.URL+r.URL.Path, r.Body)
		resp, err := b.client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		sc := bufio.NewScanner(resp.Body)
		var buf bytes.Buffer
		n := 0
		for sc.Scan() {
			line := sc.Bytes()
			buf.Write(line)
			buf.WriteByte('\n')
			if !bytes.HasPrefix(line, []byte("data: {")) {
				if n >= 3 || bytes.HasPrefix(line, []byte("data: [DONE]")) {
					w.Write(buf.Bytes())
					buf.Reset()
					w.(http.Flusher).Flush()
				}
				continue
			}
			if n++; n == 1 {
				got = time.Now()
			}
			if n == 3 {
				time.Sleep(30 * time.Millisecond)
				sc.Scan() // the event's blank line
				buf.WriteByte('\n')
				w.Write(buf.Bytes())
				buf.Reset()
				w.(http.Flusher).Flush()
				sent = time.Now()
			}
		}
		w.Write(buf.Bytes())
	})
	a := newHarness(t, gateway, nil)
	// Five requests, one at a time; the median difference, as a loaded
	// machine's scheduling adds the odd millisecond to one of them.
	var diffs []time.Duration
	for i := range 5 {
		resp, _, err := a.post(context.Background(), "/v1/chat/completions", []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("post: %v %v", resp, err)
		}
		ra, rb := a.waitRecords(i + 1)[i], b.waitRecords(i + 1)[i]
		if ra.Hop == nil || rb.Hop == nil {
			t.Fatalf("hop timing missing: %+v %+v", ra.Hop, rb.Hop)
		}
		inA := a.p.start.Add(time.Duration(ra.Hop.UpstreamFirstTokenNs))
		outB := b.p.start.Add(time.Duration(rb.Hop.DeliveredFirstTokenNs))
		added, held := inA.Sub(outB), sent.Sub(got)
		t.Logf("gateway added %v to the first token by the proxies, held it %v by its own clock", added, held)
		// The hold's own sleep guarantees 30 ms; the upstream's 20 ms
		// between the first and third event is only nominal as received
		// (a late read of the first shortens it), so it is no bound.
		if held < 30*time.Millisecond {
			t.Errorf("the gateway held the first token only %v", held)
		}
		diffs = append(diffs, added-held)
	}
	slices.Sort(diffs)
	if d := diffs[2]; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("the proxies' figure for the gateway's added delay is off its own by %v (median of %v)", d, diffs)
	}
	ra, rb := a.records()[0], b.records()[0]
	// Re-chunked: A's first chunk carries the three buffered tokens (or
	// three chunks at one instant); B's tokens come one at a time.
	if ra.Chunks[0].T != ra.Chunks[min(2, len(ra.Chunks)-1)].T && ra.Chunks[0].Tokens < 3 {
		t.Errorf("A's chunks %v: want the first three tokens at once", ra.Chunks)
	}
	if len(rb.Chunks) != 6 {
		t.Errorf("B's chunks %v: want six", rb.Chunks)
	}
	// The proxy's own hop: B delivered what it got within a few ms.
	if d := rb.Hop.DeliveredFirstTokenNs - rb.Hop.UpstreamFirstTokenNs; d < 0 || d > int64(5*time.Millisecond) {
		t.Errorf("B held the first token %v", time.Duration(d))
	}
}
