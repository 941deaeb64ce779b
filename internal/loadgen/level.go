package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
)

// CheckLevel is the one check of an offered load, whoever drives it (the
// wall-clock run, the virtual-time driver, the settings a user gave):
// each field in its range, as a *setting.Error naming the field of
// runspec.LoadSpec that sets it, so every caller reports a bad load in
// the same words. Burstiness 0 is refused; a driver that reads 0 as
// Poisson says so before it asks.
func CheckLevel(l runlog.Level) error {
	switch {
	case !(l.RequestRate >= 0 && l.RequestRate <= runlog.MaxRequestRate):
		return setting.Errorf("RequestRate", fmt.Sprint(l.RequestRate), "want a positive number of requests/s up to %g, or 0 for unpaced", float64(runlog.MaxRequestRate))
	case !(l.Burstiness > 0):
		return setting.Errorf("Burstiness", fmt.Sprint(l.Burstiness), "want > 0")
	case l.Burstiness > runlog.MaxBurstiness:
		return setting.Errorf("Burstiness", fmt.Sprint(l.Burstiness), "want at most %g", float64(runlog.MaxBurstiness))
	case l.MaxConcurrency < 0:
		return setting.Errorf("MaxConcurrency", strconv.Itoa(l.MaxConcurrency), "want ≥ 0")
	case l.MaxConcurrency > runlog.MaxConcurrency:
		return setting.Errorf("MaxConcurrency", strconv.Itoa(l.MaxConcurrency), "want at most %d", runlog.MaxConcurrency)
	case l.NumPrompts < 0:
		return setting.Errorf("NumPrompts", strconv.Itoa(l.NumPrompts), "want ≥ 0")
	case l.NumWarmups < 0:
		return setting.Errorf("NumWarmups", strconv.Itoa(l.NumWarmups), "want ≥ 0")
	case !(l.DurationS >= 0):
		return setting.Errorf("Duration", durationString(l.DurationS), "want ≥ 0")
	case l.DurationS > runlog.MaxTimeNs/1e9:
		return setting.Errorf("Duration", durationString(l.DurationS), "want at most %s", durationString(runlog.MaxTimeNs/1e9))
	}
	return nil
}

// durationString writes seconds as a flag would show them (-1s, 1m30s).
func durationString(s float64) string {
	if math.IsNaN(s) || math.Abs(s) > math.MaxInt64/1e9 {
		return fmt.Sprintf("%gs", s)
	}
	return (time.Duration(s * 1e9)).String()
}
