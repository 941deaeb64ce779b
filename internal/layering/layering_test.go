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

// floors are the packages storey by storey, bottom up. The rule: a
// package imports only packages on floors below its own (and its own
// sub-packages), so dependencies point one way; every package has a floor,
// so a new one must be placed before it can import anything.
var floors = [][]string{
	// The data model and the leaf codecs: no project imports at all.
	{"internal/sse", "internal/runlog", "internal/shareddata", "internal/perfgoal", "internal/redact", "internal/tokenize", "internal/gate", "internal/sim/costmodel", "internal/sim/kvcache", "internal/layering", "internal/servermetrics", "internal/jsonscan", "internal/k8s", "internal/setting", "internal/llamafake"},
	// Pure building blocks over the data model.
	{"internal/workload", "internal/jobgraph", "internal/stats", "internal/loadgen", "internal/sim", "internal/sim/fit", "internal/sim/validate", "internal/runlog/runlogtest", "internal/flagfield"},
	// Engines composed: replicas behind a router, one virtual clock; the
	// protocol-neutral wire client.
	{"internal/sim/cluster", "internal/session", "internal/wire"},
	// Per-level breakdowns of a run's records: typed figures, no rendering.
	{"internal/breakdown", "internal/publish"},
	// The wire protocols, the drivers of the engine, and the judgements of
	// one run.
	{"internal/wire/openai", "internal/wire/anthropic", "internal/scrape", "internal/simrun", "internal/findings", "internal/compare"},
	// The one table of wire protocols.
	{"internal/wire/protocols"},
	// What serves, labels or dials every protocol of the table: the
	// simulator's HTTP server, the Prometheus exporter, a user's target
	// settings built into a client (shared by run and watch).
	{"internal/simserve", "internal/promexport", "internal/target"},
	// Judging a curve; watching live traffic and, with synthetic probes
	// through the clients a target opens, vendors' SLAs (below run, so a
	// watch cannot come to need one); test servers.
	{"internal/sweep", "internal/proxy", "internal/watch", "internal/run/runtest", "internal/simvalidate"},
	// Rendering every output.
	{"internal/report"},
	// A run split over processes: shard syntax, rendezvous, clock offset,
	// the Kubernetes Job and collector.
	{"internal/shard"},
	// The run lifecycle: the middle floor.
	{"internal/run"},
	// The user's settings for a run, checked, and the --fail-if schemas.
	{"internal/runspec"},
	// Commands over saved runs: report, compare, fit, split comparison.
	{"internal/review"},
	// The command line, and the end-to-end benchmarks that drive the floors.
	{"internal/cli", "bench"},
	{"cmd/goodput"},
}

// floorOf is the floor of a package (its own or, for a sub-package not
// listed, its parent's), or -1.
func floorOf(pkg string) int {
	for i, f := range floors {
		if contains(f, pkg) {
			return i
		}
	}
	if k := strings.LastIndex(pkg, "/"); k > 0 {
		return floorOf(pkg[:k])
	}
	return -1
}

// engine is the simulated engine: it imports nothing of the project but
// its own sub-packages, the data model and setting (the typed error of a
// setting, which its configurations return), so it stays a state machine
// that any driver (HTTP, virtual time, a cluster) can run.
const engine = "internal/sim"

// engineComposers are the engine's sub-packages that compose engines (the
// cluster's replicas and router): they may import the engine itself.
var engineComposers = []string{"internal/sim/cluster"}

// testOnly packages are imported by tests alone.
var testOnly = []string{"internal/run/runtest", "internal/runlog/runlogtest", "internal/llamafake"}

// forbiddenCalls are identifiers only some packages may use.
var forbiddenCalls = []struct {
	sel    string
	except []string // path prefixes allowed to use it
	why    string
}{
	{"os.Args", []string{"cmd/", "internal/cli"}, "only cli reads arguments"},
	{"os.Stdout", []string{"cmd/", "internal/cli"}, "only cli writes to standard streams"},
	{"os.Stderr", []string{"cmd/", "internal/cli"}, "only cli writes to standard streams"},
	// shareddata is a test helper (TestTestHelpersStayInTests): it reads
	// where the test data is.
	{"os.Getenv", []string{"cmd/", "internal/cli", "internal/shareddata"}, "only cli reads the environment"},
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
		floor := floorOf(f.pkg)
		if floor < 0 {
			t.Errorf("%s is on no floor: add it to floors", f.pkg)
			continue
		}
		for _, im := range f.imports {
			if !strings.HasPrefix(im, module) {
				continue
			}
			dep := strings.TrimPrefix(im, module)
			if strings.HasPrefix(dep, f.pkg+"/") && !contains(testOnly, dep) {
				continue // its own sub-package
			}
			switch d := floorOf(dep); {
			case contains(testOnly, dep):
				t.Errorf("%s/%s imports %s: only tests may", f.pkg, f.name, dep)
			case d < 0 || d >= floor:
				t.Errorf("%s/%s (floor %d) imports %s (floor %d): imports point down only", f.pkg, f.name, floor, dep, d)
			case (f.pkg == engine || strings.HasPrefix(f.pkg, engine+"/")) && dep != "internal/runlog" && dep != "internal/setting" &&
				!strings.HasPrefix(dep, engine+"/") && !(dep == engine && contains(engineComposers, f.pkg)):
				t.Errorf("%s/%s imports %s: the engine imports only its own packages, runlog and setting", f.pkg, f.name, dep)
			}
		}
	}
}

// prometheusImporters are the packages that may import the Prometheus
// client: the two servers that expose /metrics, promexport (the Records →
// metrics exporter that the proxy and bench's --metrics-listen share),
// watch (whose probe metrics and scrape-time burn rates are its output),
// and cli, which wires them.
var prometheusImporters = []string{"internal/simserve", "internal/proxy", "internal/promexport", "internal/watch", "internal/cli"}

func TestPrometheusOnlyAtTheEdges(t *testing.T) {
	for _, f := range sources(t) {
		for _, im := range f.imports {
			if strings.HasPrefix(im, "github.com/prometheus/client_golang") && !contains(prometheusImporters, f.pkg) {
				t.Errorf("%s/%s imports %s: only simserve, proxy, promexport, watch (and cli, to wire them) may", f.pkg, f.name, im)
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

// TestTestHelpersStayInTests: shareddata and perfgoal, which skip, fail
// or judge tests, are imported by tests only (sources are the non-test
// files).
func TestTestHelpersStayInTests(t *testing.T) {
	for _, f := range sources(t) {
		for _, im := range f.imports {
			if im == module+"internal/shareddata" || im == module+"internal/perfgoal" {
				t.Errorf("%s/%s imports %s: it is for tests only", f.pkg, f.name, im)
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
