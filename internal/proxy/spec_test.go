package proxy

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/setting"
)

func TestSpecErrors(t *testing.T) {
	ok := func(f func(*Spec)) Spec {
		s := Spec{Upstream: "http://x", RecordsMaxBytes: 1, MaxModels: 1, Buckets: "1024", LogLevel: "info"}
		f(&s)
		return s
	}
	for _, c := range []struct {
		spec Spec
		args []string
		want string
	}{
		{ok(func(*Spec) {}), nil, ""},
		{ok(func(s *Spec) { s.Goodput = []string{"ttft:10"} }), []string{"tpot:5"}, ""},
		{ok(func(s *Spec) { s.Upstream = "" }), nil, "Upstream is required, e.g. Upstream http://127.0.0.1:8000"},
		{ok(func(s *Spec) { s.Upstream = "ftp://x" }), nil, `Upstream "ftp://x": not a server URL: want http(s)://host[:port][/path]`},
		{ok(func(*Spec) {}), []string{"ttft:5"}, `unexpected argument "ttft:5" (SLO terms follow Goodput, e.g. Goodput ttft:2000 tpot:50)`},
		{ok(func(s *Spec) { s.Goodput = []string{"ttft:10"} }), []string{"x"}, `unexpected argument "x" (SLO terms follow Goodput`},
		{ok(func(s *Spec) { s.Goodput = []string{"ttft:abc"} }), nil, "Goodput: "},
		{ok(func(s *Spec) { s.Buckets = "0" }), nil, "Buckets: "},
		{ok(func(s *Spec) { s.RecordsMaxBytes = 0 }), nil, "RecordsMaxBytes 0: want > 0"},
		{ok(func(s *Spec) { s.RecordsKeep = -1 }), nil, "RecordsKeep -1: want ≥ 0"},
		{ok(func(s *Spec) { s.MaxModels = 0 }), nil, "MaxModels 0: want > 0"},
		{ok(func(s *Spec) { s.UpstreamHeaderTimeout = -time.Second }), nil, "UpstreamHeaderTimeout -1s: want ≥ 0"},
		{ok(func(s *Spec) { s.ShutdownGrace = -time.Second }), nil, "ShutdownGrace -1s: want ≥ 0"},
		{ok(func(s *Spec) { s.LogLevel = "loud" }), nil, `LogLevel "loud": want debug, info, warn or error`},
	} {
		_, _, err := c.spec.Options(c.args)
		var se *setting.Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v; want none", c.spec, err)
		case c.want != "" && (!errors.As(err, &se) || len(se.Error()) < len(c.want) || se.Error()[:len(c.want)] != c.want):
			t.Errorf("%+v %v: %v; want a *setting.Error %q", c.spec, c.args, err, c.want)
		}
	}
}

func TestSpecRunNotesItsAddresses(t *testing.T) {
	var se *setting.Error
	if err := (Spec{}).Run(t.Context(), nil, "v", io.Discard); !errors.As(err, &se) {
		t.Fatalf("Run of no upstream = %v; want a setting error", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stderr strings.Builder
	s := Spec{Listen: "127.0.0.1:0", Upstream: "http://127.0.0.1:1", RecordsMaxBytes: 1, MaxModels: 1, Buckets: "none", LogLevel: "warn"}
	if err := s.Run(ctx, nil, "v", &stderr); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got := stderr.String(); !strings.Contains(got, "→ http://127.0.0.1:1") || !strings.Contains(got, "metrics are not served") {
		t.Errorf("stderr %q: want the proxy's address and no metrics noted", got)
	}
}
