package shareddata

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// fakeTB records how a lookup ended instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(string, ...any)           { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) Fatalf(string, ...any)          { f.failed = true; runtime.Goexit() }
func (f *fakeTB) Skip(...any)                    { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) Fatal(...any)                   { f.failed = true; runtime.Goexit() }
func (f *fakeTB) Errorf(format string, a ...any) { f.failed = true }

// lookup runs Path on its own goroutine, as the testing package runs a
// test, so that Skipf and Fatalf can stop it.
func lookup(rel string) (p string, tb *fakeTB) {
	tb = &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p = Path(tb, rel)
	}()
	<-done
	return p, tb
}

func TestEnvDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.csv"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, dir)
	t.Setenv(EnvRequire, "")
	if p, tb := lookup("x.csv"); tb.skipped || tb.failed || p != filepath.Join(dir, "x.csv") {
		t.Errorf("Path(x.csv) = %q (skipped %v, failed %v); want %s", p, tb.skipped, tb.failed, filepath.Join(dir, "x.csv"))
	}
}

// An absent file skips a user's test run and fails CI's.
func TestAbsent(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	t.Setenv(EnvRequire, "")
	if _, tb := lookup("no-such.csv"); !tb.skipped || tb.failed {
		t.Errorf("absent file without %s: skipped %v, failed %v; want a skip", EnvRequire, tb.skipped, tb.failed)
	}
	t.Setenv(EnvRequire, "1")
	if _, tb := lookup("no-such.csv"); tb.skipped || !tb.failed {
		t.Errorf("absent file with %s=1: skipped %v, failed %v; want a failure", EnvRequire, tb.skipped, tb.failed)
	}
	t.Setenv(EnvDir, filepath.Join(t.TempDir(), "nowhere"))
	if _, tb := lookup("x.csv"); tb.skipped || !tb.failed {
		t.Errorf("absent %s folder with %s=1: skipped %v, failed %v; want a failure", EnvDir, EnvRequire, tb.skipped, tb.failed)
	}
}

// Without GOODPUT_DATA the folder is ../shared/data beside the repository
// whose go.mod is this module's, found from any package folder.
func TestBesideRepository(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	pkg := filepath.Join(repo, "internal", "x")
	data := filepath.Join(root, "shared", "data")
	for _, d := range []string{pkg, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte(module+"\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A nested module's go.mod (another module) is walked past.
	if err := os.WriteFile(filepath.Join(pkg, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	t.Setenv(EnvDir, "")
	t.Setenv(EnvRequire, "1")
	got, why := find()
	if want, _ := filepath.EvalSymlinks(data); got == "" || mustEval(t, got) != want {
		t.Errorf("find() from %s = %q (%s); want %s", pkg, got, why, data)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
