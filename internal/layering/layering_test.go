package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/goodput/goodput/"

// allowed lists, for each package, the project packages it may import.
// Packages not listed may import anything below cli; cli may import all.
var allowed = map[string][]string{
	"internal/sse":           {},
	"internal/runlog":        {},
	"internal/redact":        {},
	"internal/tokenize":      {},
	"internal/workload":      {"internal/tokenize"},
	"internal/sim/costmodel": {},
	"internal/sim/kvcache":   {},
	"internal/sim":           {"internal/sim/costmodel", "internal/sim/kvcache", "internal/runlog"},
	"internal/stats":         {"internal/runlog"},
	"internal/openai":        {"internal/sse", "internal/redact", "internal/runlog"},
	"internal/loadgen":       {"internal/runlog"},
	"internal/gate":          {},
	"internal/findings":      {"internal/stats", "internal/runlog"},
	"internal/compare":       {"internal/stats", "internal/runlog"},
	"internal/report":        {"internal/compare", "internal/stats", "internal/runlog"},
	"internal/simrun":        {"internal/sim", "internal/workload", "internal/runlog"},
	"internal/simserve":      {"internal/sim", "internal/sse", "internal/tokenize", "internal/runlog"},
	"internal/sweep":         {"internal/findings", "internal/sim", "internal/simrun", "internal/stats", "internal/workload", "internal/runlog"},
	"internal/promexport":    {"internal/stats", "internal/runlog"},
	"internal/proxy":         {"internal/openai", "internal/promexport", "internal/redact", "internal/sse", "internal/stats", "internal/tokenize", "internal/runlog"},
}

// forbiddenCalls are identifiers only some packages may use.
var forbiddenCalls = []struct {
	sel    string
	except []string // path prefixes allowed to use it
	why    string
}{
	{"os.Args", []string{"cmd/", "internal/cli"}, "only cli reads arguments"},
	{"os.Stdout", []string{"cmd/", "internal/cli"}, "only cli writes to standard streams"},
	{"os.Stderr", []string{"cmd/", "internal/cli"}, "only cli writes to standard streams"},
	{"os.Getenv", []string{"cmd/", "internal/cli"}, "only cli reads the environment"},
	{"os.LookupEnv", []string{"cmd/", "internal/cli"}, "only cli reads the environment"},
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s", dir)
	}
	return dir
}

type file struct {
	pkg     string // path relative to the module root
	name    string
	imports []string
	src     string
}

func sources(t *testing.T) []file {
	t.Helper()
	base := root(t)
	var out []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, filepath.Dir(path))
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fl := file{pkg: filepath.ToSlash(rel), name: filepath.Base(path), src: string(src)}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			fl.imports = append(fl.imports, p)
		}
		out = append(out, fl)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportsPointDownstream(t *testing.T) {
	for _, f := range sources(t) {
		for _, im := range f.imports {
			if !strings.HasPrefix(im, module) {
				continue
			}
			dep := strings.TrimPrefix(im, module)
			if dep == "internal/cli" && !strings.HasPrefix(f.pkg, "cmd/") {
				t.Errorf("%s/%s imports %s: only cmd/ may", f.pkg, f.name, dep)
			}
			ok, listed := allowed[f.pkg]
			if !listed {
				continue
			}
			if !contains(ok, dep) && !strings.HasPrefix(dep, f.pkg+"/") {
				t.Errorf("%s/%s imports %s; allowed: %v", f.pkg, f.name, dep, ok)
			}
		}
	}
}

// prometheusImporters are the packages that may import the Prometheus
// client: the two servers that expose /metrics, promexport (the Records →
// metrics exporter that the proxy and bench's --metrics-listen share), and
// cli, which wires them.
var prometheusImporters = []string{"internal/simserve", "internal/proxy", "internal/promexport", "internal/cli"}

func TestPrometheusOnlyAtTheEdges(t *testing.T) {
	for _, f := range sources(t) {
		for _, im := range f.imports {
			if strings.HasPrefix(im, "github.com/prometheus/client_golang") && !contains(prometheusImporters, f.pkg) {
				t.Errorf("%s/%s imports %s: only simserve, proxy, promexport (and cli, to wire them) may", f.pkg, f.name, im)
			}
		}
	}
}

func TestSimulatorHasNoClock(t *testing.T) {
	for _, f := range sources(t) {
		if f.pkg != "internal/sim" && !strings.HasPrefix(f.pkg, "internal/sim/") {
			continue
		}
		for _, bad := range []string{"time.Now(", "time.Sleep(", "time.Since(", "time.After(", "time.NewTimer(", "time.Tick("} {
			if strings.Contains(f.src, bad) {
				t.Errorf("%s/%s calls %s: the engine is a state machine driven by the caller's clock", f.pkg, f.name, bad)
			}
		}
		for _, im := range f.imports {
			if im == "net/http" || im == "net" {
				t.Errorf("%s/%s imports %s: the engine knows no network", f.pkg, f.name, im)
			}
		}
		if strings.Contains(f.src, "go func") {
			t.Errorf("%s/%s starts a goroutine: the engine is synchronous", f.pkg, f.name)
		}
	}
}

func TestIOAtTheEdges(t *testing.T) {
	for _, f := range sources(t) {
		for _, fc := range forbiddenCalls {
			if !strings.Contains(f.src, fc.sel) {
				continue
			}
			okay := false
			for _, ex := range fc.except {
				if strings.HasPrefix(f.pkg, ex) || f.pkg+"/" == ex {
					okay = true
				}
			}
			if !okay {
				t.Errorf("%s/%s uses %s: %s", f.pkg, f.name, fc.sel, fc.why)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
