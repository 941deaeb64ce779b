package cli

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/goodput/goodput/internal/llamafake"
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
			// The agent trace samples, which sim_jobs runs.
			samples, err := filepath.Abs(filepath.Join("..", "jobgraph", "testdata"))
			e.Setenv("JOBGRAPH_TESTDATA", samples)
			return err
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"status": cmdStatus, "freeport": cmdFreePort,
			"llamafake": cmdLlamaFake},
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

// llamaServers are the scripts' fake llama-servers, by URL.
var llamaServers sync.Map

// cmdLlamaFake runs "llamafake start VAR [slots=N] [threads=N]
// [keepalive=DUR] [tokentime=DUR] [prompttime=DUR] [nocachen] [nometrics]":
// a fake llama-server on loopback for the rest of the script, its URL in
// VAR; and "llamafake check URL key=N..." (keys: threadwaits, slotwaits,
// maxbusy, maxopen, generations; key>=N, key<=N too) asserting what the
// server saw.
func cmdLlamaFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || (args[0] != "start" && args[0] != "check") || (neg && args[0] == "start") {
		ts.Fatalf("usage: llamafake start VAR [key=value...] | llamafake check URL key=N...")
	}
	if args[0] == "check" {
		v, ok := llamaServers.Load(args[1])
		if !ok {
			ts.Fatalf("llamafake check: no server at %s", args[1])
		}
		st := v.(*llamafake.Server).Stats()
		ts.Logf("llamafake stats: %+v", st)
		got := map[string]int{"threadwaits": st.ThreadWaits, "slotwaits": st.SlotWaits, "maxbusy": st.MaxBusy,
			"maxopen": st.MaxOpenConns, "generations": st.Generations, "conns": st.Conns}
		for _, a := range args[2:] {
			op := "="
			for _, o := range []string{">=", "<="} {
				if strings.Contains(a, o) {
					op = o
				}
			}
			k, vs, _ := strings.Cut(a, op)
			want, err := strconv.Atoi(vs)
			g, known := got[k]
			if err != nil || !known {
				ts.Fatalf("llamafake check: bad %q", a)
			}
			ok := g == want
			switch op {
			case ">=":
				ok = g >= want
			case "<=":
				ok = g <= want
			}
			if ok == neg {
				ts.Fatalf("llamafake %s = %d; want %s%d", k, g, op, want)
			}
		}
		return
	}
	var cfg llamafake.Config
	for _, a := range args[2:] {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "slots":
			cfg.Slots, err = strconv.Atoi(v)
		case "threads":
			cfg.Threads, err = strconv.Atoi(v)
		case "keepalive":
			cfg.KeepAlive, err = time.ParseDuration(v)
		case "tokentime":
			cfg.TokenTime, err = time.ParseDuration(v)
		case "prompttime":
			cfg.PromptTime, err = time.ParseDuration(v)
		case "nocachen":
			cfg.NoCacheN = true
		case "nometrics":
			cfg.NoMetrics = true
		default:
			err = errors.New("unknown setting")
		}
		if err != nil {
			ts.Fatalf("llamafake %s: %v", a, err)
		}
	}
	s, err := llamafake.Start(cfg)
	ts.Check(err)
	llamaServers.Store(s.URL, s)
	ts.Defer(func() {
		llamaServers.Delete(s.URL)
		s.Close()
	})
	ts.Setenv(args[1], s.URL)
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
