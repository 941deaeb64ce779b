package loadgen

import (
	"errors"
	"math"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
)

func TestCheckLevel(t *testing.T) {
	ok := runlog.Level{RequestRate: 4, Burstiness: 1, MaxConcurrency: 8, NumPrompts: 100, DurationS: 30}
	if err := CheckLevel(ok); err != nil {
		t.Fatalf("CheckLevel(%+v) = %v; want nil", ok, err)
	}
	for _, tt := range []struct {
		name string
		edit func(*runlog.Level)
		want string
	}{
		{"rate negative", func(l *runlog.Level) { l.RequestRate = -1 }, "RequestRate -1: want a positive number of requests/s up to 1e+07, or 0 for unpaced"},
		{"rate nan", func(l *runlog.Level) { l.RequestRate = math.NaN() }, "RequestRate NaN: want a positive number of requests/s up to 1e+07, or 0 for unpaced"},
		{"burstiness zero", func(l *runlog.Level) { l.Burstiness = 0 }, "Burstiness 0: want > 0"},
		{"burstiness huge", func(l *runlog.Level) { l.Burstiness = 1e16 }, "Burstiness 1e+16: want at most 1e+15"},
		{"concurrency", func(l *runlog.Level) { l.MaxConcurrency = -1 }, "MaxConcurrency -1: want ≥ 0"},
		{"concurrency huge", func(l *runlog.Level) { l.MaxConcurrency = 1 << 25 }, "MaxConcurrency 33554432: want at most 16777216"},
		{"prompts", func(l *runlog.Level) { l.NumPrompts = -1 }, "NumPrompts -1: want ≥ 0"},
		{"warmups", func(l *runlog.Level) { l.NumWarmups = -2 }, "NumWarmups -2: want ≥ 0"},
		{"duration", func(l *runlog.Level) { l.DurationS = -1.5 }, "Duration -1.5s: want ≥ 0"},
		{"duration nan", func(l *runlog.Level) { l.DurationS = math.NaN() }, "Duration NaNs: want ≥ 0"},
		{"duration huge", func(l *runlog.Level) { l.DurationS = 1e12 }, "Duration 1e+12s: want at most 320255h58m24.606846976s"},
	} {
		l := ok
		tt.edit(&l)
		err := CheckLevel(l)
		var se *setting.Error
		if !errors.As(err, &se) || err.Error() != tt.want {
			t.Errorf("%s: CheckLevel = %v; want the setting error %q", tt.name, err, tt.want)
		}
	}
}
