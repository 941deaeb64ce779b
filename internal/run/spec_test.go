package run

import (
	"errors"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/wire/protocols"
)

func f64(v float64) *float64 { return &v }

// settingErr is err's *setting.Error, failing the test if it is not one.
func asSettingErr(t *testing.T, err error) *setting.Error {
	t.Helper()
	var se *setting.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *setting.Error", err)
	}
	return se
}

func TestTargetSpecErrors(t *testing.T) {
	ok := func() TargetSpec {
		return TargetSpec{Backend: "openai", MaxTokensField: "max_tokens", ContinuousUsage: "auto", ScrapeInterval: time.Second}
	}
	cases := []struct {
		name string
		edit func(*TargetSpec)
		want string
	}{
		{"header", func(s *TargetSpec) { s.Headers = []string{"X-A"} }, `Headers "X-A": want KEY=VALUE`},
		{"extra body", func(s *TargetSpec) { s.ExtraBody = "{nope" }, "ExtraBody: not a JSON object: invalid character 'n' looking for beginning of object key string"},
		{"max tokens field", func(s *TargetSpec) { s.MaxTokensField = "n" }, `MaxTokensField "n": want max_tokens or max_completion_tokens`},
		{"backend", func(s *TargetSpec) { s.Backend = "tgi" }, `Backend "tgi": want ` + protocols.Help()},
		{"usage", func(s *TargetSpec) { s.ContinuousUsage = "maybe" }, `ContinuousUsage "maybe": want auto, on or off`},
	}
	for _, c := range cases {
		s := ok()
		c.edit(&s)
		_, err := s.Build("", Conn{})
		if got := asSettingErr(t, err).Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	scrapes := []struct {
		edit func(*TargetSpec)
		want string
	}{
		{func(s *TargetSpec) { s.ScrapeInterval = 0 }, "ScrapeInterval 0s: want at least 1ms"},
		{func(s *TargetSpec) { s.ServerMetrics = []string{"none", "http://x"} }, "ServerMetrics none: scrape nothing, so give no other ServerMetrics"},
		{func(s *TargetSpec) { s.ServerMetrics = []string{"x:9400"} }, `ServerMetrics "x:9400": want an http(s) URL, NAME=URL, or none`},
	}
	for _, c := range scrapes {
		s := ok()
		c.edit(&s)
		_, err := s.Scrape()
		if got := asSettingErr(t, err).Error(); got != c.want {
			t.Errorf("Scrape: %q, want %q", got, c.want)
		}
	}
}

func TestTargetSpecBuild(t *testing.T) {
	s := TargetSpec{Backend: " VLLM ", MaxTokensField: "max_tokens", ContinuousUsage: "on", Host: "h", Port: 9,
		Temperature: f64(0), ExtraBody: `{"temperature":1}`, ServedModelName: "served", APIKeyEnv: DefaultKeyEnv}
	if got := s.Base(); got != "http://h:9" {
		t.Errorf("Base = %q", got)
	}
	tg, err := s.Build("http://u:p@h:9", Conn{})
	if err != nil {
		t.Fatal(err)
	}
	if tg.API != "openai" || tg.Endpoint != "/v1/completions" || tg.Model != "served" || tg.Name != "http://h:9" {
		t.Errorf("target %+v", tg)
	}
	if body, _ := s.body(); body["temperature"] != 1.0 {
		t.Errorf("body %v: the extra body wins over the sampling parameters", body)
	}
	if s.KeyEnv() != DefaultKeyEnv || s.RequestModel() != "served" {
		t.Errorf("KeyEnv %q, RequestModel %q", s.KeyEnv(), s.RequestModel())
	}
	s.Backend = "anthropic-messages"
	if s.KeyEnv() != "ANTHROPIC_API_KEY" {
		t.Errorf("anthropic's KeyEnv = %q", s.KeyEnv())
	}
}

func TestTargetSpecForSessions(t *testing.T) {
	backend := func(f string) bool { return f == "Backend" }
	cases := []struct {
		backend string
		chained bool
		given   setting.Given
		want    string // the backend after, or the error
	}{
		{"openai", false, nil, "openai-chat"},
		{"openai", true, nil, "openai-responses"},
		{"anthropic-messages", false, backend, "anthropic-messages"},
		{"openai", false, backend, "Backend openai: sessions send their history as a conversation; use openai-chat (the default for sessions), openai-responses or anthropic-messages"},
		{"grpc", false, backend, `Backend "grpc": want ` + protocols.Help()},
	}
	for _, c := range cases {
		s := TargetSpec{Backend: c.backend}
		proto, err := s.ForSessions(c.chained, c.given)
		got := s.Backend
		if err != nil {
			got = asSettingErr(t, err).Error()
		} else if proto == nil || proto.Name() != s.Backend {
			t.Errorf("%+v: protocol %v for backend %s", c, proto, s.Backend)
		}
		if got != c.want {
			t.Errorf("%+v: %q, want %q", c, got, c.want)
		}
	}
}
