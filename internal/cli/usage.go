package cli

import (
	"embed"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

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
		if c.HasExample() {
			fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
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
