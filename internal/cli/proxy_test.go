package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestProxyUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no upstream", []string{"proxy"}, "--upstream is required"},
		{"bad upstream", []string{"proxy", "--upstream", "ftp://x"}, "--upstream"},
		{"bad slo", []string{"proxy", "--upstream", "http://x", "--goodput", "ttft:abc"}, "--goodput"},
		{"stray argument", []string{"proxy", "--upstream", "http://x", "ttft:5"}, "unexpected argument"},
		{"bad buckets", []string{"proxy", "--upstream", "http://x", "--buckets", "0"}, "--buckets"},
		{"bad records size", []string{"proxy", "--upstream", "http://x", "--records-max-bytes", "0"}, "--records-max-bytes"},
		{"bad log level", []string{"proxy", "--upstream", "http://x", "--log-level", "loud"}, "--log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now}
			if code := Main(context.Background(), tt.args, env); code != ExitUsage {
				t.Errorf("Main(%q) = %d; want %d (stderr %q)", tt.args, code, ExitUsage, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("Main(%q) stderr = %q; want it to name %q", tt.args, errb.String(), tt.want)
			}
		})
	}
}
