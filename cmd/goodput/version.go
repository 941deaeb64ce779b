package main

import "runtime/debug"

// buildVersion is v, or when v is "dev" (no -ldflags), what the Go
// toolchain stamped into the binary: the module version of a
// "go install …@vX", else the commit of a build from a checkout, with
// "-dirty" for uncommitted changes. Records and result files carry it, so
// a run says which build measured it.
func buildVersion(v string, bi *debug.BuildInfo, ok bool) string {
	if v != "dev" || !ok {
		return v
	}
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
		return mv
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v += "+" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}
