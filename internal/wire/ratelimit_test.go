package wire

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"ms wins over seconds", map[string]string{"Retry-After": "7", "retry-after-ms": "1500.5"}, 1500500 * time.Microsecond},
		{"http date", map[string]string{"Retry-After": "Tue, 01 Dec 2026 12:00:30 GMT"}, 30 * time.Second},
		{"date in the past", map[string]string{"Retry-After": "Tue, 01 Dec 2026 11:00:00 GMT"}, 0},
		{"absurd seconds", map[string]string{"Retry-After": "99999999"}, 0},
		{"negative seconds", map[string]string{"Retry-After": "-3"}, 0},
		{"openai exhausted tokens", map[string]string{
			"x-ratelimit-reset-requests": "20ms", "x-ratelimit-remaining-requests": "59",
			"x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "0"}, 6 * time.Minute},
		{"openai exhausted requests", map[string]string{
			"x-ratelimit-reset-requests": "2s", "x-ratelimit-remaining-requests": "0",
			"x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "100"}, 2 * time.Second},
		{"openai no remaining: longest", map[string]string{"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "1m30.5s"}, 90500 * time.Millisecond},
		{"anthropic instant", map[string]string{
			"anthropic-ratelimit-requests-reset": "2026-12-01T12:00:12Z", "anthropic-ratelimit-requests-remaining": "0",
			"anthropic-ratelimit-tokens-reset": "2026-12-01T12:00:40Z", "anthropic-ratelimit-tokens-remaining": "5000"}, 12 * time.Second},
		{"anthropic garbage", map[string]string{"anthropic-ratelimit-requests-reset": "soon"}, 0},
		{"retry-after beats resets", map[string]string{"Retry-After": "3", "x-ratelimit-reset-tokens": "6m0s"}, 3 * time.Second},
	} {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzRetryAfter checks that no header value panics or yields a wait
// outside (0, a day].
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "1500.5", "Tue, 01 Dec 2026 12:00:30 GMT", "6m0s", "2026-12-01T12:00:12Z", "-1", "1e400", "NaN"} {
		f.Add(s, s, s, s)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms, oa, an string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		h.Set("X-Ratelimit-Reset-Tokens", oa)
		h.Set("Anthropic-Ratelimit-Tokens-Reset", an)
		if d := RetryAfter(h, now); d < 0 || d > maxAdvertisedWait {
			t.Fatalf("RetryAfter = %v, outside [0, %v]", d, maxAdvertisedWait)
		}
	})
}
