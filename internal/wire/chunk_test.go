package wire

import (
	"net/http"
	"testing"
)

func TestTimingGiven(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Timing
		want bool
	}{
		{"none", NoTiming(), false},
		{"zero value", Timing{}, true}, // a zero Timing reads as 0 ns timings: why NoTiming exists
		{"queue only", func() Timing { t := NoTiming(); t.QueueNs = 5; return t }(), true},
		{"prompt count", func() Timing { t := NoTiming(); t.PromptN = 7; return t }(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.Reported(); got != tc.want {
				t.Errorf("%+v.Reported() = %v; want %v", tc.t, got, tc.want)
			}
		})
	}
}

func TestBearerAuth(t *testing.T) {
	h := http.Header{}
	BearerAuth(h, "")
	if len(h) != 0 {
		t.Errorf("BearerAuth(h, \"\") set %v; want nothing", h)
	}
	BearerAuth(h, "k")
	if got := h.Get("Authorization"); got != "Bearer k" {
		t.Errorf("Authorization = %q; want Bearer k", got)
	}
}
