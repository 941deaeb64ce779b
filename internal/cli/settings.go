package cli

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/wire"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
)

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
		fl failure
		fe *run.FileExistsError
		re *wire.ResolveError
		ee *gate.ExprError
		ke *gate.KeyError
	)
	flag := func(path string) string {
		if names := flagfield.Flags(fs, root, path); len(names) > 0 {
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
	case errors.As(err, &fl):
		field, value := fl.Failed()
		if field == "" {
			return err
		}
		head := strings.TrimSuffix(flag(field)+" "+value, " ")
		return fmt.Errorf("%s: %w", head, settingError(fs, root, errors.Unwrap(fl)))
	case errors.As(err, &ee):
		return usagef("%s %w", flag("FailIf"), ee)
	case errors.As(err, &ke):
		return usagef("%s %w", flag("FailIf"), ke)
	case errors.As(err, &re) && re.Field == "Wait":
		return fmt.Errorf("%s: %w", flag("ReadyCheckTimeout"), re)
	case errors.As(err, &re):
		model := flag("Spec.Model")
		if names := flagfield.Flags(fs, root, "ServedModelName"); len(names) > 0 && fs.Changed(names[0]) {
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
	return usagef("%s", se.Render(flag))
}

// failure is what a setting named that failed at run time (a file not
// written, an address not served): setting.OutputError, proxy.ListenError.
type failure interface {
	error
	Failed() (field, value string)
}

// runFieldAliases are run.Config's fields by the spec field that fills
// them, where the names differ.
var runFieldAliases = map[string]string{"Ramp": "RampUpStrategy"}
