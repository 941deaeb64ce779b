package wire

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxAdvertisedWait bounds a believable advertised wait: a day. A header
// claiming more is taken as no advice rather than a day-long stall.
const maxAdvertisedWait = 24 * time.Hour

// RetryAfter is the wait a rate-limited (or overloaded) answer's headers
// advertise, 0 when they give none that can be believed. In order of
// precedence:
//
//   - retry-after-ms: milliseconds, as OpenAI sends;
//   - Retry-After: seconds or an HTTP date (RFC 9110);
//   - the reset of an exhausted limit: OpenAI's x-ratelimit-reset-requests
//     and -tokens ("1s", "6m0s", "20ms"), Anthropic's
//     anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset
//     (RFC 3339 instants). A limit whose -remaining header is 0 is the one
//     that was hit; when no remaining count says which, the longest reset.
//
// now is the client's wall clock, for the dates and instants.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 && ms <= float64(maxAdvertisedWait/time.Millisecond) {
			return time.Duration(math.Round(ms * float64(time.Millisecond)))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			if s >= 0 && s <= int64(maxAdvertisedWait/time.Second) {
				return time.Duration(s) * time.Second
			}
		} else if t, err := http.ParseTime(v); err == nil {
			return believable(t.Sub(now))
		}
	}
	var hit, any time.Duration
	for _, l := range limitHeaders {
		d := l.reset(h.Get(l.resetKey), now)
		if d <= 0 {
			continue
		}
		any = max(any, d)
		if rem := strings.TrimSpace(h.Get(l.remainingKey)); rem == "0" {
			hit = max(hit, d)
		}
	}
	if hit > 0 {
		return hit
	}
	return any
}

// limitHeader is one rate limit's reset and remaining headers, and how its
// reset reads.
type limitHeader struct {
	resetKey, remainingKey string
	reset                  func(v string, now time.Time) time.Duration
}

var limitHeaders = []limitHeader{
	{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Remaining-Requests", resetDuration},
	{"X-Ratelimit-Reset-Tokens", "X-Ratelimit-Remaining-Tokens", resetDuration},
	{"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Remaining", resetInstant},
	{"Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Remaining", resetInstant},
	{"Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Remaining", resetInstant},
	{"Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Remaining", resetInstant},
}

// resetDuration reads OpenAI's reset, a Go-style duration ("6m0s"); a bare
// number is seconds.
func resetDuration(v string, _ time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil {
		return believable(d)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s <= maxAdvertisedWait.Seconds() {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

// resetInstant reads Anthropic's reset, an RFC 3339 instant.
func resetInstant(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0
	}
	return believable(t.Sub(now))
}

// believable is d when it is a wait worth reporting: positive and under
// maxAdvertisedWait; 0 otherwise.
func believable(d time.Duration) time.Duration {
	if d <= 0 || d > maxAdvertisedWait {
		return 0
	}
	return d
}
