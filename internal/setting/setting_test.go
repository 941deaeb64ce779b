package setting

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	flag := func(f string) string { return "--" + strings.ToLower(f) }
	cases := []struct {
		err        *Error
		paths, cli string
	}{
		{Errorf("Min", "0", "want ≥ %d", 1), "Min 0: want ≥ 1", "--min 0: want ≥ 1"},
		{Errorf("Rule", "", "needs %v", Name("Max")), "Rule: needs Max", "--rule: needs --max"},
		{Errorf("", "", "%v and %v: give one", Name("A"), Name("B")), "A and B: give one", "--a and --b: give one"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.paths {
			t.Errorf("Error() = %q, want %q", got, c.paths)
		}
		if got := c.err.Render(flag); got != c.cli {
			t.Errorf("Render = %q, want %q", got, c.cli)
		}
	}
}

func TestWithinPrefixesEveryField(t *testing.T) {
	err := Within("Cluster.", fmt.Errorf("wrapped: %w", Errorf("Min", "0", "above %v", Name("Max"))))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Within lost the *Error: %v", err)
	}
	if got, want := e.Error(), "Cluster.Min 0: above Cluster.Max"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := e.Fields(); len(got) != 2 || got[0] != "Cluster.Min" || got[1] != "Cluster.Max" {
		t.Errorf("Fields = %v", got)
	}
	plain := errors.New("plain")
	if Within("X", plain) != plain {
		t.Error("Within changed an error that is not an *Error")
	}
}

func TestGivenNil(t *testing.T) {
	var g Given
	if g.Has("X") {
		t.Error("a nil Given knows of no setting")
	}
	if !Given(func(f string) bool { return f == "X" }).Has("X") {
		t.Error("Given lost its answer")
	}
}

// TestNearest: a word within two edits of a known one (case aside)
// suggests it; an exact, a far or a tiny word suggests nothing.
func TestNearest(t *testing.T) {
	known := []string{"random", "sharegpt", "num-prompts", "lengths"}
	for w, want := range map[string]string{
		"shargpt": "sharegpt", "ShareGTP": "sharegpt", "num-promts": "num-prompts", "randm": "random",
		"sharegpt": "", "conversations": "", "x": "",
	} {
		if got := Nearest(w, known); got != want {
			t.Errorf("Nearest(%q) = %q; want %q", w, got, want)
		}
	}
	if got := DidYouMean("lenghts", known); got != " (did you mean lengths?)" {
		t.Errorf("DidYouMean(lenghts) = %q", got)
	}
}
