package report

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

func TestSessionsGolden(t *testing.T) {
	s := stats.SummarizeSessions(runlogtest.Sessions(), nil, stats.SessionSLO{TTP: 500 * time.Millisecond, Duration: 2 * time.Second}, 0)
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

// manySessions is n sessions of two turns, one a second apart: turn 1's
// TTFT grows by 1 ms a session from 100 ms, turn 2's is half of it, and a
// session lasts 600 ms plus 2 ms a session; prompts 1,000 and 2,000
// tokens.
func manySessions(n int) []runlog.Record {
	const ms = int64(time.Millisecond)
	var recs []runlog.Record
	for i := range n {
		at := int64(i) * 1000 * ms
		ttft := int64(100 + i)
		id := strconv.Itoa(i)
		recs = append(recs,
			runlog.Record{ID: id + "a", SessionID: id, Turn: 1, Intended: at, Sent: at, End: at + 250*ms, PromptTokens: 1000, Status: 200,
				Chunks: []runlog.Chunk{{T: at + ttft*ms, Tokens: 1, Visible: true}}},
			runlog.Record{ID: id + "b", SessionID: id, Turn: 2, Intended: at + 300*ms, Sent: at + 300*ms, End: at + int64(600+2*i)*ms, PromptTokens: 2000, Status: 200,
				Chunks: []runlog.Chunk{{T: at + 300*ms + ttft/2*ms, Tokens: 1, Visible: true}}})
	}
	return recs
}

// TestSessionsGoldenIntervals: 60 sessions at 95 %: the medians carry
// intervals, the P99s of 60 sessions (120 turns) cannot, the SLO's
// attainment is Wilson's and the session goodput that interval scaled.
func TestSessionsGoldenIntervals(t *testing.T) {
	s := stats.SummarizeSessions(manySessions(60), []float64{50, 99}, stats.SessionSLO{Duration: 700 * time.Millisecond}, 0.95)
	var b bytes.Buffer
	if err := SessionsTerminal(&b, &s, TermOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "sessions_ci.golden", b.Bytes())
	j, err := json.MarshalIndent(SessionsJSON(&s), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sessions_ci.golden.json", append(j, '\n'))
}
