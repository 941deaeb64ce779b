package run

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/target"
)

func TestScrapeForErrors(t *testing.T) {
	scrapes := []struct {
		edit func(*target.Spec)
		want string
	}{
		{func(s *target.Spec) { s.ScrapeInterval = 0 }, "ScrapeInterval 0s: want at least 1ms"},
		{func(s *target.Spec) { s.ServerMetrics = []string{"none", "http://x"} }, "ServerMetrics none: scrape nothing, so give no other ServerMetrics"},
		{func(s *target.Spec) { s.ServerMetrics = []string{"x:9400"} }, `ServerMetrics "x:9400": want an http(s) URL, NAME=URL, or none`},
	}
	for _, c := range scrapes {
		s := target.Spec{ScrapeInterval: time.Second}
		c.edit(&s)
		_, err := ScrapeFor(&s)
		if got := settingErr(t, err).Error(); got != c.want {
			t.Errorf("ScrapeFor: %q, want %q", got, c.want)
		}
	}
}

// TestNewTarget: the run's Target names the target as the built one does
// and opens its client as the run's Backend.
func TestNewTarget(t *testing.T) {
	s := target.Spec{Backend: "openai-chat", Model: "m", MaxTokensField: "max_tokens", ContinuousUsage: "auto", RequestIDPrefix: "p-"}
	built, err := s.Build("http://u:p@h:9", target.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewTarget(built)
	want := Target{BaseURL: "http://u:p@h:9", Name: "http://h:9", API: "openai-chat", Endpoint: "/v1/chat/completions", Model: "m", RequestIDPrefix: "p-"}
	if d := cmp.Diff(want, rt, cmpopts.IgnoreFields(Target{}, "Open")); d != "" {
		t.Errorf("NewTarget (-want +got):\n%s", d)
	}
	b, err := rt.Open(rt.BaseURL, 1, func() int64 { return 0 })
	if err != nil || b == nil {
		t.Fatalf("Open = %v, %v; want a backend", b, err)
	}
	b.Close()
}

// settingErr is err's *setting.Error, failing the test if it is not one.
func settingErr(t *testing.T, err error) *setting.Error {
	t.Helper()
	var se *setting.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *setting.Error", err)
	}
	return se
}
