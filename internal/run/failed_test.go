package run

import (
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// TestAllFailed: 5 failures (3 timeouts, 2 http_5xx) and no success are
// "all 5 requests failed", the classes in runlog.ErrorClasses' order
// (http_5xx before timeout); one success in any level is no failure.
func TestAllFailed(t *testing.T) {
	failed := stats.Summary{Failed: 5, Failures: map[runlog.ErrorClass]int{runlog.ErrTimeout: 3, runlog.ErrHTTP5xx: 2}}
	r := &Result{Levels: []LevelResult{{Summary: failed}}}
	if err := r.AllFailed(); err == nil || err.Error() != "all 5 requests failed (http_5xx 2, timeout 3)" {
		t.Errorf("AllFailed = %v", err)
	}
	r.Levels = append(r.Levels, LevelResult{Summary: stats.Summary{Completed: 1}})
	if err := r.AllFailed(); err != nil {
		t.Errorf("with one success: %v", err)
	}
	if err := (&Result{}).AllFailed(); err != nil {
		t.Errorf("no levels: %v", err)
	}
}
