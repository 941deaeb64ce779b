package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/sim/cluster"
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

// leaves are the field paths of the struct type t's leaf fields.
func leaves(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath() {
			out = append(out, leaves(f.Type, prefix+f.Name+".")...)
			continue
		}
		out = append(out, prefix+f.Name)
	}
	return out
}

// Every setting of the fleet and the gateway has one flag, so that each
// error the specs return names it.
func TestSpecFieldsHaveFlags(t *testing.T) {
	var c clusterFlags
	var g gatewayFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	c.register(fs)
	g.register(fs)
	fields := leaves(reflect.TypeFor[cluster.Spec](), "")
	if len(fields) < 18 || fields[len(fields)-1] != "Ratios" {
		t.Fatalf("cluster.Spec's fields %v", fields)
	}
	for _, f := range fields {
		if len(flagfield.Flags(fs, &c.Spec, f)) != 1 {
			t.Errorf("cluster.Spec.%s: flags %v; want one", f, flagfield.Flags(fs, &c.Spec, f))
		}
	}
	for _, f := range leaves(reflect.TypeFor[cluster.GatewaySpec](), "") {
		if len(flagfield.Flags(fs, &g.GatewaySpec, f)) != 1 {
			t.Errorf("cluster.GatewaySpec.%s: flags %v; want one", f, flagfield.Flags(fs, &g.GatewaySpec, f))
		}
	}
}
