package cli

import (
	"errors"
	"io/fs"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// The libraries name the field at fault in their typed errors; only the CLI
// knows which flag filled it. These tables say, field by field.
var (
	// workloadFieldFlags are the flags of workload.Options' fields, by Go name.
	workloadFieldFlags = map[string]string{
		"DatasetName":                 "--dataset-name",
		"DatasetPath":                 "--dataset-path",
		"NumPrompts":                  "--num-prompts",
		"Seed":                        "--seed",
		"RandomInputLen":              "--random-input-len",
		"RandomOutputLen":             "--random-output-len",
		"RandomRangeRatio":            "--random-range-ratio",
		"RandomPrefixLen":             "--random-prefix-len",
		"InputLenDist":                "--input-len-dist",
		"OutputLenDist":               "--output-len-dist",
		"ShareGPTOutputLen":           "--sharegpt-output-len",
		"PrefixRepetitionPrefixLen":   "--prefix-repetition-prefix-len",
		"PrefixRepetitionSuffixLen":   "--prefix-repetition-suffix-len",
		"PrefixRepetitionNumPrefixes": "--prefix-repetition-num-prefixes",
		"PrefixRepetitionOutputLen":   "--prefix-repetition-output-len",
		"SharedPrefixLen":             "--shared-prefix-len",
		"NumPrefixes":                 "--num-prefixes",
		"CacheBust":                   "--cache-bust",
		"TraceSpeedup":                "--trace-speedup",
		"TraceWindow":                 "--trace-window",
		"Tokenizer":                   "--tokenizer",
	}
	// conversationFieldFlags are the flags of workload.ConversationsConfig's
	// fields, by Go name (the synthetic conversations of bench).
	conversationFieldFlags = map[string]string{
		"NumSessions":     "--num-sessions",
		"SystemPromptLen": "--shared-prefix-len",
		"ToolShare":       "--tool-share",
		"Tools":           "--tools",
	}
)

// flagError makes err, returned by a library checking values that flags
// gave it, a usage error (exit code 2) whose one line names the flag at
// fault: a *workload.OptionError or *sim.ConfigError
// by its field, a *gate.ExprError or *gate.KeyError as --fail-if's, and a
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
		flag, ok := engineFieldFlags[se.Field]
		if se.Field == "model" {
			flag, ok = modelFlag, modelFlag != ""
		}
		if ok {
			return usagef("%s: %w", flag, se.Err)
		}
	case errors.As(err, &oe):
		flag, ok := workloadFieldFlags[oe.Field]
		if !ok {
			flag, ok = conversationFieldFlags[oe.Field]
		}
		if ok {
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
