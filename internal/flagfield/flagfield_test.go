package flagfield

import (
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type inner struct {
	Min  int
	Wait time.Duration
	TP   int
}

type outer struct {
	Rule   string
	Names  []string
	Scale  inner
	Engine inner
	Free   int
}

// own is a flag value that fills a field other than itself.
type own struct{ p *string }

func (o own) Set(s string) error { *o.p = s; return nil }
func (o own) String() string     { return "" }
func (o own) Type() string       { return "string" }
func (o own) Target() any        { return o.p }

func TestFlagsNameTheirFields(t *testing.T) {
	var s outer
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Var(own{&s.Rule}, "rule", "")
	fs.StringArrayVar(&s.Names, "name", nil, "")
	fs.IntVar(&s.Scale.Min, "scale-min", 1, "")
	fs.IntVar(&s.Scale.Min, "min", 1, "alias")
	fs.DurationVar(&s.Scale.Wait, "wait", 0, "")
	fs.IntVar(&s.Engine.TP, "tp", 1, "")
	if err := fs.Parse([]string{"--min", "0", "--name", "a"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want []string
	}{
		{"Rule", []string{"rule"}},
		{"Names", []string{"name"}},
		// The alias given comes first, then the rest in declaration order.
		{"Scale.Min", []string{"min", "scale-min"}},
		// A path of a nested struct, as its library names it.
		{"Wait", []string{"wait"}},
		// A path in a larger struct (run.Config's Engine.TP) finds the
		// field by its longest match, here whole.
		{"Engine.TP", []string{"tp"}},
		{"Cluster.Engine.TP", []string{"tp"}},
		{"Free", nil},
		{"Nope", nil},
	}
	for _, c := range cases {
		if got := Flags(fs, &s, c.path); !slices.Equal(got, c.want) {
			t.Errorf("Flags(%s) = %v; want %v", c.path, got, c.want)
		}
	}
	given := Given(fs, &s)
	for path, want := range map[string]bool{"Scale.Min": true, "Names": true, "Rule": false, "Wait": false, "Nope": false} {
		if got := given(path); got != want {
			t.Errorf("Given(%s) = %v; want %v", path, got, want)
		}
	}
	if Flags(nil, &s, "Rule") != nil {
		t.Error("Flags of no flag set: want none")
	}
}
