package simserve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/tokenize"
)

// testConfig is a small real engine: Llama-3.1-8B on an H100, whose
// iterations take a few ms of wall time, so tests with tens of tokens finish
// in well under a second.
func testConfig() sim.Config { return sim.DefaultConfig() }

// startServer runs s on an httptest server on 127.0.0.1 and stops both when
// the test ends.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		cancel()
		<-done
		hs.Close()
	})
	return hs.URL
}

func newTestServer(t *testing.T, cfg sim.Config, opt Options) (*Server, string) {
	t.Helper()
	s, err := New(cfg, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, startServer(t, s)
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

// streamChunk is the part of a streamed chunk the tests look at.
type streamChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Role             *string `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// readStream parses an SSE response body into chunks, checking it ends with
// [DONE].
func readStream(t *testing.T, body io.Reader) []streamChunk {
	t.Helper()
	rd := sse.NewReader(body, func() int64 { return 0 }, 0)
	var out []streamChunk
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			t.Fatalf("stream ended without [DONE] after %d chunks", len(out))
		}
		if err != nil {
			t.Fatalf("reading stream: %v", err)
		}
		if string(ev.Data) == "[DONE]" {
			return out
		}
		var c streamChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatalf("chunk %q: %v", ev.Data, err)
		}
		out = append(out, c)
	}
}

// summary condenses a stream: visible and hidden text, the token-carrying
// chunk count, the finish reason and the last usage seen.
type summary struct {
	Role       bool
	Content    string
	Reasoning  string
	Pieces     int
	Finish     string
	Usage      *usage
	UsageCount int // chunks that carried usage
}

func summarize(cs []streamChunk) summary {
	var s summary
	for _, c := range cs {
		if c.Usage != nil {
			s.Usage = c.Usage
			s.UsageCount++
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				s.Finish = *ch.FinishReason
			}
			piece := ""
			if ch.Text != nil {
				piece = *ch.Text
				s.Content += piece
			}
			if d := ch.Delta; d != nil {
				if d.Role != nil {
					s.Role = true
				}
				if d.Content != nil {
					piece += *d.Content
					s.Content += *d.Content
				}
				if d.ReasoningContent != nil {
					piece += *d.ReasoningContent
					s.Reasoning += *d.ReasoningContent
				}
			}
			if piece != "" {
				s.Pieces++
			}
		}
	}
	return s
}

func TestStreaming(t *testing.T) {
	cfg := testConfig()
	// Natural lengths with median 4 stay far below min_tokens 60 (see
	// TestNaturalLength).
	_, url := newTestServer(t, cfg, Options{NaturalOutputMedian: 4})
	thinking := testConfig()
	thinking.ReasoningTokens = 3
	_, thinkURL := newTestServer(t, thinking, Options{})

	// "one two three four" is 4 Approx tokens (words of ≤ 5 letters).
	const prompt = "one two three four"
	tests := []struct {
		name     string
		url      string
		endpoint string
		body     string
		// want: the finish reason, completion and reasoning tokens, whether
		// a role chunk comes first, and how many chunks carry usage.
		finish            string
		completion, think int
		role              bool
		usageChunks       int
	}{
		{name: "completions ignore_eos", url: url, endpoint: "/v1/completions",
			body:   `{"prompt":"` + prompt + `","max_tokens":7,"ignore_eos":true,"stream":true}`,
			finish: "length", completion: 7},
		{name: "completions include_usage", url: url, endpoint: "/v1/completions",
			body:   `{"prompt":"` + prompt + `","max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
			finish: "length", completion: 5, usageChunks: 1},
		{name: "completions continuous usage", url: url, endpoint: "/v1/completions",
			body:   `{"prompt":"` + prompt + `","max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
			finish: "length", completion: 4, usageChunks: 4 + 1},
		{name: "chat role first", url: url, endpoint: "/v1/chat/completions",
			body:   `{"messages":[{"role":"user","content":"` + prompt + `"}],"max_completion_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
			finish: "length", completion: 6, role: true, usageChunks: 1},
		{name: "chat reasoning", url: thinkURL, endpoint: "/v1/chat/completions",
			body:   `{"messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
			finish: "length", completion: 8, think: 3, role: true, usageChunks: 1},
		{name: "min_tokens raises a natural stop", url: url, endpoint: "/v1/completions",
			// The natural length of this prompt is below 60 (see
			// TestNaturalLength), min_tokens lifts it, max_tokens is far.
			body:   `{"prompt":"` + prompt + `","max_tokens":2000,"min_tokens":60,"stream":true,"stream_options":{"include_usage":true}}`,
			finish: "stop", completion: 60, usageChunks: 1},
		{name: "natural stop", url: url, endpoint: "/v1/completions",
			body:   `{"prompt":"` + prompt + `","max_tokens":2000,"stream":true}`,
			finish: "stop", completion: sim.NaturalLength(analyzePrompt([]string{prompt}, nil, 0, 0, false).hash, 4)},
		{name: "natural length capped", url: url, endpoint: "/v1/completions",
			body:   `{"prompt":"` + prompt + `","max_tokens":1,"stream":true}`,
			finish: "length", completion: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, context.Background(), tc.url+tc.endpoint, tc.body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status = %d (%s); want 200", resp.StatusCode, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type = %q; want text/event-stream", ct)
			}
			cs := readStream(t, resp.Body)
			s := summarize(cs)
			if tc.role {
				c := cs[0]
				if len(c.Choices) != 1 || c.Choices[0].Delta == nil || c.Choices[0].Delta.Role == nil ||
					c.Choices[0].Delta.Content == nil || *c.Choices[0].Delta.Content != "" {
					t.Errorf("first chat chunk = %+v; want role-only", c)
				}
			}
			if s.Role != tc.role {
				t.Errorf("role chunk = %v; want %v", s.Role, tc.role)
			}
			if s.Finish != tc.finish {
				t.Errorf("finish_reason = %q; want %q", s.Finish, tc.finish)
			}
			// Every filler token is one Approx token, so the text counts to
			// the completion (the <think> markers are not used on chat).
			var tok tokenize.Approx
			if got := tok.Count(s.Content) + tok.Count(s.Reasoning); got != tc.completion {
				t.Errorf("tokens in text = %d; want %d", got, tc.completion)
			}
			if got := tok.Count(s.Reasoning); got != tc.think {
				t.Errorf("reasoning tokens in text = %d; want %d", got, tc.think)
			}
			if s.UsageCount != tc.usageChunks {
				t.Errorf("chunks with usage = %d; want %d", s.UsageCount, tc.usageChunks)
			}
			if tc.usageChunks > 0 {
				want := makeUsage(4, tc.completion, 0, tc.think)
				if diff := cmp.Diff(want, *s.Usage); diff != "" {
					t.Errorf("final usage (-want +got):\n%s", diff)
				}
			}
			// One token per iteration at batch 1: one chunk per token, unless
			// a starved handler fell an iteration behind and sent two tokens
			// in one chunk (TestDeparturesOnSchedule checks the exact timing).
			if s.Pieces < 1 || s.Pieces > tc.completion {
				t.Errorf("token-carrying chunks = %d; want 1..%d", s.Pieces, tc.completion)
			}
		})
	}
}

func TestCompletionsThinkMarkers(t *testing.T) {
	cfg := testConfig()
	cfg.ReasoningTokens = 2
	_, url := newTestServer(t, cfg, Options{})
	resp := post(t, context.Background(), url+"/v1/completions",
		`{"prompt":"hello","max_tokens":4,"ignore_eos":true,"stream":true}`)
	defer resp.Body.Close()
	s := summarize(readStream(t, resp.Body))
	// Raw completions of a thinking model carry the reasoning inline:
	// "<think> w1 w2</think> w3 w4".
	if !strings.HasPrefix(s.Content, "<think> ") || strings.Count(s.Content, "</think> ") != 1 {
		t.Fatalf("text = %q; want <think> ... </think> ...", s.Content)
	}
	after := s.Content[strings.Index(s.Content, "</think>")+len("</think>"):]
	var tok tokenize.Approx
	if got := tok.Count(after); got != 2 {
		t.Errorf("visible tokens after </think> = %d; want 2", got)
	}
}

func TestNonStreaming(t *testing.T) {
	cfg := testConfig()
	cfg.ReasoningTokens = 2
	_, url := newTestServer(t, cfg, Options{})
	t.Run("completions", func(t *testing.T) {
		resp := post(t, context.Background(), url+"/v1/completions",
			`{"model":"llama-3.1-8b","prompt":["one two three"],"max_tokens":5,"ignore_eos":true}`)
		defer resp.Body.Close()
		var got completionResponse
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || got.Object != "text_completion" || len(got.Choices) != 1 {
			t.Fatalf("status %d, response %+v", resp.StatusCode, got)
		}
		if diff := cmp.Diff(makeUsage(3, 5, 0, 2), got.Usage); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
		if got.Choices[0].FinishReason != "length" {
			t.Errorf("finish_reason = %q; want length", got.Choices[0].FinishReason)
		}
	})
	t.Run("chat", func(t *testing.T) {
		resp := post(t, context.Background(), url+"/v1/chat/completions",
			`{"model":"meta-llama/Llama-3.1-8B","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"one two"}]}],"max_tokens":6,"ignore_eos":true}`)
		defer resp.Body.Close()
		var got chatResponse
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || got.Object != "chat.completion" || len(got.Choices) != 1 {
			t.Fatalf("status %d, response %+v", resp.StatusCode, got)
		}
		// Prompt: "be brief" 2 + "one two" 2 = 4 tokens.
		if diff := cmp.Diff(makeUsage(4, 6, 0, 2), got.Usage); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
		m := got.Choices[0].Message
		var tok tokenize.Approx
		if m.ReasoningContent == nil || tok.Count(*m.ReasoningContent) != 2 || m.Content == nil || tok.Count(*m.Content) != 4 {
			t.Errorf("message = %+v; want 2 reasoning and 4 content tokens", m)
		}
	})
}

func TestBadRequests(t *testing.T) {
	cfg := testConfig()
	cfg.MaxModelLen = 100
	_, url := newTestServer(t, cfg, Options{})
	long := strings.Repeat("word ", 100)
	tests := []struct {
		name, endpoint, body string
		status               int
		param                string
	}{
		{"not json", "/v1/completions", `{"prompt":`, 400, ""},
		{"array body", "/v1/completions", `[1,2]`, 400, ""},
		{"empty body", "/v1/completions", ``, 400, ""},
		{"no prompt", "/v1/completions", `{"max_tokens":3}`, 400, "prompt"},
		{"empty prompt", "/v1/completions", `{"prompt":""}`, 400, "prompt"},
		{"batched prompts", "/v1/completions", `{"prompt":["a","b"]}`, 400, "prompt"},
		{"prompt wrong type", "/v1/completions", `{"prompt":{"a":1}}`, 400, "prompt"},
		{"max_tokens zero", "/v1/completions", `{"prompt":"hi","max_tokens":0}`, 400, "max_tokens"},
		{"max_tokens string", "/v1/completions", `{"prompt":"hi","max_tokens":"5"}`, 400, "max_tokens"},
		{"max_tokens fraction", "/v1/completions", `{"prompt":"hi","max_tokens":1.5}`, 400, "max_tokens"},
		{"max_completion_tokens negative", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":-1}`, 400, "max_completion_tokens"},
		{"min over max", "/v1/completions", `{"prompt":"hi","max_tokens":3,"min_tokens":4}`, 400, "min_tokens"},
		{"min negative", "/v1/completions", `{"prompt":"hi","min_tokens":-4}`, 400, "min_tokens"},
		{"n two", "/v1/completions", `{"prompt":"hi","n":2}`, 400, "n"},
		{"stream_options without stream", "/v1/completions", `{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "stream_options"},
		{"no messages", "/v1/chat/completions", `{"prompt":"hi"}`, 400, "messages"},
		{"empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages"},
		{"message without role", "/v1/chat/completions", `{"messages":[{"content":"hi"}]}`, 400, "messages[0].role"},
		{"message content number", "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, 400, "messages[0].content"},
		{"prompt over max_model_len", "/v1/completions", `{"prompt":"` + long + `"}`, 400, "prompt"},
		{"prompt plus max_tokens over max_model_len", "/v1/completions", `{"prompt":"hi there","max_tokens":99}`, 400, "max_tokens"},
		{"unknown model", "/v1/completions", `{"model":"gpt-9","prompt":"hi"}`, 404, "model"},
		{"unknown route", "/v1/audio/speech", `{}`, 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, context.Background(), url+tc.endpoint, tc.body)
			defer resp.Body.Close()
			var e errorBody
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("error body: %v", err)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.status {
				t.Errorf("status = %d (code %d); want %d", resp.StatusCode, e.Error.Code, tc.status)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if param != tc.param {
				t.Errorf("param = %q; want %q (message %q)", param, tc.param, e.Error.Message)
			}
			if e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("error = %+v; want a message and a type", e.Error)
			}
		})
	}
}

func TestAdmissionRejected(t *testing.T) {
	// One running request and room for one waiting: with the first
	// generating and the second queued, the third is refused with 429 at
	// once; the queued one, once streaming, gets its 200 headers.
	cfg := testConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxWaiting = 1
	_, url := newTestServer(t, cfg, Options{RetryAfter: 1500 * time.Millisecond})
	const body = `{"prompt":"hello","max_tokens":100000,"ignore_eos":true,"stream":true}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := post(t, ctx, url+"/v1/completions", body)
	defer first.Body.Close()
	if _, err := bufio.NewReader(first.Body).ReadString('\n'); err != nil { // a token: it runs
		t.Fatal(err)
	}
	// Headers come once the engine has admitted the request to its queue.
	second := post(t, ctx, url+"/v1/completions", body)
	defer second.Body.Close()
	if second.StatusCode != 200 {
		t.Fatalf("second request: status %d; want 200 (queued)", second.StatusCode)
	}
	third := post(t, ctx, url+"/v1/completions", body)
	defer third.Body.Close()
	var e errorBody
	if err := json.NewDecoder(third.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if third.StatusCode != 429 || e.Error.Code != 429 || e.Error.Type != "RateLimitError" {
		t.Errorf("third request: status %d, error %+v; want 429 RateLimitError", third.StatusCode, e.Error)
	}
	// Retry-After is whole seconds, rounded up: 1.5 s → 2.
	if got := third.Header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After = %q; want \"2\"", got)
	}
}

func TestDisconnectAborts(t *testing.T) {
	s, err := New(testConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	aborted := make(chan string, 1)
	s.onAbort = func(id string) { aborted <- id }
	url := startServer(t, s)

	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, url+"/v1/completions", `{"prompt":"hello","max_tokens":100000,"ignore_eos":true,"stream":true}`)
	// Read until the first token arrives, then hang up.
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if strings.HasPrefix(line, "data: {") {
			break
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case id := <-aborted:
		if id != "r1" {
			t.Errorf("aborted %q; want r1", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the engine never saw the abort")
	}
	if got := testutil.ToFloat64(s.m.success["abort"]); got != 1 {
		t.Errorf(`vllm:request_success_total{finished_reason="abort"} = %v; want 1`, got)
	}
}

func TestEndpoints(t *testing.T) {
	cfg := testConfig()
	cfg.MaxModelLen = 4096
	_, url := newTestServer(t, cfg, Options{ServedModelName: "sim-8b", Aliases: []string{"alias"}})
	get := func(path string) (int, string) { return httpGet(t, url+path) }
	t.Run("health", func(t *testing.T) {
		if code, _ := get("/health"); code != 200 {
			t.Errorf("GET /health = %d; want 200", code)
		}
	})
	t.Run("models", func(t *testing.T) {
		code, body := get("/v1/models")
		var m struct {
			Object string
			Data   []struct {
				ID          string `json:"id"`
				Object      string `json:"object"`
				MaxModelLen int    `json:"max_model_len"`
			}
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || code != 200 {
			t.Fatalf("GET /v1/models = %d %s (%v)", code, body, err)
		}
		if m.Object != "list" || len(m.Data) != 1 || m.Data[0].ID != "sim-8b" || m.Data[0].MaxModelLen != 4096 {
			t.Errorf("models = %+v; want one sim-8b with max_model_len 4096", m)
		}
	})
	t.Run("wrong method", func(t *testing.T) {
		if code, body := get("/v1/completions"); code != 405 || !strings.Contains(body, "MethodNotAllowedError") {
			t.Errorf("GET /v1/completions = %d %s; want a 405 error object", code, body)
		}
	})
	t.Run("alias accepted", func(t *testing.T) {
		resp := post(t, context.Background(), url+"/v1/completions", `{"model":"ALIAS","prompt":"hi","max_tokens":1}`)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status = %d; want 200", resp.StatusCode)
		}
	})
	tokenizeTests := []struct {
		name, body string
		count      int
		tokens     []int
	}{
		// "the" and "of" are Approx's word-list ids 0 and 1.
		{"prompt", `{"prompt":"the of"}`, 2, []int{0, 1}},
		{"messages", `{"messages":[{"role":"user","content":"the"},{"role":"user","content":"of"}]}`, 2, []int{0, 1}},
		{"token ids", `{"prompt":[7,8,9]}`, 3, []int{7, 8, 9}},
	}
	for _, tc := range tokenizeTests {
		t.Run("tokenize "+tc.name, func(t *testing.T) {
			resp := post(t, context.Background(), url+"/tokenize", tc.body)
			defer resp.Body.Close()
			var got struct {
				Count       int   `json:"count"`
				MaxModelLen int   `json:"max_model_len"`
				Tokens      []int `json:"tokens"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.Count != tc.count || got.MaxModelLen != 4096 || !cmp.Equal(got.Tokens, tc.tokens) {
				t.Errorf("POST /tokenize %s = %+v; want count %d, max_model_len 4096, tokens %v", tc.body, got, tc.count, tc.tokens)
			}
		})
	}
	t.Run("tokenize bad", func(t *testing.T) {
		resp := post(t, context.Background(), url+"/tokenize", `{"text":"x"}`)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("status = %d; want 400", resp.StatusCode)
		}
	})
}

func TestStartStop(t *testing.T) {
	url, stop, err := Start(context.Background(), "127.0.0.1:0", testConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// A stream in flight when the server stops ends with an error event.
	sresp := post(t, context.Background(), url+"/v1/completions", `{"prompt":"hello","max_tokens":100000,"ignore_eos":true,"stream":true}`)
	br := bufio.NewReader(sresp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- stop() }()
	rest, _ := io.ReadAll(br)
	sresp.Body.Close()
	if !strings.Contains(string(rest), `"code":503`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("stream tail = %q; want a 503 error event then [DONE]", tail(string(rest), 300))
	}
	if err := <-errc; err != nil {
		t.Errorf("stop() = %v; want nil", err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("server still answers after stop")
	}
	if _, _, err := Start(context.Background(), "256.0.0.1:0", testConfig(), Options{}); err == nil {
		t.Error("Start on a bad address succeeded")
	}
	bad := testConfig()
	bad.GPU = "no-such-gpu"
	var ce *sim.ConfigError
	if _, _, err := Start(context.Background(), "127.0.0.1:0", bad, Options{}); !errors.As(err, &ce) || ce.Field != "GPU" {
		t.Errorf("Start(bad gpu) = %v; want a ConfigError for gpu", err)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func TestLagWarningRateLimited(t *testing.T) {
	var l lagLog
	sec := int64(time.Second)
	type call struct {
		at     int64
		behind time.Duration
		warn   bool
		late   int
		worst  time.Duration
	}
	for i, c := range []call{
		{1 * sec, 8 * time.Millisecond, true, 1, 8 * time.Millisecond}, // the first warns at once
		{2 * sec, 20 * time.Millisecond, false, 0, 0},
		{20 * sec, 6 * time.Millisecond, false, 0, 0},
		{31 * sec, 7 * time.Millisecond, true, 3, 20 * time.Millisecond}, // 30 s on: the interval summed up
		{32 * sec, 9 * time.Millisecond, false, 0, 0},
	} {
		warn, late, worst := l.note(c.at, c.behind)
		if warn != c.warn || late != c.late || worst != c.worst {
			t.Errorf("call %d: note(%d s, %v) = %v, %d, %v; want %v, %d, %v", i, c.at/sec, c.behind, warn, late, worst, c.warn, c.late, c.worst)
		}
	}
}

func TestStartClosesIdleConnections(t *testing.T) {
	s, err := New(sim.DefaultConfig(), Options{IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The connection is kept alive, then idle: the server must close it
	// (well before this deadline), not hold it forever.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("read on an idle kept-alive connection = %v; want EOF (closed by the server)", err)
	}
}
