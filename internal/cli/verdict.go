package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runspec"
)

// verdictFlags are bench's and sim's (sweep has its own); gate is --fail-if parsed.
type verdictFlags struct {
	runspec.VerdictSpec
	gate gate.Gate
}

func (v *verdictFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&v.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'p99_ttft_ms>500' or 'request_goodput<10' (repeatable); exit 4 when the figure's interval straddles the bound")
	registerReadingSpeed(fs, &v.ReadingSpeedMs)
}

// registerReadingSpeed adds --reading-speed-ms as every command judging a run names it.
func registerReadingSpeed(fs *pflag.FlagSet, ms *float64) {
	fs.Float64Var(ms, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
}

// parse checks the flags, --fail-if's keys against the result out saves, before the run.
func (v *verdictFlags) parse(out *outputFlags, args []string) error {
	so, err := out.Options(args)
	if err == nil {
		v.gate, err = v.Check(so, &out.OutputSpec)
	}
	return err
}

// outputs is how a finished run is reported; interrupted is the line an interrupted run ends with.
type outputs struct {
	out          *outputFlags
	levelReports bool
	gate         gate.Gate
	interrupted  func(res *run.Result) string
	before       func(res *run.Result)
}

// finish reports res (runspec.OutputSpec.Finish); its outcome's error tells the exit code.
func (o *outputs) finish(env Env, res *run.Result, runErr error) error {
	summary := env.Stdout
	if recordsToStdout(o.out.Records) {
		// Stdout carries the records: the summary must not interleave
		// with them (bench marks stderr's lines as its own then).
		summary = env.Stderr
	}
	err := o.out.Finish(res, runErr, runspec.FinishOptions{Stdout: summary, Terminal: run.TerminalOptions{TermOptions: termOptions(env), LevelReports: o.levelReports},
		Before: o.before, Note: func(s string) { fmt.Fprintln(env.Stderr, "goodput: "+s) }, Output: o.out.runOutput(env), Now: env.Now, Gate: o.gate})
	if errors.Is(err, runspec.ErrInterrupted) {
		return interruptedError{o.interrupted(res)}
	}
	return err
}

// prefixLines writes each line to w behind prefix, unless the line
// already starts with it (goodput's notes do).
type prefixLines struct {
	w      io.Writer
	prefix string
	mid    bool // inside a line: its prefix is written
}

func (p *prefixLines) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if !p.mid {
			if !bytes.HasPrefix(b, []byte(p.prefix)) {
				if _, err := io.WriteString(p.w, p.prefix); err != nil {
					return n - len(b), err
				}
			}
			p.mid = true
		}
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, p.mid = b[:i+1], false
		}
		if _, err := p.w.Write(line); err != nil {
			return n - len(b), err
		}
		b = b[len(line):]
	}
	return n, nil
}

// recordsToStdout says the records file named is the process's stdout.
func recordsToStdout(path string) bool {
	switch filepath.Clean(path) {
	case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}

// termOptions are the terminal's: a TTY, and no colour when NO_COLOR is set.
func termOptions(env Env) report.TermOptions {
	return report.TermOptions{TTY: env.TTY, NoColor: env.Getenv != nil && env.Getenv("NO_COLOR") != ""}
}
