package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

func TestSessionsGolden(t *testing.T) {
	s := stats.SummarizeSessions(runlogtest.Sessions(), nil, stats.SessionSLO{TTP: 500 * time.Millisecond, Duration: 2 * time.Second})
	var b bytes.Buffer
	if err := SessionsTerminal(&b, &s, TermOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "sessions.golden", b.Bytes())
	j, err := json.MarshalIndent(SessionsJSON(&s), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sessions.golden.json", append(j, '\n'))
	// No sessions: nothing written.
	b.Reset()
	if err := SessionsTerminal(&b, &stats.SessionSummary{}, TermOptions{}); err != nil || b.Len() != 0 || SessionsJSON(nil) != nil {
		t.Errorf("no sessions wrote %q", b.String())
	}
}
