package runspec

import (
	"fmt"
	"testing"

	"github.com/goodput/goodput/internal/workload"
)

func TestSessionSpecErrors(t *testing.T) {
	conv := workload.Options{DatasetName: "conversations", RandomInputLen: 8, RandomOutputLen: 4}
	spec := func(f func(*SessionSpec)) SessionSpec {
		s := SessionSpec{Burstiness: 1, History: "server", NumSessions: 2}
		f(&s)
		return s
	}
	for _, c := range []struct {
		spec SessionSpec
		w    workload.Options
		want string
	}{
		{spec(func(*SessionSpec) {}), conv, ""},
		{spec(func(s *SessionSpec) { s.Goodput = "ttp:1" }), workload.Options{DatasetName: "random"},
			"Goodput judges sessions: give Workload.DatasetName conversations or mooncake-sessions"},
		{spec(func(s *SessionSpec) { s.History = "dreamt" }), conv, `History "dreamt": want server, recorded or chained`},
		{spec(func(s *SessionSpec) { s.MaxContext = -1 }), conv, "Rate, MaxConcurrent, NumSessions, MaxContext and MaxToolRounds: want ≥ 0"},
		{spec(func(s *SessionSpec) { s.Burstiness = 0 }), conv, "Burstiness 0: want > 0"},
		{spec(func(*SessionSpec) {}), workload.Options{DatasetName: "mooncake-sessions"},
			"Workload.DatasetName mooncake-sessions needs Workload.DatasetPath"},
		{spec(func(s *SessionSpec) { s.Turns = "bogus" }), conv, "Turns: "},
		{spec(func(s *SessionSpec) { s.ThinkTime = "bogus" }), conv, "ThinkTime: "},
		{spec(func(s *SessionSpec) { s.ToolCalls = "bogus" }), conv, "ToolCalls: "},
		{spec(func(s *SessionSpec) { s.ToolLatency = "bogus" }), conv, "ToolLatency: "},
		{spec(func(s *SessionSpec) { s.ToolResultLen = "bogus" }), conv, "ToolResultLen: "},
		{spec(func(*SessionSpec) {}), workload.Options{DatasetName: "conversations", InputLenDist: "bogus"}, "Workload.InputLenDist: "},
		{spec(func(*SessionSpec) {}), workload.Options{DatasetName: "conversations", RandomInputLen: 8, OutputLenDist: "bogus"}, "Workload.OutputLenDist: "},
		{spec(func(*SessionSpec) {}), workload.Options{DatasetName: "conversations", RandomInputLen: 8, RandomOutputLen: 4, SharedPrefixLen: -1},
			"Workload.SharedPrefixLen -1: must not be negative"},
		{spec(func(s *SessionSpec) { s.ToolShare = 1.5 }), conv, "ToolShare 1.5: must be in [0, 1]"},
		{spec(func(s *SessionSpec) { s.Tools = []string{"a", "", "b"} }), conv, `Tools "a,,b": tool 1 has an empty name`},
		{spec(func(*SessionSpec) {}), workload.Options{DatasetName: "conversations", Tokenizer: "no/such/tokenizer.json"}, "Workload.Tokenizer: "},
	} {
		load, err := c.spec.Load(c.w, 1)
		settingErr(t, fmt.Sprintf("%+v.Load(%+v)", c.spec, c.w), err, c.want)
		if c.want == "" && load == nil {
			t.Errorf("%+v: no load", c.spec)
		}
	}
}
