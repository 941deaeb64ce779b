package cli

import (
	"errors"
	iofs "io/fs"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// sessionFlags say how a session workload (--dataset-name conversations or
// mooncake-sessions) runs.
type sessionFlags struct{ runspec.SessionSpec }

func (s *sessionFlags) register(fs *pflag.FlagSet) {
	fs.Float64Var(&s.Rate, "session-rate", 0, "sessions: arrival rate in sessions/s (0: all due at once, --max-concurrent-sessions paces them)")
	fs.Float64Var(&s.Burstiness, "session-burstiness", 1, "sessions: gamma shape of the gaps between session arrivals")
	fs.IntVar(&s.MaxConcurrent, "max-concurrent-sessions", 0, "sessions: cap on sessions in progress (0: none)")
	fs.IntVar(&s.NumSessions, "num-sessions", 0, "sessions: how many to run (0: the dataset's; synthetic conversations: 20)")
	fs.StringVar(&s.Turns, "turns", "", "synthetic conversations: turns per session, a distribution (fixed:N, uniform:A,B, ...; default fixed:4)")
	fs.StringVar(&s.ThinkTime, "think-time", "", "synthetic conversations: the user's think time before each later turn, ms, a distribution (default fixed:0)")
	fs.StringVar(&s.History, "history", "server", "sessions: what later turns resend as the earlier answers: server (what the server answered), recorded (the dataset's replies) or chained (nothing: each request names the previous response, --backend openai-responses)")
	fs.IntVar(&s.MaxContext, "max-context", 0, "sessions: cap a turn's request (history + the reply asked) at this many tokens by leaving out the earliest turns, counted in the records (0: no cap)")
	fs.IntVar(&s.MaxToolRounds, "max-tool-rounds", 0, "sessions: most tool rounds in one turn; a model still calling tools after them ends the turn (0: 8)")
	fs.StringVar(&s.ToolLatency, "tool-latency", "", "sessions: each tool's latency in ms, a distribution, for calls the dataset does not time (default fixed:0)")
	fs.StringVar(&s.ToolResultLen, "tool-result-len", "", "sessions: each tool result's length in tokens, a distribution, where the dataset does not give it (default fixed:64)")
	fs.Float64Var(&s.ToolShare, "tool-share", 0, "synthetic conversations: share of turns in which the model calls tools")
	fs.StringVar(&s.ToolCalls, "tool-calls", "", "synthetic conversations: tool calls in a turn that calls tools, a distribution (default fixed:1)")
	fs.StringSliceVar(&s.Tools, "tools", nil, "synthetic conversations: the tools the sessions declare, comma-separated (default tool)")
	registerSessionGoodput(fs, &s.Goodput)
}

// registerSessionGoodput adds --session-goodput, the session SLO, as bench
// and report name it.
func registerSessionGoodput(fs *pflag.FlagSet, spec *string) {
	fs.StringVar(spec, "session-goodput", "", "session SLO for session goodput, e.g. 'ttp:2000 turn_ttft_p95:800 duration:60000' (ms: every turn's time to publish, the P95 of a session's turn TTFTs, its duration)")
}

// sessionLoad is the session workload the flags describe, or nil when the
// dataset is not one; seed is --seed.
func (s *sessionFlags) sessionLoad(env Env, work *workloadFlags, out *outputFlags, seed int64) (*run.SessionLoad, stats.SessionSLO, error) {
	slo, err := out.sessionSLO(s.Goodput)
	if err != nil {
		return nil, slo, err
	}
	w := work.o
	if w.DatasetPath != "" {
		w.DatasetPath = resolve(env, w.DatasetPath)
	}
	load, err := s.Load(w, seed)
	var (
		pe *iofs.PathError
		se *setting.Error
	)
	switch {
	case errors.As(err, &pe):
		// The file the user named is not there or cannot be read.
		err = setting.Errorf("DatasetPath", pe.Path, "%v", pe.Err)
	case err != nil && !errors.As(err, &se):
		return nil, slo, usageError{err} // the session file's own line
	}
	// Goodput is the summary's field too: the path says whose.
	return load, slo, setting.Within("SessionSpec", err)
}
