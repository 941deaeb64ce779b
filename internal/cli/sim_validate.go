package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simvalidate"
)

// simValidateOptions are "goodput sim validate"'s flags.
type simValidateOptions struct {
	spec     simvalidate.Spec
	json     bool
	markdown bool
	html     string
}

// newSimValidateCmd is "goodput sim validate": the simulator's accuracy
// matrix against real runs.
func newSimValidateCmd(env Env) *cobra.Command {
	o := &simValidateOptions{spec: simvalidate.Spec{Base: sim.DefaultConfig()}}
	cmd := &cobra.Command{
		Use:     "validate TRUTH[=DEPLOYMENT.yaml]...",
		Short:   "Replay real runs through the simulator and print its accuracy matrix: signed errors, MAPE, KS and TOST at ±10 %",
		Long:    helpText("sim-validate"),
		Example: helpText("sim-validate.examples"),
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSimValidate(cmd, env, o, args)
		},
	}
	fs := cmd.Flags()
	group(fs, "Engine flags (the deployment of truths without a cluster file)", func(fs *pflag.FlagSet) {
		fs.StringVar(&o.spec.Base.Model, "model", o.spec.Base.Model, "the model served: "+modelList)
		registerEngineFlags(fs, &o.spec.Base)
	})
	group(fs, "Validation flags", func(fs *pflag.FlagSet) {
		fs.StringVar(&o.spec.Deployment, "deployment", "", "a cluster file (YAML, as sim --cluster reads) of every truth that names none: pools, replicas, roles; the engine flags are its defaults")
		fs.StringVar(&o.spec.Profile, "profile", "", "a GPU profile fitted by 'goodput sim fit': replay every run on it too and report those figures as calibrated")
		fs.StringVar(&o.spec.Workload, "workload", "", "the trace a means TSV's runs replayed (default: requests.jsonl beside it)")
		fs.StringVar(&o.spec.TruthRow, "truth-row", "vLLM", "the means TSV's row of the real measurement")
		fs.IntVar(&o.spec.NumPrompts, "num-prompts", simvalidate.DefaultNumPrompts, "requests replayed per CSV point without a num_prompts column")
		fs.Int64Var(&o.spec.Seed, "seed", 0, "seed of a rate point's Poisson arrivals")
	})
	group(fs, "Output flags", func(fs *pflag.FlagSet) {
		fs.BoolVar(&o.json, "json", false, "print the matrix as JSON")
		fs.BoolVar(&o.markdown, "markdown", false, "print the matrix as Markdown tables (the form docs/simulator.md publishes)")
		fs.StringVar(&o.html, "html", "", "also write the matrix as a self-contained HTML page to this file")
	})
	groupedUsage(cmd, "Flags", "Engine flags (the deployment of truths without a cluster file)", "Validation flags", "Output flags")
	return cmd
}

// runSimValidate validates, then renders the matrix.
func runSimValidate(cmd *cobra.Command, env Env, o *simValidateOptions, args []string) error {
	if len(args) == 0 {
		return usagef("give at least one truth file: a records file, a points CSV or a means TSV (TRUTH or TRUTH=DEPLOYMENT.yaml)")
	}
	if o.json && o.markdown {
		return usagef("--json and --markdown: choose one")
	}
	if o.spec.NumPrompts < 1 {
		return usagef("--num-prompts %d: want ≥ 1", o.spec.NumPrompts)
	}
	o.spec.Dir = env.Dir
	o.spec.Inputs = nil
	for _, a := range args {
		truth, dep, _ := strings.Cut(a, "=")
		if truth == "" {
			return usagef("%q: want TRUTH or TRUTH=DEPLOYMENT.yaml", a)
		}
		o.spec.Inputs = append(o.spec.Inputs, simvalidate.Input{Truth: truth, Deployment: dep})
	}
	m, err := simvalidate.Validate(cmd.Context(), o.spec)
	if err != nil {
		if simvalidate.IsInputError(err) || errors.As(err, new(*sim.ConfigError)) {
			return usageError{err}
		}
		return err
	}
	var b bytes.Buffer
	switch {
	case o.json:
		err = m.WriteJSON(&b)
	case o.markdown:
		err = m.WriteMarkdown(&b)
	default:
		err = m.WriteText(&b)
	}
	if err != nil {
		return err
	}
	if o.html != "" {
		var h bytes.Buffer
		if err := m.WriteHTML(&h); err != nil {
			return err
		}
		p := o.html
		if env.Dir != "" && !filepath.IsAbs(p) {
			p = filepath.Join(env.Dir, p)
		}
		if err := os.WriteFile(p, h.Bytes(), 0o644); err != nil {
			return usagef("--html: %v", err)
		}
	}
	_, err = env.Stdout.Write(b.Bytes())
	return err
}
