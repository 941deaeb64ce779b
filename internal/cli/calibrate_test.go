package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/tokenize"
)

// foreignServer counts prompts unlike goodput's approximation, as a real
// tokenizer might: 3 tokens of template, then the approximate count plus
// one more for every word of 4 letters or more (split into two subwords).
// With tokenizeEndpoint false it has no /tokenize, so only usage tells.
func foreignServer(t *testing.T, tokenizeEndpoint bool) *httptest.Server {
	t.Helper()
	count := func(text string) int {
		n := 3 + tokenize.Approx{}.Count(text)
		for _, w := range strings.Fields(text) {
			if len(w) >= 4 {
				n++
			}
		}
		return n
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"foreign"}]}`)
		case "/tokenize":
			if !tokenizeEndpoint {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"count":%d,"max_model_len":8192}`, count(body.Prompt))
		default:
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\n")
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", count(body.Prompt))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCalibrationMakesPromptLengthsRight(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint bool
		method   string
	}{
		{"tokenize endpoint", true, "/tokenize"},
		{"usage probe", false, "usage of probe requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := foreignServer(t, tc.endpoint)
			dir := t.TempDir()
			rec := filepath.Join(dir, "r.jsonl")
			r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "20", "--random-input-len", "1000",
				"--random-range-ratio", "0.5", "--random-output-len", "1", "--quiet", "--records", rec)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			meta, recs := readRecords(t, rec)
			if !strings.Contains(meta.Tokenizer, "calibrated with "+tc.method) {
				t.Errorf("meta tokenizer = %q; want calibrated with %s", meta.Tokenizer, tc.method)
			}
			for _, x := range recs {
				// With /tokenize every prompt is fitted exactly; usage alone
				// fits a line, and the share of long words varies from
				// prompt to prompt: within 3 %.
				tol := x.RequestedPromptTokens * 3 / 100
				if tc.endpoint {
					tol = 0
				}
				if d := x.PromptTokens - x.RequestedPromptTokens; d < -tol || d > tol {
					t.Errorf("%s: server counted %d prompt tokens; asked %d (tolerance %d)", x.ID, x.PromptTokens, x.RequestedPromptTokens, tol)
				}
			}
			if tc.endpoint && !strings.Contains(meta.Tokenizer, "each prompt fitted to /tokenize (20 checked, 0 not exact)") {
				t.Errorf("meta tokenizer = %q; want every prompt fitted", meta.Tokenizer)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		srv := foreignServer(t, true)
		rec := filepath.Join(t.TempDir(), "r.jsonl")
		r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "3", "--random-input-len", "1000",
			"--random-output-len", "1", "--quiet", "--records", rec, "--calibrate", "off")
		if r.code != ExitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		_, recs := readRecords(t, rec)
		// Uncalibrated, the template and the long words come on top.
		if d := recs[0].PromptTokens - 1000; d < 50 {
			t.Errorf("prompt tokens = %d; want well over 1000 without calibration", recs[0].PromptTokens)
		}
	})
}

// A server whose tokenizer is o200k: with --tokenizer tiktoken:o200k_base
// prompts are exact by construction, and the usage probe confirms it.
func TestExactWithTokenizer(t *testing.T) {
	tok, err := tokenize.Tiktoken("o200k_base")
	if err != nil {
		t.Skipf("tiktoken o200k unavailable: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"o200k-model"}]}`)
		case "/tokenize":
			http.NotFound(w, r)
		default:
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\n")
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", tok.Count(body.Prompt))
		}
	}))
	defer srv.Close()
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "30", "--random-input-len", "1000",
		"--random-range-ratio", "0.9", "--random-output-len", "1", "--tokenizer", "tiktoken:o200k_base", "--quiet", "--records", rec)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	meta, recs := readRecords(t, rec)
	if !strings.Contains(meta.Tokenizer, "tiktoken:o200k_base, exact for the server") {
		t.Errorf("meta tokenizer = %q; want exact for the server", meta.Tokenizer)
	}
	for _, x := range recs {
		if x.PromptTokens != x.RequestedPromptTokens {
			t.Errorf("%s: server counted %d prompt tokens; asked %d", x.ID, x.PromptTokens, x.RequestedPromptTokens)
		}
	}
}

// scripted is a server to calibrate against, as real ones behave. Its
// tokenizer counts 1.25 tokens for every approximate one (rounded down)
// plus BOS, and wraps a chat message in a template: the truth to find is
// server = 1 + 1.25 × written for completions, 1 + 1.25 × (template +
// written) for chat.
type scripted struct {
	// tokenize is how POST /tokenize answers: "" 404 Not Found,
	// "llama.cpp" like llama-server (200 {"tokens": []} to a body without
	// "content"; /apply-template renders chat), "empty" {"tokens": []} to
	// every form, "constant" the same count for every text, "hang" never.
	tokenize string
	// nCtx is the context in tokens (0 unlimited); a prompt past it is,
	// per over: "cap" counted n_ctx in usage, "llama" cut the way
	// llama-server truncates input (whole blocks of half the context
	// dropped), "refuse" answered HTTP 400 like vLLM.
	nCtx int
	over string
	// props serves llama.cpp's /props with n_ctx.
	props bool
	// split counts like foreignServer instead, one more token for each
	// word of 4 letters or more: a count padding with " a" can reach.
	split bool
}

const chatTemplate = "system you are a helpful assistant user %s assistant"

func (sc scripted) count(text string, bos bool) int {
	n := tokenize.Approx{}.Count(text)
	if sc.split {
		for _, w := range strings.Fields(text) {
			if len(w) >= 4 {
				n++
			}
		}
	} else {
		n += n / 4
	}
	if bos {
		n++
	}
	return n
}

// start serves sc; tokenizeForms counts the /tokenize requests by the
// body's text field ("prompt", "content", "messages").
func (sc scripted) start(t *testing.T) (srv *httptest.Server, tokenizeForms func(string) int) {
	t.Helper()
	var mu sync.Mutex
	forms := map[string]int{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt     *string          `json:"prompt"`
			Content    *string          `json:"content"`
			Messages   []openai.Message `json:"messages"`
			AddSpecial bool             `json:"add_special"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		user := ""
		if len(body.Messages) > 0 {
			user = body.Messages[0].Content
		}
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted","owned_by":"llamacpp","meta":{"n_ctx_train":131072}}]}`)
			return
		case "/props":
			if !sc.props {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":%d},"total_slots":1}`, sc.nCtx)
			return
		case "/apply-template":
			if sc.tokenize != "llama.cpp" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"prompt":%q}`, fmt.Sprintf(chatTemplate, user))
			return
		case "/tokenize":
			mu.Lock()
			switch {
			case body.Prompt != nil:
				forms["prompt"]++
			case body.Content != nil:
				forms["content"]++
			case body.Messages != nil:
				forms["messages"]++
			}
			mu.Unlock()
			switch sc.tokenize {
			case "llama.cpp":
				if body.Content == nil {
					fmt.Fprint(w, `{"tokens":[]}`)
					return
				}
				n := sc.count(*body.Content, body.AddSpecial)
				fmt.Fprintf(w, `{"tokens":[%s]}`, strings.TrimSuffix(strings.Repeat("7,", n), ","))
			case "empty":
				fmt.Fprint(w, `{"tokens":[]}`)
			case "constant":
				fmt.Fprint(w, `{"count":5}`)
			case "hang":
				<-r.Context().Done()
			default:
				http.NotFound(w, r)
			}
			return
		}
		chat := body.Messages != nil
		n := 0
		if chat {
			n = sc.count(fmt.Sprintf(chatTemplate, user), true)
		} else if body.Prompt != nil {
			n = sc.count(*body.Prompt, true)
		}
		if sc.nCtx > 0 && n+1 > sc.nCtx {
			switch sc.over {
			case "refuse":
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, you requested %d tokens."}}`, sc.nCtx, n+1)
				return
			case "llama":
				block := sc.nCtx / 2
				n -= (n - block) / block * block
			default:
				n = sc.nCtx
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if chat {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}\n\n")
		} else {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\n")
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", n)
	}))
	t.Cleanup(srv.Close)
	return srv, func(f string) int {
		mu.Lock()
		defer mu.Unlock()
		return forms[f]
	}
}

func newTestClient(t *testing.T, url string, chat bool) *openai.Client {
	t.Helper()
	endpoint := "/v1/completions"
	if chat {
		endpoint = "/v1/chat/completions"
	}
	c, err := openai.NewClient(openai.Config{BaseURL: url, Endpoint: endpoint, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// checkLine fails t unless cal is within a rounding of the scripted
// server's truth: overhead 1 (BOS) and for chat the template, 1.25 per
// token.
func checkLine(t *testing.T, cal tokenize.Calibration, chat bool) {
	t.Helper()
	want := 1.0
	if chat {
		want += 1.25 * float64(tokenize.Approx{}.Count(fmt.Sprintf(chatTemplate, "")))
	}
	if math.Abs(cal.Overhead-want) > 2 || math.Abs(cal.PerToken-1.25) > 0.02 {
		t.Errorf("calibration = %.1f + %.3f × written; want %.0f + 1.250 × written", cal.Overhead, cal.PerToken, want)
	}
}

// Calibration against servers that count in their own ways or cut long
// prompts: the line comes out right, and the description says how it was
// found and what was left out.
func TestCalibrateAgainstServers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sc     scripted
		chat   bool
		method string
		notes  []string // the description contains each
		absent []string // and none of these
	}{
		{"llama.cpp tokenize", scripted{tokenize: "llama.cpp"}, false, "/tokenize",
			[]string{`/tokenize read as {"content"} (llama.cpp)`}, []string{"not used"}},
		{"llama.cpp tokenize, chat", scripted{tokenize: "llama.cpp"}, true, "/tokenize",
			[]string{`/tokenize read as /apply-template, then {"content"} (llama.cpp)`}, []string{"not used"}},
		{"no tokenize", scripted{}, false, "usage of probe requests", nil, []string{"/tokenize", "not used"}},
		{"tokenize answers no tokens", scripted{tokenize: "empty"}, false, "usage of probe requests",
			[]string{`/tokenize not used: POST /tokenize: no body form counted ({"prompt"}: counted no tokens; {"content"} (llama.cpp): counted no tokens`}, nil},
		{"tokenize counts nothing right", scripted{tokenize: "constant"}, true, "usage of probe requests",
			[]string{"/tokenize not used: ", "no more than the 64-token one (5): truncated"}, nil},
		{"2k context in /props", scripted{nCtx: 2048, props: true}, false, "usage of probe requests",
			[]string{"probes up to 1016 written tokens for the server's context of 2048 (/props default_generation_settings.n_ctx)"},
			[]string{"truncated"}},
		{"2k context in /props, chat", scripted{nCtx: 2048, props: true}, true, "usage of probe requests",
			[]string{"probes up to 1016 written tokens for the server's context of 2048"}, []string{"truncated"}},
		{"2k context, capped in usage", scripted{nCtx: 2048}, false, "usage of probe requests",
			[]string{"the 2048-token probe was counted 2048 tokens where the shorter ones predict 2561: truncated: not used"}, nil},
		{"2k context, capped in usage, chat", scripted{nCtx: 2048}, true, "usage of probe requests",
			[]string{"the 2048-token probe was counted 2048 tokens where the shorter ones predict", "truncated: not used"}, nil},
		{"2k context, llama.cpp truncation", scripted{nCtx: 2048, over: "llama"}, false, "usage of probe requests",
			[]string{"the 2048-token probe was counted 1537 tokens where the shorter ones predict 2561: truncated: not used"}, nil},
		{"short context, long probes refused", scripted{nCtx: 600, over: "refuse"}, false, "usage of probe requests",
			[]string{"the 1024-token probe failed (probe request: http_4xx: HTTP 400", "not used"}, nil},
		{"tiny context, long probes refused", scripted{nCtx: 200, over: "refuse"}, true, "usage of probe requests",
			[]string{"the 256-token probe failed", "not used"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := tc.sc.start(t)
			cal, err := calibrate(t.Context(), newTestClient(t, srv.URL, tc.chat), "")
			if err != nil {
				t.Fatal(err)
			}
			desc := cal.describe("")
			t.Log(desc)
			if cal.method != tc.method {
				t.Fatalf("method = %q; want %q (%s)", cal.method, tc.method, desc)
			}
			checkLine(t, cal.cal, tc.chat)
			for _, s := range tc.notes {
				if !strings.Contains(desc, s) {
					t.Errorf("description %q lacks %q", desc, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(desc, s) {
					t.Errorf("description %q has %q", desc, s)
				}
			}
		})
	}
}

// A /tokenize that never answers costs only its own deadline: the probe
// requests then run on theirs, not on an expired context.
func TestCalibrateTokenizeNeverAnswers(t *testing.T) {
	defer func(d time.Duration) { tokenizeWait = d }(tokenizeWait)
	tokenizeWait = 200 * time.Millisecond
	srv, _ := scripted{tokenize: "hang", nCtx: 2048, props: true}.start(t)
	start := time.Now()
	cal, err := calibrate(t.Context(), newTestClient(t, srv.URL, true), "")
	if err != nil {
		t.Fatal(err)
	}
	desc := cal.describe("")
	if cal.method != "usage of probe requests" || !strings.Contains(desc, "/tokenize not used: no answer within 200ms") {
		t.Errorf("description %q; want probe requests after /tokenize's deadline", desc)
	}
	checkLine(t, cal.cal, true)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("calibration took %v; want about the /tokenize deadline", d)
	}
}

// End to end against llama-server's /tokenize: the form is found once and
// kept, and every prompt is fitted exactly with it.
func TestBenchLlamaCppTokenize(t *testing.T) {
	for _, chat := range []bool{false, true} {
		t.Run(fmt.Sprintf("chat=%v", chat), func(t *testing.T) {
			srv, forms := scripted{tokenize: "llama.cpp", split: true}.start(t)
			rec := filepath.Join(t.TempDir(), "r.jsonl")
			args := []string{"bench", "--base-url", srv.URL, "--num-prompts", "10", "--random-input-len", "200",
				"--random-range-ratio", "0.5", "--random-output-len", "1", "--quiet", "--records", rec}
			first := "prompt"
			if chat {
				args = append(args, "--backend", "openai-chat")
				first = "messages"
			}
			r := runCLI(t, t.Context(), nil, args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			meta, recs := readRecords(t, rec)
			for _, want := range []string{"calibrated with /tokenize", "(llama.cpp)", "each prompt fitted to /tokenize (10 checked, 0 not exact)"} {
				if !strings.Contains(meta.Tokenizer, want) {
					t.Errorf("meta tokenizer = %q; want %q", meta.Tokenizer, want)
				}
			}
			for _, x := range recs {
				if x.PromptTokens != x.RequestedPromptTokens {
					t.Errorf("%s: server counted %d prompt tokens; asked %d", x.ID, x.PromptTokens, x.RequestedPromptTokens)
				}
			}
			if n := forms(first); n != 1 {
				t.Errorf("/tokenize got %d %q bodies; want 1 (the form that failed is not retried)", n, first)
			}
		})
	}
}

// The symptom against a 2k-context llama-server: short chat prompts came
// out at about half their length when the long probe was truncated.
func TestBenchShortContextChat(t *testing.T) {
	for _, props := range []bool{false, true} {
		t.Run(fmt.Sprintf("props=%v", props), func(t *testing.T) {
			srv, _ := scripted{nCtx: 2048, props: props}.start(t)
			rec := filepath.Join(t.TempDir(), "r.jsonl")
			r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--backend", "openai-chat", "--num-prompts", "8",
				"--random-input-len", "64", "--random-range-ratio", "0", "--random-output-len", "1", "--quiet", "--records", rec)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			_, recs := readRecords(t, rec)
			for _, x := range recs {
				if d := x.PromptTokens - 64; d < -2 || d > 2 {
					t.Errorf("%s: server counted %d prompt tokens; asked 64", x.ID, x.PromptTokens)
				}
			}
		})
	}
}

// A run that asks for more than the server's context is told so.
func TestBenchWarnsPastContext(t *testing.T) {
	srv, _ := scripted{nCtx: 2048, props: true}.start(t)
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "4", "--random-input-len", "1500",
		"--random-output-len", "1000", "--quiet", "--records", "none")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "4 of 4 requests ask for more than the server's context of 2048 tokens (/props default_generation_settings.n_ctx): prompt + output up to 2500"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q; want %q", r.stderr, want)
	}
}

func TestProbeLengths(t *testing.T) {
	for _, tc := range []struct {
		ctx  int
		want []int
	}{
		{0, []int{64, 256, 1024, 2048}},
		{131072, []int{64, 256, 1024, 2048}},
		{4112, []int{64, 256, 1024, 2048}},
		{4096, []int{64, 256, 1024, 2040}},
		{2048, []int{64, 256, 1016}},
		{600, []int{64, 256}},
		{512, []int{64, 248}},
		{100, []int{10, 42}},
		{10, []int{64, 256, 1024, 2048}},
	} {
		if got := probeLengths(tc.ctx); !slices.Equal(got, tc.want) {
			t.Errorf("probeLengths(%d) = %v; want %v", tc.ctx, got, tc.want)
		}
	}
}
