package main

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	tests := []struct {
		name, v string
		bi      *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"ldflags win", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, true, "v1.2.3"},
		{"go install", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, true, "v0.9.0"},
		{"checkout", "dev", vcs("4cf5147a1b2c3d4e5f60718293a4b5c6d7e8f901", "false"), true, "dev+4cf5147a1b2c"},
		{"dirty checkout", "dev", vcs("4cf5147a1b2c3d4e", "true"), true, "dev+4cf5147a1b2c-dirty"},
		{"no vcs (go run, tests)", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
		{"no build info", "dev", nil, false, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildVersion(tt.v, tt.bi, tt.ok); got != tt.want {
				t.Errorf("buildVersion(%q) = %q; want %q", tt.v, got, tt.want)
			}
		})
	}
}
