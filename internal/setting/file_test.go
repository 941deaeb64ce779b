package setting_test

import (
	"errors"
	"io/fs"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/goodput/goodput/internal/setting"
)

// TestFileError: file, line, part and key lead the message, each left out
// when not known, and the message is one line whatever its cause says.
func TestFileError(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    setting.FileError
		want string
	}{
		{"all", setting.FileError{File: "c.yaml", Line: 3, Part: `pool "big"`, Key: "tp", Err: errors.New("want ≥ 1")}, `c.yaml:3: pool "big": tp: want ≥ 1`},
		{"no part", setting.FileError{File: "w.yaml", Line: 4, Key: "targets[0].model", Err: errors.New("want a string")}, "w.yaml:4: targets[0].model: want a string"},
		{"whole file", setting.FileError{File: "w.yaml", Err: fs.ErrNotExist}, "w.yaml: file does not exist"},
		{"one line", setting.FileError{File: "c.yaml", Line: 2, Err: errors.New("not valid YAML:\n  mapping\tvalues")}, "c.yaml:2: not valid YAML: mapping values"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Error(); got != tt.want {
				t.Errorf("Error() = %q; want %q", got, tt.want)
			}
			if !errors.Is(&tt.e, tt.e.Err) {
				t.Errorf("errors.Is(e, e.Err) = false; want the cause unwrapped")
			}
		})
	}
}

// TestYAMLSyntaxError: the message names the first line the text up to
// which no longer parses, not yaml.v3's line of the enclosing block.
func TestYAMLSyntaxError(t *testing.T) {
	data := []byte("a:\n  b: 1\n  c: [2\n  d: 3\n")
	var v any
	err := yaml.Unmarshal(data, &v)
	if err == nil {
		t.Fatal("the test's YAML parsed")
	}
	// yaml.v3 says line 2, where the mapping holding the bad list began.
	const want = "f.yaml:3: not valid YAML: did not find expected ',' or ']'"
	if got := setting.YAMLSyntaxError("f.yaml", err, data).Error(); got != want {
		t.Errorf("YAMLSyntaxError = %q; want %q", got, want)
	}
}
