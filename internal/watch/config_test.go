package watch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

const goodConfig = `# two vendors
interval: 30s
slo: "ttft:2000 tpot:50"
objective: 0.995
probe:
  prompt_tokens: 256
  max_tokens: 32
targets:
  - name: vendor-a
    base_url: https://api.vendor-a.example
    backend: openai-chat
    model: model-a
    api_key_env: VENDOR_A_KEY
    headers:
      OpenAI-Beta: probes
  - name: vendor-b
    base_url: http://127.0.0.1:8000
    backend: openai
    interval: 1m
    timeout: 20s
    slo: "ttft:1000"
    objective: 0.9
    probe:
      prompt: "Say hello."
      reasoning_effort: low
      extra_body: {temperature: 0}
`

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(goodConfig), "watch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{
			Name: "vendor-a", BaseURL: "https://api.vendor-a.example", Backend: "openai-chat", Model: "model-a",
			APIKeyEnv: "VENDOR_A_KEY", Headers: map[string]string{"OpenAI-Beta": "probes"},
			SLO: stats.SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond}, Objective: 0.995,
			Interval: 30 * time.Second, Timeout: 30 * time.Second,
			Probe: Probe{PromptTokens: 256, MaxTokens: 32},
		},
		{
			Name: "vendor-b", BaseURL: "http://127.0.0.1:8000", Backend: "openai",
			SLO: stats.SLO{TTFT: time.Second}, Objective: 0.9, Interval: time.Minute, Timeout: 20 * time.Second,
			// The target's prompt replaces the inherited prompt_tokens;
			// max_tokens is still inherited.
			Probe: Probe{Prompt: "Say hello.", MaxTokens: 32, ReasoningEffort: "low", ExtraBody: map[string]any{"temperature": 0}},
		},
	}
	if diff := cmp.Diff(want, cfg.Targets, cmpopts.IgnoreUnexported(Target{})); diff != "" {
		t.Errorf("ParseConfig targets (-want +got):\n%s", diff)
	}
	if got := cfg.Targets[1].Probe.Body(); !cmp.Equal(got, map[string]any{"temperature": 0, "reasoning_effort": "low"}) {
		t.Errorf("Probe.Body() = %v", got)
	}
	if got := cfg.Targets[0].FieldError("backend", errors.New("nope")).Error(); got != "watch.yaml:11: targets[0].backend: nope" {
		t.Errorf("FieldError(backend) = %q", got)
	}
	// A field not written points at the target's own line.
	if got := cfg.Targets[1].FieldError("api_key_env", errors.New("x")).Error(); got != "watch.yaml:16: targets[1].api_key_env: x" {
		t.Errorf("FieldError(api_key_env) = %q", got)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte("targets:\n  - {name: a, base_url: embedded}\n  - name: b\n    base_url: https://x.example\n    interval: 5m\n"), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Targets[0], cfg.Targets[1]
	if a.Backend != DefaultBackend || a.Interval != DefaultInterval || a.Timeout != DefaultInterval || a.Objective != DefaultObjective ||
		!cmp.Equal(a.Probe, Probe{PromptTokens: DefaultPromptTokens, MaxTokens: DefaultMaxTokens}) || !a.SLO.IsZero() {
		t.Errorf("defaults = %+v", a)
	}
	// The default timeout is the interval, up to a minute.
	if b.Timeout != DefaultMaxTimeout {
		t.Errorf("timeout with a 5m interval = %v; want %v", b.Timeout, DefaultMaxTimeout)
	}
}

func TestParseConfigMergeKey(t *testing.T) {
	// An anchored target merged into the next: shared settings by YAML's
	// own means.
	src := `targets:
  - &base
    name: a
    base_url: https://a.example
    backend: openai
    headers: {X-Team: sre}
  - <<: *base
    name: b
`
	cfg, err := ParseConfig([]byte(src), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Targets[1]
	if b.Name != "b" || b.BaseURL != "https://a.example" || b.Backend != "openai" || b.Headers["X-Team"] != "sre" {
		t.Errorf("merged target = %+v", b)
	}
}

func TestParseConfigErrors(t *testing.T) {
	target := "targets:\n  - name: a\n    base_url: https://a.example\n"
	for _, tc := range []struct {
		name, src, want string
	}{
		{"empty", "", "w.yaml: targets: the file is empty"},
		{"not yaml", "targets: [\n", "w.yaml:1: not valid YAML: "},
		{"no targets", "interval: 30s\n", "w.yaml:1: targets: missing: want a list of targets"},
		{"empty targets", "targets: []\n", "w.yaml:1: targets: want a non-empty list"},
		{"unknown top key", "intervall: 30s\n" + target, `w.yaml:1: unknown field "intervall" (did you mean interval?)`},
		{"unknown target key", target + "    modle: x\n", `w.yaml:4: targets[0]: unknown field "modle" (did you mean model?)`},
		{"unknown probe key", target + "    probe: {tokens: 3}\n", `w.yaml:4: targets[0].probe: unknown field "tokens" (want one of prompt_tokens, prompt, max_tokens, reasoning_effort, extra_body)`},
		{"duplicate key", target + "    name: b\n", "w.yaml:4: targets[0].name: given twice"},
		{"bad interval", target + "    interval: 3x\n", `w.yaml:4: targets[0].interval: "3x" is not a duration: want a number with a unit, e.g. 30s or 1m`},
		{"interval without unit", "interval: 30\n" + target, `w.yaml:1: interval: "30" is not a duration`},
		{"zero timeout", target + "    timeout: 0s\n", "w.yaml:4: targets[0].timeout: 0s: want a duration > 0"},
		{"bad slo", target + "    slo: ttft=2000\n", `w.yaml:4: targets[0].slo: slo "ttft=2000": want name:milliseconds`},
		{"global bad slo", "slo: \"foo:1\"\n" + target, `w.yaml:1: slo: slo "foo:1": unknown metric "foo"`},
		{"bad objective", target + "    objective: 1\n", `w.yaml:4: targets[0].objective: "1": want the share of probes that must be good, between 0 and 1`},
		{"no name", "targets:\n  - base_url: https://a.example\n", "w.yaml:2: targets[0].name: missing"},
		{"bad name", "targets:\n  - name: a/b\n    base_url: https://a.example\n", `w.yaml:2: targets[0].name: "a/b": want 1 to 64 letters`},
		{"duplicate name", target + "  - name: a\n    base_url: https://b.example\n", `w.yaml:4: targets[1].name: "a" is also targets[0]'s`},
		{"no base_url", "targets:\n  - name: a\n", "w.yaml:2: targets[0].base_url: missing"},
		{"bad base_url", "targets:\n  - name: a\n    base_url: api.example.com\n", `w.yaml:3: targets[0].base_url: "api.example.com": want an http(s) URL`},
		{"user in base_url", "targets:\n  - name: a\n    base_url: https://u:hunter22@api.example.com\n", `w.yaml:3: targets[0].base_url: "https://api.example.com": no user or password`},
		{"bad endpoint", target + "    endpoint: v1/chat\n", `w.yaml:4: targets[0].endpoint: "v1/chat": want a request path starting with /`},
		{"key as api_key_env", target + "    api_key_env: sk-abc123-secret\n", "w.yaml:4: targets[0].api_key_env: want the NAME of the environment variable"},
		{"credential header", target + "    headers: {Authorization: Bearer sk-secret}\n", "w.yaml:4: targets[0].headers.Authorization: a credential header"},
		{"header twice", target + "    headers: {X-A: 1, x-a: 2}\n", "w.yaml:4: targets[0].headers.x-a: given twice"},
		{"header line break", target + "    headers: {X-A: \"a\\nb\"}\n", "w.yaml:4: targets[0].headers.X-A: the value holds a control character"},
		{"bad header name", target + "    headers: {\"X A\": 1}\n", `w.yaml:4: targets[0].headers: "X A" is not an HTTP header name`},
		{"headers not a mapping", target + "    headers: [a]\n", "w.yaml:4: targets[0].headers: want a mapping"},
		{"prompt and tokens", target + "    probe: {prompt_tokens: 3, prompt: hi}\n", "w.yaml:4: targets[0].probe.prompt: give prompt or prompt_tokens, not both"},
		{"bad max_tokens", target + "    probe: {max_tokens: 0}\n", `w.yaml:4: targets[0].probe.max_tokens: "0": want a whole number of tokens`},
		{"empty prompt", target + "    probe: {prompt: \" \"}\n", "w.yaml:4: targets[0].probe.prompt: empty"},
		{"bad reasoning", target + "    probe: {reasoning_effort: \"very high\"}\n", `w.yaml:4: targets[0].probe.reasoning_effort: "very high": want a word`},
		{"reserved body", target + "    probe: {extra_body: {stream: false}}\n", `w.yaml:4: targets[0].probe.extra_body: "stream" is the probe's own`},
		{"body not json", target + "    probe:\n      extra_body: {a: {1: x}}\n", "w.yaml:5: targets[0].probe.extra_body: not expressible as JSON"},
		{"target not a mapping", "targets: [x]\n", "w.yaml:1: targets[0]: want a mapping of name, base_url"},
		{"string wanted", target + "    model: [x]\n", "w.yaml:4: targets[0].model: want a string"},
		{"null wanted string", target + "    model:\n", "w.yaml:4: targets[0].model: want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.src), "w.yaml")
			var ce *setting.FileError
			if !errors.As(err, &ce) {
				t.Fatalf("ParseConfig = %v; want a *setting.FileError", err)
			}
			got := err.Error()
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("ParseConfig error = %q; want it to start %q", got, tc.want)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("ParseConfig error %q is more than one line", got)
			}
			for _, secret := range []string{"sk-secret", "sk-abc123", "hunter22"} {
				if strings.Contains(got, secret) {
					t.Errorf("ParseConfig error %q shows a secret", got)
				}
			}
		})
	}
}

// FuzzParseConfig checks that no input crashes the parser, that every
// error is one *setting.FileError line, and that a config it accepts holds what
// the rest of the package relies on.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("targets:\n  - {name: a, base_url: embedded}\n"))
	f.Add([]byte("targets:\n  - &b {name: a, base_url: embedded}\n  - <<: *b\n    name: c\n"))
	f.Add([]byte("targets: [\n"))
	f.Add([]byte("probe: {extra_body: {a: [1, {b: c}]}}\ntargets:\n  - {name: a, base_url: 'http://h'}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, "f.yaml")
		if err != nil {
			var ce *setting.FileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *setting.FileError", err)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "f.yaml") {
				t.Fatalf("error %q: want one line starting with the file", msg)
			}
			return
		}
		if len(cfg.Targets) == 0 {
			t.Fatal("accepted a config with no targets")
		}
		names := map[string]bool{}
		for _, tg := range cfg.Targets {
			switch {
			case names[tg.Name]:
				t.Fatalf("name %q twice", tg.Name)
			case !targetName.MatchString(tg.Name):
				t.Fatalf("bad name %q accepted", tg.Name)
			case tg.Interval <= 0 || tg.Timeout <= 0:
				t.Fatalf("interval %v, timeout %v accepted", tg.Interval, tg.Timeout)
			case !(tg.Objective > 0 && tg.Objective < 1):
				t.Fatalf("objective %v accepted", tg.Objective)
			case tg.Probe.MaxTokens < 1 || (tg.Probe.Prompt == "") == (tg.Probe.PromptTokens == 0):
				t.Fatalf("probe %+v accepted", tg.Probe)
			case tg.Backend == "":
				t.Fatal("empty backend accepted")
			}
			names[tg.Name] = true
			_ = tg.FieldError("backend", errors.New("x")).Error()
		}
	})
}
