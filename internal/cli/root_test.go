package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUsageExitCodes checks that cobra's own errors (flags, subcommands,
// positional arguments) come back as usage errors, exit code 2, with one
// line that says what is wrong.
func TestUsageExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"bench", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"unknown shorthand", []string{"bench", "-Z"}, "unknown shorthand flag: 'Z' in -Z"},
		{"unknown root flag", []string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate" for "goodput"`},
		{"misspelt command", []string{"bnech"}, `unknown command "bnech" for "goodput" (did you mean bench?)`},
		{"misspelt command with its flags", []string{"bnech", "--num-prompts", "5"}, `unknown command "bnech"`},
		{"unknown help topic", []string{"help", "bnech"}, `unknown command "bnech"`},
		{"bad flag value", []string{"bench", "--num-prompts", "many"}, `invalid argument "many" for "--num-prompts" flag`},
		{"bad engine flag value", []string{"sim", "--max-queue-time", "soon"}, `invalid argument "soon" for "--max-queue-time" flag`},
		{"missing flag argument", []string{"bench", "--num-prompts"}, "flag needs an argument: --num-prompts"},
		{"missing positional argument", []string{"compare", "a.jsonl"}, "give two runs to compare"},
		{"no positional argument", []string{"report"}, "give one or more records files"},
		{"stray argument", []string{"serve", "extra"}, `unexpected argument "extra": "goodput serve" takes none`},
		{"stray version argument", []string{"version", "extra"}, `unexpected argument "extra"`},
		{"cobra's own argument check", []string{"completion", "bash", "extra"}, `unknown command "extra" for "goodput completion bash"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, t.Context(), nil, tt.args...)
			if r.code != ExitUsage {
				t.Errorf("goodput %q: exit %d; want %d (stderr %q)", tt.args, r.code, ExitUsage, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("goodput %q: stderr %q; want one line containing %q", tt.args, r.stderr, tt.want)
			}
		})
	}
}

// TestRootHelp checks that the bare root and help on a command still print
// help and succeed.
func TestRootHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"help"}, {"help", "bench"}, {"--help"}, {"bench", "--help"}} {
		r := runCLI(t, t.Context(), nil, args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("goodput %q: exit %d, stdout %.80q, stderr %q; want %d and the help", args, r.code, r.stdout, r.stderr, ExitOK)
		}
	}
}

// TestHelpListsSubcommands walks the command tree: every command's help
// names each of its subcommands (sim's help once hid fit behind its
// grouped flag lists).
func TestHelpListsSubcommands(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			path := strings.Fields(c.CommandPath())[1:]
			r := runCLI(t, t.Context(), nil, append(path, "--help")...)
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(sub.Name()) + `\s`).MatchString(r.stdout) {
				t.Errorf("goodput %s --help does not list %q:\n%s", strings.Join(path, " "), sub.Name(), r.stdout)
			}
			walk(sub)
		}
	}
	walk(newRoot(Env{Stdout: io.Discard, Stderr: io.Discard}))
}

// TestMissingInputFile: a file the user named that is not there is a
// usage error (exit 2) with one line naming it, in every subcommand that
// reads one (report and compare once said 1, bench 2).
func TestMissingInputFile(t *testing.T) {
	for _, args := range [][]string{
		{"report", "nope.jsonl"},
		{"compare", "nope.json", "nope2.json"},
		{"bench", "--dataset-name", "sharegpt", "--dataset-path", "nope.json"},
		{"sim", "--dataset-name", "sharegpt", "--dataset-path", "nope.json"},
		{"sim", "--cluster", "nope.yaml"},
		{"sim", "fit", "nope.jsonl"},
		{"watch", "--config", "nope.yaml"},
	} {
		r := runCLI(t, t.Context(), nil, args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != ExitUsage || !strings.HasPrefix(lines[len(lines)-1], "goodput: ") || !strings.Contains(lines[len(lines)-1], "nope") {
			t.Errorf("goodput %q: exit %d, stderr %q; want %d and a line naming the file", args, r.code, r.stderr, ExitUsage)
		}
	}
}
