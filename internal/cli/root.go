// Package cli is goodput's command tree. Each subcommand turns its flags into
// an Options value and calls one function with the command's context; only
// this package touches arguments, the environment and standard streams, and
// it takes them injected (Env) so commands can be tested.
package cli

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/setting"
)

// Exit codes.
const (
	ExitOK    = 0 // success
	ExitRun   = 1 // the run failed
	ExitUsage = 2 // bad flags or arguments
	ExitGate  = 3 // an SLO / --fail-if gate failed
	// ExitInconclusive: no --fail-if bound failed, but one straddles its
	// bound within the figure's confidence interval.
	ExitInconclusive = 4
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

	console *report.Console // stderr shared by the live line and notes (set by Main)
	// secrets are the credentials a command was given: Main blanks them
	// in Stdout, Stderr and every file a run writes.
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

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.secrets == nil {
		env.secrets = &redact.Secrets{}
		env.Stdout, env.Stderr = env.secrets.Writer(env.Stdout), env.secrets.Writer(env.Stderr)
	}
	if env.console == nil {
		env.console = report.NewConsole(env.Stderr, env.TTY)
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
	var ge *runspec.GateError
	var ic *runspec.InconclusiveError
	var ie interruptedError
	switch {
	case errors.As(err, &ie):
		return ExitInterrupted
	case errors.As(err, &ge):
		return ExitGate
	case errors.As(err, &ic):
		return ExitInconclusive
	case errors.As(err, &ue), missingInput(err):
		return ExitUsage
	default:
		return ExitRun
	}
}

// missingInput says err is a file the user named that is not there: a
// usage error in every subcommand, as a misspelt name is. A file goodput
// failed to write (a failure, such as a records file in a missing
// directory) is the run's error instead.
func missingInput(err error) bool {
	var fl failure
	return errors.Is(err, fs.ErrNotExist) && !errors.As(err, &fl)
}

// consoleOf returns env's console, or one of its own for an Env built
// without Main (tests).
func consoleOf(env Env) *report.Console {
	if env.console != nil {
		return env.console
	}
	return report.NewConsole(env.Stderr, env.TTY)
}

func newRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "goodput",
		Short:         "LLM serving performance, measured the way users feel it",
		Long:          helpText("root"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
		// Bare, the root prints its help; an unknown word is a usage
		// error (cobra's own check returns an untyped one).
		Args:                       unknownCommand,
		RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SuggestionsMinimumDistance: 2,
	}
	// Every flag error is a usage error; on the root, where "goodput bnech
	// --num-prompts 5" fails on a flag only bench has, the unknown word is.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if !c.HasParent() {
			if err := unknownCommand(c, c.Flags().Args()); err != nil {
				return err
			}
		}
		return usageError{suggestFlag(c, err)}
	})
	// Every subcommand, listed here rather than registered from its file.
	root.AddCommand(
		newBenchCmd(env), newSweepCmd(env), newServeCmd(env), newSimCmd(env),
		newProxyCmd(env), newReportCmd(env), newCompareCmd(env), newSLOCmd(env), newK8sCmd(env), newWatchCmd(env),
		&cobra.Command{Use: "version", Short: "Print goodput's version, Go version and platform", Args: noArgs,
			RunE: func(*cobra.Command, []string) error {
				_, err := fmt.Fprintf(env.Stdout, "goodput %s (%s %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return err
			}},
	)
	// cobra's help and completion commands, added now (Execute would add
	// them later) so that their arguments are checked as ours are.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Args = helpTopic
		}
	}
	usageArgs(root)
	return root
}

// suggestFlag adds to an unknown flag's error the nearest flag c takes
// ("--num-promts": did you mean --num-prompts?).
func suggestFlag(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedName() == "" {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if near := setting.Nearest(ne.GetSpecifiedName(), names); near != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	return err
}

// unknownCommand is the root's check of its arguments: any is a word that
// names no subcommand.
func unknownCommand(root *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], root.CommandPath())
	if s := root.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return usageError{errors.New(msg)}
}

// helpTopic checks "goodput help TOPIC": the topic must be a command.
func helpTopic(help *cobra.Command, args []string) error {
	root := help.Root()
	if c, _, err := root.Find(args); err != nil || c == root {
		return unknownCommand(root, args)
	}
	return nil
}

// noArgs is the check of a command that takes no arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q: %q takes none", args[0], cmd.CommandPath())
	}
	return nil
}

// usageArgs makes the argument check of c and of every command below it
// return a usage error: cobra's own (cobra.NoArgs, MinimumNArgs, …) return
// untyped ones. A command without a check takes any arguments (cobra checks
// none but the root's).
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ue usageError
			if err != nil && !errors.As(err, &ue) {
				err = usageError{err}
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// groupAnnotation tags a flag with the heading it is listed under in help.
const groupAnnotation = "goodput_group"

// group registers flags into fs under a help heading, so a command with
// sixty flags reads as a few short lists instead of one long one.
func group(fs *pflag.FlagSet, heading string, register func(*pflag.FlagSet)) {
	g := pflag.NewFlagSet(heading, pflag.ContinueOnError)
	g.SortFlags = false // added in the order declared, which names fields (flagsOf)
	register(g)
	g.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[groupAnnotation] = []string{heading}
	})
	fs.AddFlagSet(g)
}

// groupedUsage makes cmd's help list its flags by group, in the order of
// headings; flags of no group are listed first under own.
func groupedUsage(cmd *cobra.Command, own string, headings ...string) {
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage:\n  %s\n", c.UseLine())
		if c.HasAvailableSubCommands() {
			fmt.Fprintf(&b, "  %s [command]\n", c.CommandPath())
		}
		if c.HasExample() {
			fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
		}
		// A command of its own with subcommands (sim and sim fit) names
		// them, as cobra's default help does.
		if c.HasAvailableSubCommands() {
			b.WriteString("\nAvailable Commands:\n")
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() {
					fmt.Fprintf(&b, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
				}
			}
		}
		sets := map[string]*pflag.FlagSet{}
		order := append([]string{own}, headings...)
		for _, h := range order {
			sets[h] = pflag.NewFlagSet(h, pflag.ContinueOnError)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			h := own
			if v := f.Annotations[groupAnnotation]; len(v) == 1 {
				if _, ok := sets[v[0]]; ok {
					h = v[0]
				}
			}
			sets[h].AddFlag(f)
		})
		for _, h := range order {
			if sets[h].HasFlags() {
				fmt.Fprintf(&b, "\n%s:\n%s", h, sets[h].FlagUsages())
			}
		}
		if c.HasAvailableInheritedFlags() {
			fmt.Fprintf(&b, "\nGlobal flags:\n%s", c.InheritedFlags().FlagUsages())
		}
		if c.HasAvailableSubCommands() {
			fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
		}
		_, err := fmt.Fprint(c.OutOrStderr(), b.String())
		return err
	})
}

// atLeast is cobra.MinimumNArgs with a message that says what is missing.
func atLeast(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s (got %d argument(s))", what, len(args))
		}
		return nil
	}
}

// helpFiles are the commands' long help texts, kept as text beside the
// code that registers them.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText is the long help of a command, help/NAME.txt, without its
// final newline.
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("goodput: no help text " + name) // a build defect, caught by every test
	}
	return strings.TrimSuffix(string(b), "\n")
}
