// Package flagfield finds the command-line flags bound to the fields of a
// settings struct: a flag whose value points at a field names it, so a
// library's error about a field, by its Go path (a *setting.Error), can name
// the flag that filled it, and a library can ask which fields were given.
// No table repeats what the flag declarations say.
package flagfield

import (
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/setting"
)

// Targeter is a flag value that fills a field other than itself (a value
// type of the command line's own).
type Targeter interface{ Target() any }

// Addr is the address the flag value v writes to, 0 if unknown.
func Addr(v pflag.Value) uintptr {
	if t, ok := v.(Targeter); ok {
		return reflect.ValueOf(t.Target()).Pointer()
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

// fieldAddrs are the addresses of the fields at path in *root and in every
// struct nested in it (a command's options hold the libraries' specs, and a
// library names a field by its path in its own): the deepest matches last.
func fieldAddrs(root any, path string) []uintptr {
	var addrs []uintptr
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || depth > 8 {
			return
		}
		if a := fieldAt(v, path); a != 0 {
			addrs = append(addrs, a)
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Struct || f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct {
				walk(f, depth+1)
			}
		}
	}
	walk(reflect.ValueOf(root), 0)
	return addrs
}

// fieldAt is the address of the field at path in the struct v, 0 where
// the path names no field there or crosses a nil pointer.
func fieldAt(v reflect.Value, path string) uintptr {
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

// Flags are the flags of fs bound to the field at path in *root, or in
// a struct nested in it, those given first, then in the order declared.
// A path no flag fills is tried without its first element ("Engine.TP" is
// "TP" of whatever struct the engine flags fill), so a library's path in a
// larger struct still finds the flag.
func Flags(fs *pflag.FlagSet, root any, path string) []string {
	if fs == nil {
		return nil
	}
	for p := path; p != ""; {
		if names := boundTo(fs, fieldAddrs(root, p)); len(names) > 0 {
			return names
		}
		_, p, _ = strings.Cut(p, ".")
	}
	return nil
}

// boundTo are the flags of fs filling the first of addrs any flag fills.
func boundTo(fs *pflag.FlagSet, addrs []uintptr) []string {
	sorted := fs.SortFlags
	fs.SortFlags = false
	defer func() { fs.SortFlags = sorted }()
	for _, addr := range addrs {
		var given, rest []string
		fs.VisitAll(func(f *pflag.Flag) {
			switch {
			case Addr(f.Value) != addr:
			case f.Changed:
				given = append(given, f.Name)
			default:
				rest = append(rest, f.Name)
			}
		})
		if names := append(given, rest...); len(names) > 0 {
			return names
		}
	}
	return nil
}

// Given says which fields of *root a flag of fs set.
func Given(fs *pflag.FlagSet, root any) setting.Given {
	return func(path string) bool {
		for _, name := range Flags(fs, root, path) {
			if fs.Changed(name) {
				return true
			}
		}
		return false
	}
}
