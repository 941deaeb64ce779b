package run

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/report"
)

// TestTerminalHooks: notes and warnings reach the console, and a quiet
// run's progress writes nothing.
func TestTerminalHooks(t *testing.T) {
	var stderr bytes.Buffer
	h := TerminalHooks(&stderr, report.NewConsole(&stderr, false), false, true)
	h.Note("calibrated")
	h.Log.Warn("host too loaded")
	w := h.Level(context.Background(), 10, time.Second)
	w.Stop()
	got := stderr.String()
	if !strings.Contains(got, "goodput: calibrated\n") || !strings.Contains(got, "host too loaded") {
		t.Errorf("stderr = %q; want the note and the warning", got)
	}
}
