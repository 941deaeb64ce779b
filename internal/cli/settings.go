package cli

import (
	"errors"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/setting"
)

// Flags are bound straight to the fields of the libraries' settings
// structs; a library names the field at fault by its path in the struct
// it checked (a *setting.Error). The flag bound to that field's address
// names it back, so no table repeats what the flag declarations say.

// targeter is a flag value of ours that fills a field other than itself.
type targeter interface{ target() any }

// flagAddr is the address the flag value v writes to, 0 if unknown.
func flagAddr(v pflag.Value) uintptr {
	if t, ok := v.(targeter); ok {
		return reflect.ValueOf(t.target()).Pointer()
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return 0
	}
	// pflag's slice values hold a pointer to the slice they fill.
	if e := rv.Elem(); e.Kind() == reflect.Struct {
		if f := e.FieldByName("value"); f.IsValid() && f.Kind() == reflect.Pointer {
			return f.Pointer()
		}
	}
	return rv.Pointer()
}

// fieldAddr is the address of the field at path in *root, 0 where the
// path names no field or crosses a nil pointer.
func fieldAddr(root any, path string) uintptr {
	v := reflect.ValueOf(root)
	for _, name := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return 0
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return 0
		}
		if v = v.FieldByName(name); !v.IsValid() {
			return 0
		}
	}
	if !v.CanAddr() {
		return 0
	}
	return v.UnsafeAddr()
}

// flagsOf are the flags of fs bound to the field at path in *root, those
// given first, then in the order they were declared.
func flagsOf(fs *pflag.FlagSet, root any, path string) []string {
	addr := fieldAddr(root, path)
	if addr == 0 || fs == nil {
		return nil
	}
	var given, rest []string
	sorted := fs.SortFlags
	fs.SortFlags = false
	fs.VisitAll(func(f *pflag.Flag) {
		if flagAddr(f.Value) != addr {
			return
		}
		if f.Changed {
			given = append(given, f.Name)
		} else {
			rest = append(rest, f.Name)
		}
	})
	fs.SortFlags = sorted
	return append(given, rest...)
}

// givenIn says which fields of *root a flag of fs set.
func givenIn(fs *pflag.FlagSet, root any) setting.Given {
	return func(path string) bool {
		for _, name := range flagsOf(fs, root, path) {
			if fs.Changed(name) {
				return true
			}
		}
		return false
	}
}

// settingError makes a *setting.Error about the fields of *root a usage
// error whose line names the flags bound to them (a field no flag fills
// keeps its path); any other error passes as it is.
func settingError(fs *pflag.FlagSet, root any, err error) error {
	var se *setting.Error
	if !errors.As(err, &se) {
		return err
	}
	first := ""
	line := se.Render(func(path string) string {
		names := flagsOf(fs, root, path)
		if len(names) == 0 {
			return path
		}
		if first == "" {
			first = "--" + names[0]
		}
		return "--" + names[0]
	})
	return &flagUsage{flag: first, err: usagef("%s", line)}
}
