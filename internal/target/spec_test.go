package target

import (
	"errors"
	"testing"

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

func TestSpecErrors(t *testing.T) {
	ok := func() Spec {
		return Spec{Backend: "openai", MaxTokensField: "max_tokens", ContinuousUsage: "auto"}
	}
	cases := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"header", func(s *Spec) { s.Headers = []string{"X-A"} }, `Headers "X-A": want KEY=VALUE`},
		{"extra body", func(s *Spec) { s.ExtraBody = "{nope" }, "ExtraBody: not a JSON object: invalid character 'n' looking for beginning of object key string"},
		{"max tokens field", func(s *Spec) { s.MaxTokensField = "n" }, `MaxTokensField "n": want max_tokens or max_completion_tokens`},
		{"backend", func(s *Spec) { s.Backend = "tgi" }, `Backend "tgi": want ` + protocols.Help()},
		{"usage", func(s *Spec) { s.ContinuousUsage = "maybe" }, `ContinuousUsage "maybe": want auto, on or off`},
	}
	for _, c := range cases {
		s := ok()
		c.edit(&s)
		_, err := s.Build("", Conn{})
		if got := asSettingErr(t, err).Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSpecBuild(t *testing.T) {
	s := Spec{Backend: " VLLM ", MaxTokensField: "max_tokens", ContinuousUsage: "on", Host: "h", Port: 9,
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

func TestSpecForSessions(t *testing.T) {
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
		s := Spec{Backend: c.backend}
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
