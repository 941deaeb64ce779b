package cli

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts under testdata/script run "goodput" as a real
// process: the test binary re-executes itself as the command.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"goodput": func() {
			ctx, stop := InterruptContext(os.Stderr)
			code := Main(ctx, os.Args[1:], OSEnv())
			stop()
			os.Exit(code)
		},
	})
}

// TestScripts runs the CLI acceptance scripts: each subcommand's main paths,
// bad inputs and exit codes, against the embedded simulator.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"status": cmdStatus, "freeport": cmdFreePort},
	})
}

// cmdFreePort runs "freeport VAR": VAR names a loopback port free a
// moment ago, for a script that starts a server in the background and
// must know its address (a fixed port may be taken on a shared machine).
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// cmdStatus runs "status CODE PROG ARGS..." and asserts the exit code, so a
// script can tell a usage error (2) from a run error (1) or a gate (3).
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status %q: not an exit code", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d; want %d", args[1], got, want)
	}
}
