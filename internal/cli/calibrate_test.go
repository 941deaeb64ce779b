package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/run/runtest"
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

// End to end against llama-server's /tokenize: the form is found once and
// kept, and every prompt is fitted exactly with it.
func TestBenchLlamaCppTokenize(t *testing.T) {
	for _, chat := range []bool{false, true} {
		t.Run(fmt.Sprintf("chat=%v", chat), func(t *testing.T) {
			srv, forms := runtest.Scripted{Tokenize: "llama.cpp", Split: true}.Start(t)
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
			srv, _ := runtest.Scripted{NCtx: 2048, Props: props}.Start(t)
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
	srv, _ := runtest.Scripted{NCtx: 2048, Props: true}.Start(t)
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
