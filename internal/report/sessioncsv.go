package report

import (
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goodput/goodput/internal/stats"
)

// The file names WriteSessionCSVDir writes.
const (
	TurnsCSVName    = "turns.csv"
	SessionsCSVName = "sessions.csv"
)

// TurnsColumns are the columns of the per-turn CSV: one row per turn index.
// sessions counts the sessions that reached the turn; latencies are
// milliseconds (empty when the summary has no such value: a turn without a
// TTFT or TTP, or P95 and P99 when the run's percentiles left them out);
// prompt_tokens_p50 is the turn's first request's prompt length; cached_share
// is 0–1.
var TurnsColumns = []string{
	"turn", "sessions", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms",
	"ttp_p50_ms", "ttp_p95_ms", "ttp_p99_ms", "prompt_tokens_p50", "cached_share",
}

// SessionsColumns are the columns of the per-session CSV: one row per
// session, in order of start. start_ms is its first send from the run's
// start; durations are milliseconds; failed and met_slo are true or false
// (met_slo empty without a session SLO); max_turn_ttp_ms and
// turn_ttft_p95_ms are empty for a session without a turn TTP or TTFT.
var SessionsColumns = []string{
	"session_id", "start_ms", "turns", "tool_rounds", "failed", "duration_ms",
	"model_ms", "tool_ms", "think_ms", "max_turn_ttp_ms", "turn_ttft_p95_ms", "met_slo",
}

// pcellCSV is the p-th percentile of m as a CSV cell, "" when absent.
func pcellCSV(m stats.MetricSummary, p float64) string {
	if v, ok := pv(m, p); ok {
		return fcell(v)
	}
	return ""
}

// WriteTurnsCSV writes s's turns (TurnsColumns); only the header when s
// is nil or has no sessions.
func WriteTurnsCSV(w io.Writer, s *stats.SessionSummary) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(TurnsColumns)
	if s != nil {
		for _, t := range s.Turns {
			_ = cw.Write([]string{
				strconv.Itoa(t.Turn), strconv.Itoa(t.N),
				pcellCSV(t.TTFT, 50), pcellCSV(t.TTFT, 95), pcellCSV(t.TTFT, 99),
				pcellCSV(t.TTP, 50), pcellCSV(t.TTP, 95), pcellCSV(t.TTP, 99),
				pcellCSV(t.Prompt, 50), fcell(t.CachedShare),
			})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSessionsCSV writes s's sessions (SessionsColumns); only the header
// when s is nil or has no sessions.
func WriteSessionsCSV(w io.Writer, s *stats.SessionSummary) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(SessionsColumns)
	if s != nil {
		judged := !s.SLO.IsZero()
		for _, p := range s.PerSession {
			ttp, ttft, met := "", "", ""
			if len(p.TurnTTPs) > 0 {
				ttp = fcell(p.MaxTurnTTPMs)
			}
			if len(p.TurnTTFTs) > 0 {
				ttft = fcell(p.TurnTTFTP95Ms)
			}
			if judged {
				met = strconv.FormatBool(p.MetSLO)
			}
			_ = cw.Write([]string{
				p.ID, fcell(float64(p.Start) / 1e6), strconv.Itoa(p.Turns), strconv.Itoa(p.ToolRounds), strconv.FormatBool(p.Failed),
				fcell(p.DurationMs), fcell(toMs(int64(p.Model))), fcell(toMs(int64(p.Tool))), fcell(toMs(int64(p.Think))),
				ttp, ttft, met,
			})
		}
	}
	cw.Flush()
	return cw.Error()
}

func toMs(ns int64) float64 { return float64(ns) / 1e6 }

// WriteSessionCSVDir writes TurnsCSVName and SessionsCSVName for s into
// dir, creating it, and returns the paths written; it writes nothing when
// s is nil or has no sessions (a run without sessions).
func WriteSessionCSVDir(dir string, s *stats.SessionSummary) ([]string, error) {
	if s == nil || s.Sessions == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		name  string
		write func(io.Writer, *stats.SessionSummary) error
	}{{TurnsCSVName, WriteTurnsCSV}, {SessionsCSVName, WriteSessionsCSV}} {
		p := filepath.Join(dir, f.name)
		if err := writeFile(p, func(w io.Writer) error { return f.write(w, s) }); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
