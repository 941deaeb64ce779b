package cli

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/run"
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

// flagsOf are the flags of fs bound to the field at path in *root, or in
// a struct nested in it, those given first, then in the order declared.
// A path no flag fills is tried without its first element ("Engine.TP" is
// "TP" of whatever struct the engine flags fill), so a library's path in a
// larger struct still finds the flag.
func flagsOf(fs *pflag.FlagSet, root any, path string) []string {
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
			case flagAddr(f.Value) != addr:
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

// settingError is err as the line a user reads, a usage error (exit 2)
// where it is the user's settings: a setting's error (*setting.Error, a
// run's *run.ConfigError) names the flags of fs bound to its fields in
// *root, a command's options; so do a file that exists, a --fail-if that
// does not parse, an output that failed (exit 1) and a model the server
// does not serve. Any other error passes as it is.
func settingError(fs *pflag.FlagSet, root any, err error) error {
	var (
		ue usageError
		se *setting.Error
		ce *run.ConfigError
		oe *run.OutputError
		fe *run.FileExistsError
		re *openai.ResolveError
		ee *gate.ExprError
		ke *gate.KeyError
	)
	flag := func(path string) string {
		if names := flagsOf(fs, root, path); len(names) > 0 {
			return "--" + names[0]
		}
		return path
	}
	switch {
	case err == nil || errors.As(err, &ue):
		return err
	case errors.As(err, &fe):
		field := map[string]string{"ResultName": "ResultFilename"}[fe.Field]
		return usagef("%s %s: the file exists; choose another name, or %s to replace it", flag(cmp.Or(field, fe.Field)), fe.Path, flag("Overwrite"))
	case errors.As(err, &oe):
		head := flag(oe.Field)
		if oe.Path != "" {
			head += " " + oe.Path
		}
		if oe.Field == "" {
			return err
		}
		return fmt.Errorf("%s: %w", head, settingError(fs, root, oe.Err))
	case errors.As(err, &ee):
		return usagef("%s %w", flag("FailIf"), ee)
	case errors.As(err, &ke):
		return usagef("%s %w", flag("FailIf"), ke)
	case errors.As(err, &re) && re.Field == "Wait":
		return fmt.Errorf("%s: %w", flag("ReadyCheckTimeout"), re)
	case errors.As(err, &re):
		model := flag("TargetSpec.Model")
		if names := flagsOf(fs, root, "ServedModelName"); len(names) > 0 && fs.Changed(names[0]) {
			model = "--" + names[0]
		}
		if re.Model == "" {
			return fmt.Errorf("no %s given and %w", model, re.Err)
		}
		return fmt.Errorf("%s %q: %w", model, re.Model, re.Err)
	case errors.As(err, &se):
		// A run names the engine's or the fleet's field by its path in
		// run.Config: the longer path tells the engine's Model from the
		// target's.
		if errors.As(err, &ce) && strings.HasSuffix(ce.Field, "."+se.Field) {
			se, _ = setting.Within(strings.TrimSuffix(ce.Field, "."+se.Field), se).(*setting.Error)
		}
	case errors.As(err, &ce):
		se = setting.Errorf(cmp.Or(runFieldAliases[ce.Field], ce.Field), "", "%v", ce.Err)
	default:
		return err
	}
	first := ""
	line := se.Render(func(path string) string {
		name := flag(path)
		if first == "" && strings.HasPrefix(name, "--") {
			first = name
		}
		return name
	})
	return &flagUsage{flag: first, err: usagef("%s", line)}
}

// runFieldAliases are run.Config's fields by the spec field that fills
// them, where the names differ.
var runFieldAliases = map[string]string{"Ramp": "RampUpStrategy"}

// flagUsage is a usage error naming the flag at fault, so that a command
// filling flags from elsewhere (watch, from its config) can tell which.
type flagUsage struct {
	flag string
	err  error // a usageError, its line naming the flag
}

func (e *flagUsage) Error() string { return e.err.Error() }
func (e *flagUsage) Unwrap() error { return e.err }
