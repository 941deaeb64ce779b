package cli

import (
	"errors"
	"io/fs"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// conversationFieldFlags are the flags of workload.ConversationsConfig's
// fields, by Go name (the synthetic conversations of bench's sessions;
// the dataset's own options name their flags by the fields they fill).
var conversationFieldFlags = map[string]string{
	"NumSessions":     "--num-sessions",
	"SystemPromptLen": "--shared-prefix-len",
	"ToolShare":       "--tool-share",
	"Tools":           "--tools",
}

// flagError makes err, returned by a library checking values that flags
// gave it, a usage error (exit code 2) whose one line names the flag at
// fault: a conversation's *workload.OptionError or a *sim.ConfigError by
// its field, a *gate.ExprError or *gate.KeyError as --fail-if's, and a
// file that cannot be opened (an *fs.PathError) as --dataset-path's.
// modelFlag is the flag of the simulated engine's model (sim.Config.Model):
// "--sim-model" in bench and sweep, where --model is the id sent in
// requests, "--model" in sim and serve; it is unused for other errors. Any
// other error is a usage error as it reads. flagError(nil, …) is nil.
func flagError(err error, modelFlag string) error {
	var (
		ue usageError
		oe *workload.OptionError
		se *sim.ConfigError
		ee *gate.ExprError
		ke *gate.KeyError
		pe *fs.PathError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return err
	case errors.As(err, &ee):
		return usagef("--fail-if %w", ee)
	case errors.As(err, &ke):
		return usagef("--fail-if %w", ke)
	case errors.As(err, &se):
		flag, ok := engineFlag(se.Field)
		if se.Field == "Model" {
			flag, ok = modelFlag, modelFlag != ""
		}
		if ok {
			return usagef("%s: %w", flag, se.Err)
		}
	case errors.As(err, &oe):
		if flag, ok := conversationFieldFlags[oe.Field]; ok {
			if v := oe.ValueText(); v != "" {
				flag += " " + v
			}
			return usagef("%s: %w", flag, oe.Err)
		}
	case errors.As(err, &pe):
		return usagef("--dataset-path %s: %w", pe.Path, pe.Err)
	}
	return usageError{err}
}
