package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestShortStreamsAfterUpload: an upstream that answers as soon as it has
// read the request body, with a short quick stream. Go's server discards
// and closes an unread request body when the answer's headers go out; the
// proxy must keep the body open (full duplex) until the transport has sent
// its end, or the upstream connection dies mid-answer (it did, in about one
// request in ten, before the fix).
func TestShortStreamsAfterUpload(t *testing.T) {
	for round := range 40 {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.URL.Path == "/v1/models" {
				fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 12 {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"w\",\"delta\":{\"content\":\"w\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d}}\n\n", i+1)
				w.(http.Flusher).Flush()
				time.Sleep(time.Millisecond) // pacing only; nothing asserts on time
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		h := newHarness(t, nil, func(o *Options) { o.Upstream = up.URL })
		for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
			c, err := openai.NewClient(wire.Config{BaseURL: h.front.URL, Endpoint: endpoint, Model: "m", ContinuousUsage: true})
			if err != nil {
				t.Fatal(err)
			}
			// A model list first, as bench does: the stream then reuses
			// the client's connection to the proxy.
			if _, err := c.Models(context.Background()); err != nil {
				t.Fatal(err)
			}
			req := &wire.Request{ID: fmt.Sprint(round), Prompt: "hello there", MaxTokens: 12}
			body, _ := c.Body(req)
			var rec runlog.Record
			c.Stream(context.Background(), req, body, &rec)
			if !rec.OK() || rec.CompletionTokens != 12 {
				t.Errorf("round %d %s: %s %s, %d tokens; want ok, 12", round, endpoint, rec.ErrorClass, rec.Error, rec.CompletionTokens)
			}
			c.Close()
		}
		h.close()
		up.Close()
	}
}
