package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/runspec"
)

// numericPaths lists the dotted paths of v's numeric leaves (numbers and
// booleans, which a gate reads as 1 and 0).
func numericPaths(prefix string, v any, out []string) []string {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			out = numericPaths(join(k), x, out)
		}
	case []any:
		for i, x := range t {
			out = numericPaths(join(strconv.Itoa(i)), x, out)
		}
	case float64, bool:
		out = append(out, prefix)
	}
	return out
}

// TestSchemaCoversResult runs bench, sim and sweep with output flags that
// shape the result and checks the --fail-if check accepts every number the
// saved result holds: the schema the check uses is the result's own key
// set, so a key a producer adds without the schema knowing fails here.
func TestSchemaCoversResult(t *testing.T) {
	common := []string{"--num-prompts", "4", "--quiet", "--save-result", "--result-filename", "r.json",
		"--metric-percentiles", "50,99.9", "--goodput", "ttft:2000", "--metadata", "gpus=8", "--records", "none"}
	tests := []struct {
		name string
		args []string
	}{
		{"bench", append([]string{"bench", "--save-detailed", "--request-rate", "50", "--max-concurrency", "2"}, common...)},
		{"sim", append([]string{"sim", "--request-rate", "50"}, common...)},
		{"sweep", append([]string{"sweep", "--sim", "--request-rate", "5,10,20", "--search"}, common...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(slices.Clone(tt.args), "--result-dir", dir)
			if tt.name == "bench" { // --save-detailed reads the records back
				i := slices.Index(args, "--records")
				args = slices.Delete(args, i, i+2)
			}
			r := runCLI(t, t.Context(), nil, args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, "r.json"))
			if err != nil {
				t.Fatal(err)
			}
			var result map[string]any
			if err := json.Unmarshal(b, &result); err != nil {
				t.Fatal(err)
			}
			// The flags as bench and sim register them: the output and
			// verdict flags in one set.
			fs := pflag.NewFlagSet(tt.name, pflag.ContinueOnError)
			fs.ParseErrorsAllowlist.UnknownFlags = true
			var out outputFlags
			var v verdictFlags
			out.register(fs)
			v.register(fs)
			if err := fs.Parse(args[1:]); err != nil {
				t.Fatal(err)
			}
			so, err := out.Options(fs.Args())
			if err != nil {
				t.Fatal(err)
			}
			md, err := out.Meta()
			if err != nil {
				t.Fatal(err)
			}
			detail := out.SaveDetailed
			schema, err := runspec.ResultSchema(so, md, detail)
			if tt.name == "sweep" {
				schema, err = runspec.SweepSchema(so, md)
			}
			if err != nil {
				t.Fatal(err)
			}
			paths := numericPaths("", result, nil)
			if len(paths) < 50 {
				t.Fatalf("only %d numeric keys in the result", len(paths))
			}
			var missing []string
			for _, p := range paths {
				g := gate.Gate{Conds: []gate.Cond{{Expr: p + ">0", Key: p, Op: gate.OpGT}}}
				if err := g.Validate(schema); err != nil {
					missing = append(missing, err.Error())
				}
			}
			slices.Sort(missing)
			if len(missing) > 0 {
				t.Errorf("the --fail-if schema rejects keys the result holds:\n%s", strings.Join(missing, "\n"))
			}
		})
	}
}
