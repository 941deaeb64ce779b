package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBenchRetryAfterADay answers every request 429 asking to come back in
// a day (Retry-After, or OpenAI's reset header): bench --duration 1s
// --retries 1 must end with its duration, not wait the day, and say why
// its retries were cut.
func TestBenchRetryAfterADay(t *testing.T) {
	for name, header := range map[string][2]string{
		"retry-after": {"Retry-After", "86400"},
		"reset":       {"X-Ratelimit-Reset-Requests", "23h59m59s"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/completions") {
					http.NotFound(w, r)
					return
				}
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set(header[0], header[1])
				w.Header().Set("X-Ratelimit-Remaining-Requests", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"error":{"message":"come back tomorrow"}}`)
			}))
			t.Cleanup(srv.Close)
			r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--model", "m", "--duration", "1s", "--request-rate", "5",
				"--retries", "1", "--records", "none")
			if !strings.Contains(r.stderr, "retries not sent: they were due after the level's duration (1s) ended") {
				t.Errorf("stderr does not say the retries were cut:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, "wait longer than 1m0s before a retry (up to 2") {
				t.Errorf("stderr does not say the advertised wait was capped:\n%s", r.stderr)
			}
		})
	}
}
