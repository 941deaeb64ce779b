package runspec

import (
	"errors"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// SessionSpec is a session workload as a user gives it: sessions arrive
// open-loop at Rate, turns follow each other closed-loop with think time;
// the distributions are workload.ParseDist's text ("" their default).
type SessionSpec struct {
	Rate, Burstiness           float64
	MaxConcurrent, NumSessions int
	// Turns, ThinkTime, ToolShare, ToolCalls and Tools shape synthetic
	// conversations only.
	Turns, ThinkTime string
	// History is a runlog.HistorySource, any case.
	History                    string
	MaxContext, MaxToolRounds  int
	ToolLatency, ToolResultLen string
	ToolShare                  float64
	ToolCalls                  string
	Tools                      []string
	// Goodput is the session SLO's text, which judges sessions only.
	Goodput string
}

// IsSessionDataset reports whether a dataset name is a session workload's.
func IsSessionDataset(name string) bool {
	switch strings.ToLower(name) {
	case "conversations", "mooncake-sessions":
		return true
	}
	return false
}

// Load is the session load over the workload w (nil when w's dataset is
// not a session one). Errors are *setting.Error of SessionSpec's fields,
// and of w's as Workload.FIELD; a dataset file's own errors pass as they
// are.
func (s SessionSpec) Load(w workload.Options, seed int64) (*run.SessionLoad, error) {
	if IsJobDataset(w.DatasetName) {
		return s.jobs(w)
	}
	if !IsSessionDataset(w.DatasetName) {
		if s.Goodput != "" {
			return nil, setting.Errorf("", "", "%v judges sessions: give %v conversations or mooncake-sessions", setting.Name("Goodput"), setting.Name("Workload.DatasetName"))
		}
		return nil, nil
	}
	history := runlog.HistorySource(strings.ToLower(s.History))
	switch {
	case history != runlog.HistoryServer && history != runlog.HistoryRecorded && history != runlog.HistoryChained:
		return nil, setting.Errorf("History", strconv.Quote(s.History), "want server, recorded or chained")
	case s.Rate < 0 || s.MaxConcurrent < 0 || s.NumSessions < 0 || s.MaxContext < 0 || s.MaxToolRounds < 0:
		return nil, setting.Errorf("", "", "%v, %v, %v, %v and %v: want ≥ 0", setting.Name("Rate"), setting.Name("MaxConcurrent"),
			setting.Name("NumSessions"), setting.Name("MaxContext"), setting.Name("MaxToolRounds"))
	case !(s.Burstiness > 0):
		return nil, setting.Errorf("Burstiness", strconv.FormatFloat(s.Burstiness, 'g', -1, 64), "want > 0")
	}
	var tok tokenize.Tokenizer
	if w.Tokenizer != "" {
		var err error
		if tok, err = tokenize.Load(w.Tokenizer); err != nil {
			return nil, setting.Errorf("Workload.Tokenizer", "", "%v", err)
		}
	}
	mooncake := strings.EqualFold(w.DatasetName, "mooncake-sessions")
	var set workload.SessionSet
	var err error
	switch {
	case mooncake && w.DatasetPath == "":
		return nil, setting.Errorf("", "", "%v mooncake-sessions needs %v (the Mooncake conversation trace)",
			setting.Name("Workload.DatasetName"), setting.Name("Workload.DatasetPath"))
	case w.DatasetPath != "":
		set, err = workload.LoadSessionFile(workload.SessionFile{Path: w.DatasetPath, Mooncake: mooncake, NumSessions: s.NumSessions,
			Seed: seed, NoShuffle: w.NoShuffle, Tokenizer: tok})
	default:
		set, err = s.conversations(w, seed)
	}
	if err != nil {
		return nil, err
	}
	load := &run.SessionLoad{Set: set, NumSessions: s.NumSessions, Rate: s.Rate, Burstiness: s.Burstiness,
		MaxConcurrent: s.MaxConcurrent, History: history, MaxContext: s.MaxContext, MaxToolRounds: s.MaxToolRounds}
	if load.ToolLatency, err = dist("ToolLatency", s.ToolLatency, ""); err != nil {
		return nil, err
	}
	if load.ToolResultLen, err = dist("ToolResultLen", s.ToolResultLen, ""); err != nil {
		return nil, err
	}
	return load, nil
}

// dist parses the distribution of field (def when "", nil when both are).
func dist(field, spec, def string) (workload.Dist, error) {
	if spec == "" {
		if spec = def; spec == "" {
			return nil, nil
		}
	}
	d, err := workload.ParseDist(spec)
	if err != nil {
		return nil, setting.Errorf(field, "", "%v", err)
	}
	return d, nil
}

// conversations is the synthetic conversation generator: turn lengths
// from w's length distributions (else its random lengths), a shared
// system prompt of w's SharedPrefixLen tokens.
func (s SessionSpec) conversations(w workload.Options, seed int64) (workload.SessionSet, error) {
	c := workload.ConversationsConfig{NumSessions: s.NumSessions, Seed: seed, SystemPromptLen: w.SharedPrefixLen, ToolShare: s.ToolShare, Tools: s.Tools}
	if c.NumSessions == 0 {
		c.NumSessions = 20
	}
	for _, d := range []struct {
		to               *workload.Dist
		field, spec, def string
	}{
		{&c.Turns, "Turns", s.Turns, "fixed:4"},
		{&c.ThinkTime, "ThinkTime", s.ThinkTime, "fixed:0"},
		{&c.InputLen, "Workload.InputLenDist", w.InputLenDist, "fixed:" + strconv.Itoa(w.RandomInputLen)},
		{&c.OutputLen, "Workload.OutputLenDist", w.OutputLenDist, "fixed:" + strconv.Itoa(w.RandomOutputLen)},
		{&c.ToolCalls, "ToolCalls", s.ToolCalls, "fixed:1"},
		{&c.ToolLatency, "ToolLatency", s.ToolLatency, "fixed:0"},
		{&c.ToolResultLen, "ToolResultLen", s.ToolResultLen, "fixed:64"},
	} {
		var err error
		if *d.to, err = dist(d.field, d.spec, d.def); err != nil {
			return nil, err
		}
	}
	set, err := workload.NewConversations(c)
	var oe *workload.OptionError
	if errors.As(err, &oe) {
		// The generator's fields are the spec's, but for the system prompt.
		field := oe.Field
		if field == "SystemPromptLen" {
			field = "Workload.SharedPrefixLen"
		}
		return nil, setting.Errorf(field, oe.ValueText(), "%v", oe.Err)
	}
	return set, err
}
