// Package cli is goodput's command tree. Each subcommand turns its flags into
// an Options value and calls one function with the command's context; only
// this package touches arguments, the environment and standard streams, and
// it takes them injected (Env) so commands can be tested.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/goodput/goodput/internal/redact"
)

// Exit codes.
const (
	ExitOK    = 0 // success
	ExitRun   = 1 // the run failed
	ExitUsage = 2 // bad flags or arguments
	ExitGate  = 3 // an SLO / --fail-if gate failed
	// ExitInterrupted: the run was interrupted (Ctrl-C, SIGTERM) and
	// reported what finished; 128 + SIGINT, as shells expect.
	ExitInterrupted = 130
)

// Version is the binary's version, set at build time with -ldflags.
var Version = "dev"

// Env is everything a command may take from the process.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Now reads the wall clock (for dates in file names and reports).
	Now func() time.Time
	// TTY says whether Stderr is a terminal (live progress, colour).
	TTY bool
	// Dir is the working directory for relative output paths ("" = cwd).
	Dir string

	console *console // stderr shared by the live line and notes (set by Main)
	// secrets are the credentials a command was given (API key, header
	// values, URL user info): Main wraps Stdout and Stderr to blank them,
	// and every file a run writes goes through them too.
	secrets *redact.Secrets
}

// OSEnv returns the real process environment.
func OSEnv() Env {
	return Env{
		Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Now: time.Now,
		TTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// usageError marks a mistake in flags or arguments (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// interruptedError says the run was cut short by the user (exit code 130);
// what finished was still reported and saved.
type interruptedError struct{ msg string }

func (e interruptedError) Error() string { return "interrupted: " + e.msg }

// GateError is returned when a --fail-if or SLO gate fails (exit code 3).
type GateError struct{ Failed []string }

func (e *GateError) Error() string { return "gate failed: " + strings.Join(e.Failed, "; ") }

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.secrets == nil {
		env.secrets = &redact.Secrets{}
		env.Stdout, env.Stderr = env.secrets.Writer(env.Stdout), env.secrets.Writer(env.Stderr)
	}
	if env.console == nil {
		env.console = newConsole(env.Stderr, env.TTY)
	}
	root := newRoot(env)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "goodput: %v\n", err)
	var ue usageError
	var ge *GateError
	var ie interruptedError
	switch {
	case errors.As(err, &ie):
		return ExitInterrupted
	case errors.As(err, &ge):
		return ExitGate
	case errors.As(err, &ue), isCobraUsage(err):
		return ExitUsage
	default:
		return ExitRun
	}
}

// isCobraUsage recognises cobra's own flag and argument errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "unknown command", "invalid argument", "flag needs an argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func newRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "goodput",
		Short: "LLM serving performance, measured the way users feel it",
		Long: `goodput measures LLM serving the way users feel it: time to first token,
time to first visible token (TTP), time per output token, end-to-end latency,
throughput, and goodput — requests per second that met the SLO.

With no --base-url, "goodput bench" starts an embedded simulated engine on
loopback and benchmarks it, so it runs with no GPU and no network.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	// Every subcommand, listed here rather than registered from its file.
	root.AddCommand(
		newBenchCmd(env), newSweepCmd(env), newServeCmd(env), newSimCmd(env),
		newProxyCmd(env), newReportCmd(env), newCompareCmd(env), newVersionCmd(env),
	)
	return root
}
