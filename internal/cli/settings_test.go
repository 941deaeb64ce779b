package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/setting"
)

type innerSpec struct {
	Min  int
	Wait time.Duration
}

type outerSpec struct {
	Rule    string
	Names   []string
	Scale   innerSpec
	Unbound int
}

func TestSettingErrorNamesTheBoundFlag(t *testing.T) {
	var s outerSpec
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.StringVar(&s.Rule, "rule", "", "")
	fs.StringArrayVar(&s.Names, "name", nil, "")
	fs.IntVar(&s.Scale.Min, "scale-min", 1, "")
	fs.IntVar(&s.Scale.Min, "min", 1, "alias")
	fs.DurationVar(&s.Scale.Wait, "wait", 0, "")
	if err := fs.Parse([]string{"--min", "0", "--name", "a"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		err  error
		want string
	}{
		// The alias the user typed names the field.
		{setting.Errorf("Scale.Min", "0", "want ≥ 1"), "--min 0: want ≥ 1"},
		{setting.Errorf("Names", "", "needs %v", setting.Name("Rule")), "--name: needs --rule"},
		{setting.Errorf("Scale.Wait", "-1s", "want ≥ 0"), "--wait -1s: want ≥ 0"},
		// A field no flag fills keeps its path.
		{setting.Errorf("Unbound", "", "bad"), "Unbound: bad"},
	}
	for _, c := range cases {
		err := settingError(fs, &s, c.err)
		var ue usageError
		if !errors.As(err, &ue) || err.Error() != c.want {
			t.Errorf("settingError = %v (usage %v), want %q", err, errors.As(err, &ue), c.want)
		}
	}
	plain := errors.New("plain")
	if settingError(fs, &s, plain) != plain {
		t.Error("an error of no setting changed")
	}
	given := flagfield.Given(fs, &s)
	if !given("Scale.Min") || !given("Names") || given("Rule") || given("Scale.Wait") || given("Nope") {
		t.Error("givenIn: want Scale.Min and Names given, nothing else")
	}
}
