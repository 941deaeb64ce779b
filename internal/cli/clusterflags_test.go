package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every cluster flag given, and none other, is refused where no
// virtual-time driver runs (onlySim finds them by the fields they fill).
func TestOnlySim(t *testing.T) {
	values := map[string]string{"bool": "true", "int": "2", "duration": "1s", "string": "x"}
	var names []string
	probe := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	(&clusterFlags{}).register(probe)
	probe.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if len(names) < 18 {
		t.Fatalf("cluster flags %v", names)
	}
	for _, name := range append(names, "other") {
		var c clusterFlags
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		fs.Int("other", 0, "a flag of no cluster field")
		c.register(fs)
		if err := fs.Set(name, values[fs.Lookup(name).Value.Type()]); err != nil {
			t.Fatal(err)
		}
		err := c.onlySim()
		if name == "other" {
			if err != nil {
				t.Errorf("--other: onlySim = %v; want nil", err)
			}
		} else if err == nil || !strings.HasPrefix(err.Error(), "--"+name+" simulates a cluster") {
			t.Errorf("--%s: onlySim = %v", name, err)
		}
	}
}
