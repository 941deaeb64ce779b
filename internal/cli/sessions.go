package cli

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// sessionFlags say how a session workload (--dataset-name conversations or
// mooncake-sessions) runs: sessions arrive open-loop, turns follow each
// other closed-loop with think time.
type sessionFlags struct {
	Rate          float64
	Burstiness    float64
	MaxConcurrent int
	NumSessions   int
	Turns         string
	ThinkTime     string
	History       string
	Goodput       string
	MaxContext    int
	MaxToolRounds int
	ToolLatency   string
	ToolResultLen string
	ToolShare     float64
	ToolCalls     string
	Tools         []string
}

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

// notSessions refuses a session workload where sessions do not run yet.
func notSessions(dataset, where string) error {
	if isSessionDataset(dataset) {
		return usagef("--dataset-name %s: sessions run with goodput bench (over HTTP, the embedded simulator included), not yet %s", dataset, where)
	}
	return nil
}

// isSessionDataset reports whether --dataset-name names a session workload.
func isSessionDataset(name string) bool {
	switch strings.ToLower(name) {
	case "conversations", "mooncake-sessions":
		return true
	}
	return false
}

// sessionLoad is the session workload the flags describe, or nil when the
// dataset is not one; seed is --seed.
func (s *sessionFlags) sessionLoad(env Env, work *workloadFlags, out *outputFlags, seed int64) (*run.SessionLoad, stats.SessionSLO, error) {
	w := &work.o
	slo, err := out.sessionSLO(s.Goodput)
	if err != nil {
		return nil, slo, err
	}
	if !isSessionDataset(w.DatasetName) {
		if s.Goodput != "" {
			return nil, slo, usagef("--session-goodput judges sessions: give --dataset-name conversations or mooncake-sessions")
		}
		return nil, slo, nil
	}
	history := runlog.HistorySource(strings.ToLower(s.History))
	switch {
	case history != runlog.HistoryServer && history != runlog.HistoryRecorded && history != runlog.HistoryChained:
		return nil, slo, usagef("--history %q: want server, recorded or chained", s.History)
	case s.Rate < 0 || s.MaxConcurrent < 0 || s.NumSessions < 0 || s.MaxContext < 0 || s.MaxToolRounds < 0:
		return nil, slo, usagef("--session-rate, --max-concurrent-sessions, --num-sessions, --max-context and --max-tool-rounds: want ≥ 0")
	case !(s.Burstiness > 0):
		return nil, slo, usagef("--session-burstiness %v: want > 0", s.Burstiness)
	}
	path := w.DatasetPath
	if path != "" && env.Dir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(env.Dir, path)
	}
	var tok tokenize.Tokenizer
	if w.Tokenizer != "" {
		if tok, err = tokenize.Load(w.Tokenizer); err != nil {
			return nil, slo, usagef("--tokenizer: %v", err)
		}
	}
	mooncake := strings.EqualFold(w.DatasetName, "mooncake-sessions")
	var set workload.SessionSet
	switch {
	case mooncake && path == "":
		return nil, slo, usagef("--dataset-name mooncake-sessions needs --dataset-path (the Mooncake conversation trace)")
	case path != "":
		set, err = workload.LoadSessionFile(workload.SessionFile{Path: path, Mooncake: mooncake, NumSessions: s.NumSessions,
			Seed: seed, NoShuffle: w.NoShuffle, Tokenizer: tok})
	default:
		set, err = s.conversations(w, seed)
	}
	if err != nil {
		return nil, slo, flagError(err, "")
	}
	load := &run.SessionLoad{Set: set, NumSessions: s.NumSessions, Rate: s.Rate, Burstiness: s.Burstiness,
		MaxConcurrent: s.MaxConcurrent, History: history, MaxContext: s.MaxContext, MaxToolRounds: s.MaxToolRounds}
	if s.ToolLatency != "" {
		if load.ToolLatency, err = parseDistFlag("--tool-latency", s.ToolLatency); err != nil {
			return nil, slo, err
		}
	}
	if s.ToolResultLen != "" {
		if load.ToolResultLen, err = parseDistFlag("--tool-result-len", s.ToolResultLen); err != nil {
			return nil, slo, err
		}
	}
	return load, slo, nil
}

// parseDistFlag parses a distribution flag (the --input-len-dist syntax).
func parseDistFlag(flag, spec string) (workload.Dist, error) {
	d, err := workload.ParseDist(spec)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return d, nil
}

// conversations is the synthetic conversation generator of the flags: turn
// lengths from --input-len-dist / --output-len-dist (else the random
// dataset's lengths), a shared system prompt of --shared-prefix-len tokens.
func (s *sessionFlags) conversations(w *workload.Options, seed int64) (workload.SessionSet, error) {
	dist := func(flag, spec, def string) (workload.Dist, error) {
		if spec == "" {
			spec = def
		}
		return parseDistFlag(flag, spec)
	}
	turns, err := dist("--turns", s.Turns, "fixed:4")
	if err != nil {
		return nil, err
	}
	think, err := dist("--think-time", s.ThinkTime, "fixed:0")
	if err != nil {
		return nil, err
	}
	in, err := dist("--input-len-dist", w.InputLenDist, "fixed:"+strconv.Itoa(w.RandomInputLen))
	if err != nil {
		return nil, err
	}
	out, err := dist("--output-len-dist", w.OutputLenDist, "fixed:"+strconv.Itoa(w.RandomOutputLen))
	if err != nil {
		return nil, err
	}
	calls, err := dist("--tool-calls", s.ToolCalls, "fixed:1")
	if err != nil {
		return nil, err
	}
	latency, err := dist("--tool-latency", s.ToolLatency, "fixed:0")
	if err != nil {
		return nil, err
	}
	result, err := dist("--tool-result-len", s.ToolResultLen, "fixed:64")
	if err != nil {
		return nil, err
	}
	n := s.NumSessions
	if n == 0 {
		n = 20
	}
	return workload.NewConversations(workload.ConversationsConfig{NumSessions: n, Seed: seed, Turns: turns, ThinkTime: think,
		InputLen: in, OutputLen: out, SystemPromptLen: w.SharedPrefixLen,
		ToolShare: s.ToolShare, ToolCalls: calls, Tools: s.Tools, ToolLatency: latency, ToolResultLen: result})
}
