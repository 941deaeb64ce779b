package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/proxy"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// TestSettingErrorLines: a library's typed error, as the command gets it,
// is one usage line naming the flag bound to its field in the command.
func TestSettingErrorLines(t *testing.T) {
	dir := t.TempDir()
	simNew := func(edit func(*sim.Config)) error {
		c := sim.DefaultConfig()
		edit(&c)
		_, err := sim.New(c)
		return err
	}
	gateParse := func(expr string) error { _, err := gate.Parse([]string{expr}); return err }
	gateValidate := func(expr string) error {
		g, err := gate.Parse([]string{expr})
		if err != nil {
			return err
		}
		return g.Validate(map[string]any{"p99_ttft_ms": 1.0})
	}
	tests := []struct {
		name string
		err  error
		cmd  string // bench or sim: whose flags name the fields
		want string // the message, or its start where it ends with "…"
	}{
		// sim.ConfigError: the model's flag is the command's; a run names
		// the engine's field by its path in run.Config.
		{"sim model in bench", &run.ConfigError{Field: "Engine.Model", Err: simNew(func(c *sim.Config) { c.Model = "nope" })}, "bench", `--sim-model: unknown model "nope"…`},
		{"sim model in sim", simNew(func(c *sim.Config) { c.Model = "nope" }), "sim", `--model: unknown model "nope"…`},
		{"sim gpu", simNew(func(c *sim.Config) { c.GPU = "tpu-v9" }), "bench", "--gpu: …"},
		{"sim tp", simNew(func(c *sim.Config) { c.TP = 3 }), "sim", "--tensor-parallel-size: …"},
		{"sim seqs", simNew(func(c *sim.Config) { c.MaxNumSeqs = -1 }), "sim", "--max-num-seqs: -1 must be ≥ 1 (0 for the default)"},
		{"sim queue time", simNew(func(c *sim.Config) { c.MaxQueueTime = -time.Second }), "sim", "--max-queue-time: -1s must be ≥ 0"},
		{"sim model len", simNew(func(c *sim.Config) { c.NumGPUBlocksOverride = 10; c.MaxModelLen = 1000 }), "sim", "--max-model-len: …"},
		{"sim profile table", simNew(func(c *sim.Config) { c.ProfileTable = filepath.Join(dir, "none.csv") }), "sim", "--profile-table: …"},
		{"sim kv dtype", simNew(func(c *sim.Config) { c.KVCacheDType = "int2" }), "sim", "--kv-cache-dtype: …"},
		// gate errors are --fail-if's.
		{"gate parse", gateParse("p99_ttft_ms>>5"), "bench", `--fail-if "p99_ttft_ms>>5": ">5" is not a number: …`},
		{"gate key", gateValidate("p99_tft_ms>5"), "sim", `--fail-if "p99_tft_ms>5": p99_tft_ms is not a key of the result; did you mean p99_ttft_ms?`},
		{"already usage", usagef("--x: y"), "bench", "--x: y"},
	}
	env := Env{Getenv: func(string) string { return "" }}
	b, si := &BenchOptions{}, &SimOptions{Engine: sim.DefaultConfig()}
	benchCommand(env, b)
	simCommand(env, si)
	roots := map[string]func(error) error{
		"bench": func(err error) error { return settingError(b.fs, b, err) },
		"sim":   func(err error) error { return settingError(si.fs, si, err) },
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("the library returned no error")
			}
			got := roots[tt.cmd](tt.err)
			var ue usageError
			if !errors.As(got, &ue) {
				t.Errorf("settingError(%v) = %#v; want a usageError", tt.err, got)
			}
			msg := got.Error()
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(msg, prefix) {
					t.Errorf("settingError(%v) = %q; want it to start with %q", tt.err, msg, prefix)
				}
			} else if msg != tt.want {
				t.Errorf("settingError(%v) = %q; want %q", tt.err, msg, tt.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("settingError(%v) = %q; want one line", tt.err, msg)
			}
		})
	}
	if err := roots["bench"](nil); err != nil {
		t.Errorf("settingError(nil) = %v; want nil", err)
	}
	// The cause stays reachable for callers that branch on it.
	var ee *gate.ExprError
	if err := roots["bench"](gateParse("x")); !errors.As(err, &ee) || ee.Expr != "x" {
		t.Errorf("settingError(gate.Parse(x)) = %v; want it to wrap the *gate.ExprError", err)
	}
	plain := errors.New("bad.jsonl:2: not JSON")
	if err := roots["bench"](plain); err != plain {
		t.Errorf("an error of no setting: %v, want it as it was", err)
	}
}

// TestFieldFlagsExist checks the tables against the commands: each field is
// one of its library's, and each flag is registered where the library's
// values come from.
func TestFieldFlagsExist(t *testing.T) {
	root := newRoot(Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, Now: time.Now})
	cmd := func(name string) *cobra.Command {
		for _, c := range root.Commands() {
			if c.Name() == name {
				return c
			}
		}
		t.Fatalf("no command %q", name)
		return nil
	}
	has := func(field string, typ reflect.Type, flag string, cmds ...string) {
		t.Helper()
		if typ != nil {
			if _, ok := typ.FieldByName(field); !ok {
				t.Errorf("field %q: %v has no such field", field, typ)
			}
		}
		for _, c := range cmds {
			if cmd(c).Flags().Lookup(strings.TrimPrefix(flag, "--")) == nil {
				t.Errorf("field %q: goodput %s has no flag %s", field, c, flag)
			}
		}
	}
	for f, flag := range map[string]string{"GPU": "--gpu", "TP": "--tensor-parallel-size", "MaxNumSeqs": "--max-num-seqs", "SpecTokens": "--num-speculative-tokens"} {
		has(f, reflect.TypeFor[sim.Config](), flag, "bench", "sim", "serve", "sweep")
	}
	has("model", nil, "--sim-model", "bench", "sweep")
	has("model", nil, "--model", "sim", "serve")
	has("FailIf", nil, "--fail-if", "bench", "sim", "sweep")
}

// A target setting's error names its flag; a field no flag of the command
// fills keeps its path.
func TestRunErrorTargetSettings(t *testing.T) {
	var tf targetFlags
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	tf.register(fs)
	got := settingError(fs, &tf, fmt.Errorf("open: %w", setting.Errorf("BaseURL", `"x"`, "want http(s)://host[:port]")))
	if want := `--base-url "x": want http(s)://host[:port]`; got == nil || got.Error() != want {
		t.Errorf("target setting: %v, want %q", got, want)
	}
	if got := settingError(fs, &tf, setting.Errorf("MaxNumSeqs", "0", "want ≥ 1")); got == nil || got.Error() != "MaxNumSeqs 0: want ≥ 1" {
		t.Errorf("a field no flag fills: %v, want its path", got)
	}
}

// TestWorkloadErrorsNameFlags: a dataset option's error, as the run returns
// it, names the flag bound to the option's field, found by its address.
func TestWorkloadErrorsNameFlags(t *testing.T) {
	dir := t.TempDir()
	fromOptions := func(o workload.Options) error { _, err := workload.FromOptions(o); return err }
	o := &BenchOptions{}
	benchCommand(Env{Getenv: func(string) string { return "" }}, o)
	tests := []struct {
		name string
		err  error
		want string // the message, or its start where it ends with "…"
	}{
		{"random input len", &workload.OptionError{Field: "RandomInputLen", Value: -1, Err: errors.New("must not be negative")},
			"--random-input-len -1: must not be negative"},
		{"wrapped", fmt.Errorf("workload: %w", &workload.OptionError{Field: "TraceSpeedup", Value: -2.5, Err: errors.New("want a positive number")}),
			"--trace-speedup -2.5: want a positive number"},
		{"dataset name", fromOptions(workload.Options{DatasetName: "burst"}),
			`--dataset-name "burst": want random, custom, sharegpt, lengths, trace or prefix-repetition`},
		{"dataset path required", fromOptions(workload.Options{DatasetName: "sharegpt"}),
			"--dataset-path: required for the sharegpt dataset"},
		{"trace window", fromOptions(workload.Options{DatasetName: "trace", DatasetPath: "x.csv", TraceWindow: "5:1"}),
			`--trace-window "5:1": want START:END…`},
		{"range ratio", fromOptions(workload.Options{RandomRangeRatio: 1.5}), "--random-range-ratio 1.5: must be in [0, 1)"},
		{"num prompts", fromOptions(workload.Options{NumPrompts: -1}), "--num-prompts -1: must not be negative"},
		{"input len dist", fromOptions(workload.Options{InputLenDist: "gauss:3"}), "--input-len-dist: …"},
		{"num prefixes", fromOptions(workload.Options{SharedPrefixLen: 5, NumPrefixes: -1}), "--num-prefixes: …"},
		{"prefix repetition", fromOptions(workload.Options{DatasetName: "prefix-repetition", PrefixRepetitionPrefixLen: -1}),
			"--prefix-repetition-prefix-len -1: must not be negative"},
		// A tokenizer file that is missing is --tokenizer's, not --dataset-path's.
		{"tokenizer", fromOptions(workload.Options{Tokenizer: filepath.Join(dir, "none.json")}), "--tokenizer: …"},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Fatalf("%s: the library returned no error", tt.name)
		}
		got := settingError(o.fs, o, &run.ConfigError{Field: "Dataset", Err: tt.err})
		var ue usageError
		if !errors.As(got, &ue) {
			t.Errorf("%s: %#v; want a usageError", tt.name, got)
		}
		msg := got.Error()
		if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
			if !strings.HasPrefix(msg, prefix) {
				t.Errorf("%s: %q; want it to start with %q", tt.name, msg, prefix)
			}
		} else if msg != tt.want {
			t.Errorf("%s: %q; want %q", tt.name, msg, tt.want)
		}
	}
}

// TestRunConfigErrorsNameFlags: a run's refusal of a field names the flag
// bound to it in the command.
func TestRunConfigErrorsNameFlags(t *testing.T) {
	o := &BenchOptions{}
	benchCommand(Env{Getenv: func(string) string { return "" }}, o)
	for field, want := range map[string]string{
		"MaxConcurrency": "--max-concurrency: x",
		"StartAt":        "--start-at: x",
		"DatasetName":    "--dataset-name: x",
		"Tokenizer":      "--tokenizer: x",
		"Records":        "--records: x",
		"Ramp":           "--ramp-up-strategy: x",
	} {
		err := settingError(o.fs, o, &run.ConfigError{Field: field, Err: errors.New("x")})
		var ue usageError
		if !errors.As(err, &ue) || err.Error() != want {
			t.Errorf("%s: %v, want the usage error %q", field, err, want)
		}
	}
}

// A failure at run time of what a setting named (an address not served, a
// file not written) names the flag and its value, and stays exit 1.
func TestSettingErrorFailures(t *testing.T) {
	cmd := newProxyCmd(Env{Getenv: func(string) string { return "" }})
	var s proxy.Spec
	cmd.Flags().StringVar(&s.Listen, "listen-test", "", "")
	err := settingError(cmd.Flags(), &s, fmt.Errorf("start: %w", &proxy.ListenError{Field: "Listen", Addr: "127.0.0.1:1", Err: errors.New("in use")}))
	var ue usageError
	if err == nil || err.Error() != "--listen-test 127.0.0.1:1: in use" || errors.As(err, &ue) {
		t.Errorf("settingError(ListenError) = %v; want --listen-test's line, not a usage error", err)
	}
	err = settingError(cmd.Flags(), &s, &setting.OutputError{Field: "Nope", Err: errors.New("disk full")})
	if err == nil || err.Error() != "Nope: disk full" {
		t.Errorf("settingError(OutputError of no flag) = %v; want the field's path", err)
	}
}
