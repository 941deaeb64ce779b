// Package shareddata finds the project's shared data folder for tests
// (public traces, length distributions, a real vLLM run; see
// ../shared/data/README.md): $GOODPUT_DATA when set, else ../shared/data
// beside the repository, wherever the repository is cloned.
//
// A user's clone has no such folder, so a test that needs it skips; CI
// always has it, and sets GOODPUT_REQUIRE_DATA=1 so that an absent file
// fails the test instead of skipping it silently.
package shareddata

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// EnvDir names the folder explicitly, overriding ../shared/data.
const EnvDir = "GOODPUT_DATA"

// EnvRequire, set to 1, turns "data absent" into a failure (CI sets it).
const EnvRequire = "GOODPUT_REQUIRE_DATA"

// module is the go.mod line that marks the repository's root.
const module = "module github.com/goodput/goodput\n"

// Dir returns the shared data folder. Where there is none, it skips tb
// or, under GOODPUT_REQUIRE_DATA=1, fails it.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir, why := find()
	if dir == "" {
		absent(tb, why)
	}
	return dir
}

// Path returns the file or folder rel (slash-separated) inside the shared
// data folder, skipping or failing tb as Dir does when it is absent.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(Dir(tb), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		absent(tb, err.Error())
	}
	return p
}

func absent(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("shared data absent (%s) and %s=1: CI has ../shared/data beside the repository, so this is a broken path, not a user's clone", why, EnvRequire)
	}
	tb.Skipf("shared data absent (%s): set %s, or put the project's data folder at ../shared/data beside the repository", why, EnvDir)
}

// find returns the folder, or "" and why not.
func find() (string, string) {
	if d := os.Getenv(EnvDir); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", EnvDir + "=" + d + " is not a folder"
		}
		return d, ""
	}
	root, err := repoRoot()
	if err != nil {
		return "", err.Error()
	}
	d := filepath.Join(filepath.Dir(root), "shared", "data")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", "no " + d
	}
	return d, ""
}

// repoRoot walks up from the working directory (a test runs in its
// package's folder) to the folder whose go.mod is this module's.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte(module)) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", os.ErrNotExist
		}
		dir = up
	}
}
