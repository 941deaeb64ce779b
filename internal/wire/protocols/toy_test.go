package protocols_test

// A toy protocol added as a new one would be, to show what a new wire
// protocol touches: its own package (here toyWire and toyDecoder), one
// entry in the table (here protocols.Add) and, for the simulator to
// serve it, one entry in simserve's serverSides. Nothing else: the bench
// client, its key variable, the proxy's decoder, the route label and the
// CLI help all follow from the entry, as this test checks.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/cli"
	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/proxy"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/target"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/protocols"
	"github.com/goodput/goodput/internal/workload"
)

// toyWire is a made-up protocol: {"input": ...} in, SSE events of
// {"text": ...} out, the last one marked end with the usage.
type toyWire struct{}

func (toyWire) Name() string  { return "toy-lines" }
func (toyWire) Path() string  { return "/v1/toy" }
func (toyWire) Chat() bool    { return false }
func (toyWire) Streams() bool { return true }
func (toyWire) Body(m map[string]any, r *wire.Request, o wire.BodyOptions) error {
	m["input"], m["stream"] = r.Prompt, o.Stream
	return nil
}
func (toyWire) Auth(h http.Header, key string) { wire.BearerAuth(h, key) }
func (toyWire) NewDecoder() wire.EventDecoder  { return &toyDecoder{} }

// toyDecoder reads the toy's events (with encoding/json: a toy need not
// be fast).
type toyDecoder struct{}

type toyEvent struct {
	Text               string
	End                bool
	Prompt, Completion int
}

func (*toyDecoder) Reset()                                            {}
func (d *toyDecoder) DecodeResponse(data []byte, c *wire.Chunk) error { return d.Decode(data, c) }
func (*toyDecoder) Decode(data []byte, c *wire.Chunk) error {
	var ev toyEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return wire.ErrMalformed
	}
	*c = wire.Chunk{Timing: wire.NoTiming(), Content: []byte(ev.Text), HasChoices: true, End: ev.End}
	if ev.End {
		c.FinishReason = []byte("stop")
		c.Usage = wire.Usage{Present: true, PromptTokens: ev.Prompt, CompletionTokens: ev.Completion}
	}
	return nil
}

// toyServer answers the toy protocol with three tokens, checking the key.
func toyServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/toy" || r.Header.Get("Authorization") != "Bearer toy-secret" && r.Header.Get("Authorization") != "" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{`{"text":"one "}`, `{"text":"two "}`, `{"text":"three","end":true,"prompt":4,"completion":3}`} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestToyProtocol(t *testing.T) {
	protocols.Add(t, protocols.Protocol{Wire: toyWire{}, KeyEnv: "TOY_API_KEY"})
	srv := toyServer(t)
	ctx := context.Background()

	t.Run("help", func(t *testing.T) {
		if got := protocols.Help(); !strings.HasSuffix(got, ", openai-embeddings or toy-lines") {
			t.Errorf("Help() = %q; want it to end with the toy", got)
		}
		var out bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Now: time.Now}
		if code := cli.Main(ctx, []string{"bench", "--help"}, env); code != 0 || !strings.Contains(out.String(), "or toy-lines; any") || !strings.Contains(out.String(), "/v1/embeddings, /v1/toy)") || !strings.Contains(out.String(), "TOY_API_KEY when left at its default with --backend toy-lines") {
			t.Errorf("goodput bench --help (exit %d) does not list the toy:\n%s", code, out.String())
		}
	})

	t.Run("bench client", func(t *testing.T) {
		spec := target.Spec{Backend: "Toy-Lines", Model: "toy", APIKeyEnv: target.DefaultKeyEnv, MaxTokensField: "max_tokens", ContinuousUsage: "auto", ScrapeInterval: time.Second}
		if got := spec.KeyEnv(); got != "TOY_API_KEY" {
			t.Errorf("KeyEnv() = %q; want TOY_API_KEY", got)
		}
		tg, err := spec.Build(srv.URL, target.Conn{APIKey: "toy-secret"})
		if err != nil {
			t.Fatal(err)
		}
		if tg.API != "toy-lines" || tg.Endpoint != "/v1/toy" {
			t.Errorf("target API %q endpoint %q; want toy-lines /v1/toy", tg.API, tg.Endpoint)
		}
		start := time.Now()
		b, err := tg.Open(srv.URL, 1, func() int64 { return int64(time.Since(start)) })
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		send, err := b.Prepare("toy-1", workload.Request{Prompt: "hello", OutputTokens: 3})
		if err != nil {
			t.Fatal(err)
		}
		var rec runlog.Record
		send(ctx, &rec)
		if !rec.OK() || rec.CompletionTokens != 3 || rec.PromptTokens != 4 || len(rec.Chunks) != 3 {
			t.Errorf("record: ok %v (%s %s), %d prompt, %d completion, %d chunks; want ok, 4, 3, 3",
				rec.OK(), rec.ErrorClass, rec.Error, rec.PromptTokens, rec.CompletionTokens, len(rec.Chunks))
		}
	})

	t.Run("route label", func(t *testing.T) {
		if got := promexport.RouteOf("/gateway/v1/toy"); got != "/v1/toy" {
			t.Errorf("RouteOf(/gateway/v1/toy) = %q; want /v1/toy", got)
		}
	})

	t.Run("proxy", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "records.jsonl")
		p, err := proxy.New(proxy.Options{Upstream: srv.URL, Records: path})
		if err != nil {
			t.Fatal(err)
		}
		front := httptest.NewServer(p)
		resp, err := http.Post(front.URL+"/v1/toy", "application/json", strings.NewReader(`{"input":"hello","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
		resp.Body.Close()
		front.Close()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, recs, _, err := runlog.ReadAll(f, path)
		if err != nil || len(recs) != 1 {
			t.Fatalf("records: %d, %v; want 1", len(recs), err)
		}
		if rec := recs[0]; !rec.OK() || rec.CompletionTokens != 3 || len(rec.Chunks) != 3 {
			t.Errorf("proxy's record: ok %v (%s %s), %d completion, %d chunks; want ok, 3, 3",
				rec.OK(), rec.ErrorClass, rec.Error, rec.CompletionTokens, len(rec.Chunks))
		}
	})
}
