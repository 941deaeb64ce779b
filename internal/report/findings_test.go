package report

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goodput/goodput/internal/findings"
)

func TestFindingsTerminal(t *testing.T) {
	fs := []findings.Finding{
		{ID: "client-bound", Severity: findings.Critical, Message: "CLIENT-BOUND: x.", Evidence: map[string]any{"b": 2.5, "a": 1}},
		{ID: "sla", Severity: findings.Info, Message: "TTFT P50 1 ms", Evidence: map[string]any{"x": 1}},
	}
	var b bytes.Buffer
	if err := FindingsTerminal(&b, fs); err != nil {
		t.Fatal(err)
	}
	want := "-------------------------------Findings-------------------------------\n" +
		"!! [critical] client-bound: CLIENT-BOUND: x.\n" +
		"     evidence: a=1, b=2.5\n" +
		"   [info] sla: TTFT P50 1 ms\n"
	if b.String() != want {
		t.Errorf("Render =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := FindingsTerminal(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("FindingsTerminal(nil) wrote %q, %v; want nothing", b.String(), err)
	}
	if err := FindingsTerminal(failWriter{}, fs); !errors.Is(err, errWrite) {
		t.Errorf("Render to a failing writer = %v; want %v", err, errWrite)
	}
}
