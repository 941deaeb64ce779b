package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Now: time.Now, Getenv: func(string) string { return "" }}
	if code := Main(context.Background(), []string{"version"}, env); code != 0 {
		t.Fatalf("goodput version: exit %d, stderr %q", code, errb.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "goodput "+Version+" (go") {
		t.Errorf("goodput version printed %q; want goodput %s (go…)", got, Version)
	}
}
