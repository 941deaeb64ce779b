package cli

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
)

func TestSpecFlags(t *testing.T) {
	got := sim.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	registerEngineFlags(fs, &got)
	args := []string{"--num-speculative-tokens=3", "--spec-acceptance=0.8", "--spec-draft=eagle", "--spec-draft-cost-frac=0.1"}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q) = %v", args, err)
	}
	want := sim.DefaultConfig()
	want.SpecTokens, want.SpecAcceptance, want.SpecDraft, want.SpecDraftCostFrac = 3, 0.8, "eagle", 0.1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config after %q (-want +got):\n%s", args, diff)
	}
}

// Every speculative-decoding field error names its flag.
func TestSpecFlagErrors(t *testing.T) {
	for _, field := range []string{"num-speculative-tokens", "spec-acceptance", "spec-draft", "spec-draft-cost-frac"} {
		err := flagError(&sim.ConfigError{Field: field, Err: errors.New("bad")}, "--model")
		if want := "--" + field + ": bad"; err == nil || err.Error() != want {
			t.Errorf("flagError(%s) = %v; want %q", field, err, want)
		}
	}
}
