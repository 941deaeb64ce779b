package watch

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/setting"
)

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Config: "w.yaml", Duration: time.Minute}, ""},
		{Spec{Config: "w.yaml", Once: true}, ""},
		{Spec{}, "Config is required: the YAML file listing the targets to watch"},
		{Spec{Config: "w.yaml", Duration: -time.Second}, "Duration -1s: want ≥ 0"},
		{Spec{Config: "w.yaml", Once: true, Duration: time.Minute}, "Once probes every target once: give Duration only to watch continuously"},
	} {
		err := c.spec.Check()
		var se *setting.Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v; want none", c.spec, err)
		case c.want != "" && (!errors.As(err, &se) || !strings.HasPrefix(se.Error(), c.want)):
			t.Errorf("%+v: %v; want a *setting.Error %q", c.spec, err, c.want)
		}
	}
}

// A target's headers go out sorted, its probe's body as JSON.
func TestTargetRequest(t *testing.T) {
	cfg, err := ParseConfig([]byte("targets:\n  - name: a\n    base_url: http://x:1\n    headers: {X-B: b, X-A: a}\n    probe: {extra_body: {top_k: 5}}\n"), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	headers, body, err := cfg.Targets[0].request()
	if err != nil || strings.Join(headers, " ") != "X-A=a X-B=b" || !strings.Contains(body, `"top_k":5`) {
		t.Errorf("request() = %q, %q, %v", headers, body, err)
	}
}

func TestHostTarget(t *testing.T) {
	h := Host{Getenv: func(string) string { return "sk-LEAK" }, Secrets: &redact.Secrets{}}
	var ce *setting.FileError
	if _, err := h.target(&Target{Backend: "nope"}, "http://x", nil, ""); !errors.As(err, &ce) || !strings.HasSuffix(ce.Key, ".backend") {
		t.Errorf("unknown backend: %v; want a FileError of backend", err)
	}
	rt, err := h.target(&Target{Backend: "openai-chat", Model: "m", APIKeyEnv: "K", Timeout: time.Second}, "http://u:pass-LEAK@x", []string{"X-Auth=hdr-LEAK"}, "")
	if err != nil || rt.Endpoint != "/v1/chat/completions" {
		t.Fatalf("target = %+v, %v", rt, err)
	}
	if got := h.Secrets.String("sk-LEAK hdr-LEAK pass-LEAK"); strings.Contains(got, "LEAK") {
		t.Errorf("secrets blank %q: want the key, the header value and the URL's password gone", got)
	}
}

func TestRunNamesAListenNotServed(t *testing.T) {
	dir := t.TempDir()
	cfg := "targets:\n  - name: sim\n    base_url: embedded\n    backend: openai\n"
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := Host{Dir: dir, Stdout: io.Discard, Stderr: io.Discard}
	var oe *setting.OutputError
	_, err := Spec{Config: "w.yaml", Listen: "127.0.0.1:99999", Duration: time.Millisecond}.Run(t.Context(), h, true)
	if !errors.As(err, &oe) || oe.Field != "Listen" || oe.Path != "127.0.0.1:99999" {
		t.Errorf("Run = %v; want an OutputError of Listen", err)
	}
}
