package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goodput/goodput/internal/promexport"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// shape is the part of a record that does not depend on whose clock
// measured it.
type shape struct {
	Tokens                                        []int32
	Visible                                       []bool
	Prompt, Completion, Reasoning, Cached, Status int
	Source                                        runlog.TokenSource
	Finish                                        string
	Class                                         runlog.ErrorClass
	Error                                         string
	HasTTFT, HasTTP                               bool
}

func shapeOf(r *runlog.Record) shape {
	s := shape{Prompt: r.PromptTokens, Completion: r.CompletionTokens, Reasoning: r.ReasoningTokens,
		Cached: r.CachedTokens, Status: r.Status, Source: r.TokenSource, Finish: r.FinishReason,
		Class: r.ErrorClass, Error: r.Error}
	for _, c := range r.Chunks {
		s.Tokens = append(s.Tokens, c.Tokens)
		s.Visible = append(s.Visible, c.Visible)
	}
	_, s.HasTTFT = r.TTFT()
	_, s.HasTTP = r.TTP()
	return s
}

// TestMeasuresLikeBench sends the recorded-shape streams of package openai
// through the proxy with goodput's own client and checks the proxy's record
// has the same chunks, visibility, token counts and error as the client's.
func TestMeasuresLikeBench(t *testing.T) {
	files, err := filepath.Glob("../wire/openai/testdata/streams/*.sse")
	if err != nil || len(files) == 0 {
		t.Skip("no recorded-shape streams in ../wire/openai/testdata/streams")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, &pieceWriter{status: 200, header: sseHeader(), pieces: [][]byte{body}}, nil)
			endpoint := "/v1/chat/completions"
			if strings.Contains(f, "completions") {
				endpoint = "/v1/completions"
			}
			c, err := openai.NewClient(wire.Config{BaseURL: h.front.URL, Endpoint: endpoint, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := &wire.Request{ID: "r1", Prompt: "hello"}
			b, err := c.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			var client runlog.Record
			c.Stream(context.Background(), req, b, &client)
			got := h.waitRecords(1)[0]
			want := shapeOf(&client)
			if client.PromptTokens == 0 {
				want.Prompt = 1 // the proxy's estimate of "hello" when usage has none
			}
			if diff := cmp.Diff(want, shapeOf(&got)); diff != "" {
				t.Errorf("proxy record differs from the client's (-client +proxy):\n%s", diff)
			}
			if got.ID != "r1" {
				t.Errorf("record ID = %q; want the client's x-request-id r1", got.ID)
			}
			if got.Model != "m" {
				t.Errorf("record Model = %q; want the model the request named, m", got.Model)
			}
			if got.Sent < got.Intended || (len(got.Chunks) > 0 && got.Chunks[0].T < got.Sent) || got.End < got.Sent {
				t.Errorf("times out of order: intended %d sent %d first chunk %v end %d", got.Intended, got.Sent, got.Chunks, got.End)
			}
		})
	}
}

// genStream builds the upstream's answer for seed: status, headers, body,
// the pieces it is written in, pauses between pieces, and the error class
// the proxy should record.
type genned struct {
	status    int
	header    http.Header
	body      []byte
	pieces    [][]byte
	pauses    []time.Duration
	wantClass runlog.ErrorClass
	streamed  bool // the request asks for a stream
}

func genStream(seed uint64) genned {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	g := genned{status: 200, header: sseHeader(), streamed: true}
	g.header.Set("X-Upstream-Seed", strconv.FormatUint(seed, 10))
	var b bytes.Buffer
	kind := rng.IntN(100)
	switch {
	case kind < 8:
		g.status, g.wantClass = 429, runlog.ErrHTTP429
		g.header = http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}}
		b.WriteString(`{"error":{"message":"slow down","type":"rate_limit"}}`)
	case kind < 14:
		g.status, g.wantClass = 503, runlog.ErrHTTP5xx
		g.header = http.Header{"Content-Type": {"text/plain"}}
		b.WriteString("overloaded\n")
	case kind < 19:
		g.streamed = false
		g.header = http.Header{"Content-Type": {"application/json"}}
		b.WriteString(`{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	default:
		nl := "\n"
		if rng.IntN(5) == 0 {
			nl = "\r\n"
		}
		ev := func(s string) { b.WriteString("data: " + s + nl + nl) }
		ev(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
		n := 1 + rng.IntN(30)
		for i := range n {
			if rng.IntN(10) == 0 {
				b.WriteString(": keep-alive" + nl)
			}
			txt := make([]rune, 1+rng.IntN(6))
			alphabet := []rune("ab \"\\é漢😀\t")
			for j := range txt {
				txt[j] = alphabet[rng.IntN(len(alphabet))]
			}
			js, _ := json.Marshal(string(txt))
			if kind < 22 && i == n/2 {
				ev(`{"choices":[{"index":0,"delta":{"content":` + string(js[:len(js)/2]))
				g.wantClass = runlog.ErrMalformed
				break
			}
			ev(`{"choices":[{"index":0,"delta":{"content":` + string(js) + `}}]}`)
		}
		switch {
		case g.wantClass != "":
		case kind < 26: // cut: no finish, no [DONE]
			g.wantClass = runlog.ErrStream
		default:
			ev(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			ev(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, 5+rng.IntN(3000), n))
			ev("[DONE]")
		}
	}
	g.body = b.Bytes()
	for rest := g.body; len(rest) > 0; {
		n := 1 + rng.IntN(min(len(rest), 200))
		g.pieces = append(g.pieces, rest[:n])
		g.pauses = append(g.pauses, 0)
		if rng.IntN(8) == 0 {
			g.pauses[len(g.pauses)-1] = time.Duration(rng.IntN(300)) * time.Microsecond
		}
		rest = rest[n:]
	}
	return g
}

// reqBody is the request the client sends for seed, with irregular
// spacing so that a proxy that re-encoded it would be caught.
func reqBody(seed uint64, streamed bool) []byte {
	return fmt.Appendf(nil, `{ "model" : "m%d",  "stream":%t, "seed": %d, "messages":[{"role":"user","content":"say \u00e9 %d"}] }`,
		seed%3, streamed, seed, seed)
}

// TestByteExactRandomStreams sends 1,000 random responses (streams cut at
// random points and paced at random, error statuses, JSON answers) through
// the proxy and checks the client gets every status, header and byte the
// upstream sent, the upstream gets every request byte the client sent, and
// every streamed request leaves one record of the expected class.
func TestByteExactRandomStreams(t *testing.T) {
	const n = 1000
	var mismatches sync.Map
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Seed   uint64 `json:"seed"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		if want := reqBody(req.Seed, req.Stream); !bytes.Equal(body, want) {
			mismatches.Store(req.Seed, fmt.Sprintf("upstream got body %q; want %q", body, want))
		}
		if got := r.Header.Get("Authorization"); got != "Bearer k-"+strconv.FormatUint(req.Seed, 10) {
			mismatches.Store(req.Seed, fmt.Sprintf("upstream got Authorization %q", got))
		}
		g := genStream(req.Seed)
		for k, v := range g.header {
			w.Header()[k] = v
		}
		w.WriteHeader(g.status)
		for i, p := range g.pieces {
			if _, err := w.Write(p); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if g.pauses[i] > 0 {
				time.Sleep(g.pauses[i]) // pacing only; nothing asserts on time
			}
		}
	})
	h := newHarness(t, up, nil)
	var wg sync.WaitGroup
	seeds := make(chan uint64)
	wantRecords, wantClasses := 0, map[runlog.ErrorClass]int{}
	for s := range uint64(n) {
		if g := genStream(s); g.streamed {
			wantRecords++
			wantClasses[g.wantClass]++
		}
	}
	for range 32 {
		wg.Go(func() {
			for seed := range seeds {
				g := genStream(seed)
				hdr := http.Header{"Authorization": {"Bearer k-" + strconv.FormatUint(seed, 10)}}
				resp, body, err := h.post(context.Background(), "/v1/chat/completions", reqBody(seed, g.streamed), hdr)
				if err != nil {
					t.Errorf("seed %d: %v", seed, err)
					continue
				}
				if resp.StatusCode != g.status {
					t.Errorf("seed %d: status = %d; want %d", seed, resp.StatusCode, g.status)
				}
				for k := range g.header {
					if got, want := resp.Header.Values(k), g.header.Values(k); !cmp.Equal(got, want) {
						t.Errorf("seed %d: header %s = %q; want %q", seed, k, got, want)
					}
				}
				if !bytes.Equal(body, g.body) {
					t.Errorf("seed %d: client got %d bytes %q; want %d bytes %q", seed, len(body), body, len(g.body), g.body)
				}
			}
		})
	}
	for s := range uint64(n) {
		seeds <- s
	}
	close(seeds)
	wg.Wait()
	mismatches.Range(func(k, v any) bool {
		t.Errorf("seed %v: %v", k, v)
		return true
	})
	recs := h.waitRecords(wantRecords)
	gotClasses := map[runlog.ErrorClass]int{}
	for _, r := range recs {
		gotClasses[r.ErrorClass]++
	}
	if diff := cmp.Diff(wantClasses, gotClasses); diff != "" {
		t.Errorf("records by error class (-want +got):\n%s", diff)
	}
	total := testutil.ToFloat64(h.p.unmeasured.WithLabelValues(promexport.RouteChat, "2xx"))
	if want := float64(n - wantRecords); total != want {
		t.Errorf("unmeasured 2xx chat requests = %v; want %v (the non-streamed ones)", total, want)
	}
}

// TestClientDisconnectCancelsUpstream cuts the client off mid-stream and
// checks the upstream's request is cancelled and the record says so.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	upCancelled := make(chan struct{})
	release := make(chan struct{})
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(events(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(upCancelled)
		case <-release:
		}
	})
	h := newHarness(t, up, nil)
	t.Cleanup(func() {
		select {
		case <-upCancelled:
		default:
			close(release)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.front.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true}`))
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatalf("first byte: %v", err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-upCancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream request not cancelled 10 s after the client went away")
	}
	rec := h.waitRecords(1)[0]
	if rec.ErrorClass != runlog.ErrCancelled || len(rec.Chunks) != 1 {
		t.Errorf("record = class %q, %d chunks; want cancelled with the 1 chunk that passed", rec.ErrorClass, len(rec.Chunks))
	}
}

// TestUpstreamFailuresPassThrough checks that what the upstream answers,
// however bad, reaches the client as sent, and that failures with no
// answer become 502/504; each leaves a record of its class.
func TestUpstreamFailuresPassThrough(t *testing.T) {
	streamReq := []byte(`{"model":"m","stream":true,"prompt":"x"}`)
	tests := []struct {
		name       string
		up         http.Handler
		mod        func(*Options)
		wantStatus int
		wantBody   string
		wantHeader http.Header
		wantClass  runlog.ErrorClass
		wantErr    bool // the client's body read fails (the stream was cut)
	}{
		{
			name:       "503 with body",
			up:         &pieceWriter{status: 503, header: http.Header{"Content-Type": {"application/json"}, "X-Why": {"busy"}}, pieces: [][]byte{[]byte(`{"error":"busy"}`)}},
			wantStatus: 503, wantBody: `{"error":"busy"}`, wantHeader: http.Header{"X-Why": {"busy"}},
			wantClass: runlog.ErrHTTP5xx,
		},
		{
			name:       "429 with retry-after",
			up:         &pieceWriter{status: 429, header: http.Header{"Retry-After": {"7"}}, pieces: [][]byte{[]byte("later")}},
			wantStatus: 429, wantBody: "later", wantHeader: http.Header{"Retry-After": {"7"}},
			wantClass: runlog.ErrHTTP429,
		},
		{
			name:       "400",
			up:         &pieceWriter{status: 400, pieces: [][]byte{[]byte("bad")}},
			wantStatus: 400, wantBody: "bad", wantClass: runlog.ErrHTTP4xx,
		},
		{
			name: "error event mid-stream",
			up: &pieceWriter{status: 200, header: sseHeader(), pieces: [][]byte{events(
				`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"error":{"message":"engine died"}}`)}},
			wantStatus: 200,
			wantBody:   string(events(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"error":{"message":"engine died"}}`)),
			wantClass:  runlog.ErrStream,
		},
		{
			name: "stream cut by the upstream",
			up: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				conn, bw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				ev := events(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`)
				fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(ev), ev)
				bw.Flush()
			}),
			wantStatus: 200, wantClass: runlog.ErrStream, wantErr: true,
		},
		{
			name:       "connection refused",
			mod:        func(o *Options) { o.Upstream = "http://" + closedAddr(t) },
			wantStatus: 502, wantClass: runlog.ErrConnect,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.up, tt.mod)
			resp, body, err := h.post(context.Background(), "/v1/completions", streamReq, nil)
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("client body read error = %v; want error %t", err, tt.wantErr)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d; want %d", resp.StatusCode, tt.wantStatus)
			}
			if !tt.wantErr && tt.wantBody != "" && string(body) != tt.wantBody {
				t.Errorf("body = %q; want %q", body, tt.wantBody)
			}
			for k, v := range tt.wantHeader {
				if got := resp.Header.Values(k); !cmp.Equal(got, v) {
					t.Errorf("header %s = %q; want %q", k, got, v)
				}
			}
			rec := h.waitRecords(1)[0]
			if rec.ErrorClass != tt.wantClass {
				t.Errorf("record class = %q (%s); want %q", rec.ErrorClass, rec.Error, tt.wantClass)
			}
		})
	}
}

// TestUpstreamHeaderTimeout checks the optional header timeout answers 504
// and records a timeout.
func TestUpstreamHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	h := newHarness(t, up, func(o *Options) { o.UpstreamHeaderTimeout = 20 * time.Millisecond })
	t.Cleanup(func() { close(release) })
	resp, _, err := h.post(context.Background(), "/v1/chat/completions", []byte(`{"stream":true}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("status = %d; want 504", resp.StatusCode)
	}
	if rec := h.waitRecords(1)[0]; rec.ErrorClass != runlog.ErrTimeout {
		t.Errorf("record class = %q; want timeout", rec.ErrorClass)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestOtherRequestsPassUntouched checks paths and methods the proxy does
// not measure: exact pass-through, counted as unmeasured, no record.
func TestOtherRequestsPassUntouched(t *testing.T) {
	var gotPath, gotQuery, gotHost string
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery, gotHost = r.URL.Path, r.URL.RawQuery, r.Host
		w.Header().Set("X-Up", "1")
		w.WriteHeader(201)
		io.Copy(w, r.Body)
	})
	h := newHarness(t, up, nil)
	resp, body, err := h.post(context.Background(), "/v1/audio/speech?x=1", []byte("raw bytes \x00\xff"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || string(body) != "raw bytes \x00\xff" || resp.Header.Get("X-Up") != "1" {
		t.Errorf("response = %d %q X-Up=%q; want 201, the echoed body, X-Up=1", resp.StatusCode, body, resp.Header.Get("X-Up"))
	}
	if gotPath != "/v1/audio/speech" || gotQuery != "x=1" || gotHost != h.up.Listener.Addr().String() {
		t.Errorf("upstream saw path %q query %q host %q", gotPath, gotQuery, gotHost)
	}
	if got := testutil.ToFloat64(h.p.unmeasured.WithLabelValues(promexport.RouteOther, "2xx")); got != 1 {
		t.Errorf("unmeasured other 2xx = %v; want 1", got)
	}
	if n := len(h.records()); n != 0 {
		t.Errorf("records = %d; want 0", n)
	}
}

// TestInjectUsage checks --inject-usage: the upstream is asked for usage,
// the client does not see the usage chunk it did not ask for, and the
// record has the server's exact counts.
func TestInjectUsage(t *testing.T) {
	role := `{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`
	a := `{"choices":[{"index":0,"delta":{"content":"a"}}]}`
	fin := `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
	usage := `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}`
	tests := []struct {
		name       string
		req        string
		wantUp     map[string]any // stream_options the upstream must see
		wantClient []byte
	}{
		{
			name:       "client did not ask",
			req:        `{"model":"m","stream":true,"prompt":"x"}`,
			wantUp:     map[string]any{"include_usage": true},
			wantClient: events(role, a, fin, "[DONE]"),
		},
		{
			name:       "other stream options kept",
			req:        `{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":false}}`,
			wantUp:     map[string]any{"include_usage": true, "continuous_usage_stats": true},
			wantClient: events(role, a, fin, "[DONE]"),
		},
		{
			name:       "client asked itself",
			req:        `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
			wantUp:     map[string]any{"include_usage": true},
			wantClient: events(role, a, fin, usage, "[DONE]"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := events(role, a, fin, usage, "[DONE]")
			var upErr error
			pw := &pieceWriter{status: 200, header: sseHeader(), check: func(r *http.Request, body []byte) {
				var got struct {
					StreamOptions map[string]any `json:"stream_options"`
				}
				if err := json.Unmarshal(body, &got); err != nil || !cmp.Equal(got.StreamOptions, tt.wantUp) {
					upErr = fmt.Errorf("upstream got %s; want stream_options %v", body, tt.wantUp)
				}
				if r.ContentLength != int64(len(body)) {
					upErr = fmt.Errorf("upstream Content-Length %d for a %d-byte body", r.ContentLength, len(body))
				}
			}}
			// Pieces split inside events, so stripping must reassemble.
			for i := 0; i < len(stream); i += 7 {
				pw.pieces = append(pw.pieces, stream[i:min(i+7, len(stream))])
			}
			h := newHarness(t, pw, func(o *Options) { o.InjectUsage = true })
			_, body, err := h.post(context.Background(), "/v1/completions", []byte(tt.req), nil)
			if err != nil {
				t.Fatal(err)
			}
			if upErr != nil {
				t.Error(upErr)
			}
			if !bytes.Equal(body, tt.wantClient) {
				t.Errorf("client got %q; want %q", body, tt.wantClient)
			}
			rec := h.waitRecords(1)[0]
			if rec.TokenSource != runlog.TokensUsage || rec.CompletionTokens != 4 || rec.PromptTokens != 9 || !rec.OK() {
				t.Errorf("record = %s %d/%d tokens %q; want usage 9/4 tokens, ok", rec.TokenSource, rec.PromptTokens, rec.CompletionTokens, rec.ErrorClass)
			}
		})
	}
}

// TestSecretsNeverLeak sends credentials in headers and the query to an
// upstream that echoes them in errors, and checks no log line, record or
// metric holds any of them — while the upstream still gets them.
func TestSecretsNeverLeak(t *testing.T) {
	secrets := []string{"sk-live-S3CRET1abc", "azure-S3CRET2", "query-S3CRET3", "upstream-S3CRET4"}
	var upAuth string
	var mu sync.Mutex
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		upAuth = r.Header.Get("Authorization") + " " + r.Header.Get("Api-Key") + " " + r.URL.RawQuery
		mu.Unlock()
		echo := strings.Join(secrets, " ")
		if strings.Contains(r.URL.Path, "chat") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(events(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"error":{"message":"bad key `+echo+`"}}`))
			return
		}
		http.Error(w, "bad key "+echo, http.StatusUnauthorized)
	})
	dir := t.TempDir()
	recPath := filepath.Join(dir, "records.jsonl")
	h := newHarness(t, up, func(o *Options) {
		o.Records = recPath
		o.Upstream += "/?api_key=" + secrets[3]
	})
	hdr := http.Header{
		"Authorization": {"Bearer " + secrets[0]},
		"Api-Key":       {secrets[1]},
		"X-Request-Id":  {"id-" + secrets[0]},
	}
	for _, path := range []string{"/v1/chat/completions?key=" + secrets[2], "/v1/completions?key=" + secrets[2]} {
		if _, _, err := h.post(context.Background(), path, []byte(`{"model":"m","stream":true}`), hdr); err != nil {
			t.Fatal(err)
		}
	}
	// A failure with no response, logged with its URL by net/http.
	h.p.upstream.Host = closedAddr(t)
	if _, _, err := h.post(context.Background(), "/v1/completions?key="+secrets[2], []byte(`{"stream":true}`), hdr); err != nil {
		t.Fatal(err)
	}
	h.waitRecords(3)
	mu.Lock()
	if !strings.Contains(upAuth, secrets[0]) || !strings.Contains(upAuth, secrets[1]) || !strings.Contains(upAuth, secrets[2]) {
		t.Errorf("upstream got credentials %q; want them all passed through", upAuth)
	}
	mu.Unlock()
	h.close()
	recs, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		fmt.Fprintln(&metrics, mf.String())
	}
	for name, text := range map[string]string{"records": string(recs), "logs": h.logs.String(), "metrics": metrics.String()} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contain the secret %q:\n%s", name, s, text)
			}
		}
	}
	if !strings.Contains(string(recs), "error event: bad key [redacted]") {
		t.Errorf("records lack the scrubbed error message:\n%s", recs)
	}
}

// TestRunServesAndStops runs the whole server: proxy and metrics
// listeners, a request through, a scrape, and a clean stop on cancel.
func TestRunServesAndStops(t *testing.T) {
	up := &pieceWriter{status: 200, header: sseHeader(), pieces: [][]byte{events(
		`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[{"index":0,"delta":{"content":"b"}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")}}
	upSrv := newHarness(t, up, nil).up // only its upstream
	ctx, cancel := context.WithCancel(context.Background())
	type urls struct{ proxy, metrics string }
	ready := make(chan urls, 1)
	done := make(chan error, 1)
	recPath := filepath.Join(t.TempDir(), "r.jsonl")
	go func() {
		done <- Run(ctx, Options{
			Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", Upstream: upSrv.URL, Records: recPath,
			Ready: func(p, m string) { ready <- urls{p, m} },
		})
	}()
	var u urls
	select {
	case u = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp, err := c.Post(u.proxy+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mresp, err := c.Get(u.metrics)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	want := `goodput_requests_total{input_bucket="<1K",model="m",route="/v1/chat/completions",status_class="2xx"} 1`
	if !strings.Contains(string(text), want) {
		t.Errorf("metrics lack %s:\n%s", want, text)
	}
	c.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v; want nil after cancel", err)
	}
	f, err := os.Open(recPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meta, recs, _, err := runlog.ReadAll(f, recPath)
	if err != nil || meta == nil || meta.Command != "proxy" || len(recs) != 1 || recs[0].CompletionTokens != 2 {
		t.Errorf("records file: meta %+v, %d records, err %v; want a proxy meta and 1 record of 2 tokens", meta, len(recs), err)
	}
}

func TestRunClosesIdleClientConnections(t *testing.T) {
	up := &pieceWriter{status: 200, header: sseHeader(), pieces: [][]byte{events(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, "[DONE]")}}
	upSrv := newHarness(t, up, nil).up
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Listen: "127.0.0.1:0", Upstream: upSrv.URL, ClientIdleTimeout: 50 * time.Millisecond,
			Ready: func(p, _ string) { ready <- p },
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	var u string
	select {
	case u = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m","stream":true}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// Kept alive, then idle: the proxy must close it, not hold it forever.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("read on an idle kept-alive connection = %v; want EOF (closed by the proxy)", err)
	}
}
