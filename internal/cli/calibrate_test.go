package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/tokenize"
)

// foreignServer counts prompts unlike goodput's approximation: 3 tokens of
// template plus 1.3 per approximate token, as a real tokenizer might. With
// tokenizeEndpoint false it has no /tokenize, so only usage tells.
func foreignServer(t *testing.T, tokenizeEndpoint bool) *httptest.Server {
	t.Helper()
	count := func(text string) int {
		return 3 + int(math.Round(1.3*float64(tokenize.Approx{}.Count(text))))
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
			// The probes are 32 and 544 written tokens: the server counts
			// 3+round(41.6) = 45 and 3+round(707.2) = 710, so the fit is
			// r = 665/512 = 1.299 and a = 45 − 1.299×32 = 3.4.
			if !strings.Contains(meta.Tokenizer, "calibrated with "+tc.method) || !strings.Contains(meta.Tokenizer, "3.4 + 1.299") {
				t.Errorf("meta tokenizer = %q; want calibrated with %s to 3.4 + 1.299 × written", meta.Tokenizer, tc.method)
			}
			for _, x := range recs {
				// Rounding one written token is worth 1.3 server tokens.
				if d := x.PromptTokens - x.RequestedPromptTokens; d < -1 || d > 1 {
					t.Errorf("%s: server counted %d prompt tokens; asked %d", x.ID, x.PromptTokens, x.RequestedPromptTokens)
				}
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
		// Uncalibrated: 3 + 1.3 × 1000.
		if recs[0].PromptTokens != 1303 {
			t.Errorf("prompt tokens = %d; want 1303 without calibration", recs[0].PromptTokens)
		}
	})
}
