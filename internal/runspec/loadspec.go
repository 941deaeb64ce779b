package runspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/shard"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// LoadSpec is the load of a run as a user gives it: how much, for how
// long, ramped or not, split over machines, retried. Its methods check it
// and build what a Config holds; a bad value is a *setting.Error naming
// the field.
type LoadSpec struct {
	// RequestRate is requests/s as written, "inf" (or "") unpaced.
	RequestRate string
	// Burstiness is the gamma shape of the gaps (1: Poisson).
	Burstiness float64
	// MaxConcurrency caps requests in flight (0: none).
	MaxConcurrency int
	// NumPrompts are the measured requests, NumWarmups those sent first
	// and left out, Duration the limit on sending (0: none).
	NumPrompts, NumWarmups int
	Duration               time.Duration
	// Seed drives the workload and the arrival schedule.
	Seed int64
	// RampUp* are vLLM's ramp-up: a strategy (linear, exponential) and
	// its rates, nil when not given.
	RampUpStrategy               string
	RampUpStartRPS, RampUpEndRPS *float64
	// Spec splits the run over machines.
	shard.Spec
	// Retries, RetryBackoff (loadgen.ParseBackoff's form) and
	// RetryIgnoreRetryAfter are the client's retries of failed requests.
	Retries               int
	RetryBackoff          string
	RetryIgnoreRetryAfter bool
	// SteadyState is "report" (say where each level's warm-up transient
	// and drift were; "" too) or "auto" (also leave the transient out).
	SteadyState string
	// Repeats runs the load that many times (1: once).
	Repeats int
	// TargetPrecision ends a level's sending once its figures are known
	// that precisely (stats.ParsePrecision's syntax; "" none).
	TargetPrecision string
}

// LevelRules are how each level of a run is run and judged beyond its
// load: when it may stop early, how often it repeats, whether its warm-up
// transient is left out.
type LevelRules struct {
	Precision  []stats.PrecisionTarget
	Repeats    int
	SteadyTrim bool
}

// Rules checks TargetPrecision, Repeats and SteadyState for a run
// summarised with so.
func (s *LoadSpec) Rules(so stats.Options) (LevelRules, error) {
	prec, err := s.Precision(so)
	if err != nil {
		return LevelRules{}, err
	}
	if s.SteadyState != "" && s.SteadyState != "report" && s.SteadyState != "auto" {
		return LevelRules{}, setting.Errorf("SteadyState", strconv.Quote(s.SteadyState), "want report or auto")
	}
	if s.Repeats < 1 {
		return LevelRules{}, setting.Errorf("Repeats", strconv.Itoa(s.Repeats), "want 1 or more runs of the load")
	}
	return LevelRules{Precision: prec, Repeats: s.Repeats, SteadyTrim: s.SteadyState == "auto"}, nil
}

// Precision is TargetPrecision's targets for a run summarised with so:
// they need intervals (so.Confidence above 0) and, for goodput, an SLO.
func (s *LoadSpec) Precision(so stats.Options) ([]stats.PrecisionTarget, error) {
	ts, err := stats.ParsePrecision(s.TargetPrecision)
	if err != nil {
		return nil, setting.Errorf("TargetPrecision", "", "%v", err)
	}
	if len(ts) == 0 {
		return nil, nil
	}
	if so.Confidence <= 0 {
		return nil, setting.Errorf("TargetPrecision", strconv.Quote(s.TargetPrecision), "needs intervals: %v must be above 0", setting.Name("Confidence"))
	}
	for _, t := range ts {
		if t.Stat == "goodput" && so.SLO.IsZero() {
			return nil, setting.Errorf("TargetPrecision", strconv.Quote(s.TargetPrecision), "goodput needs an SLO (%v)", setting.Name("Goodput"))
		}
	}
	return ts, nil
}

// Rate is RequestRate in requests/s; 0 means unpaced.
func (s *LoadSpec) Rate() (float64, error) {
	t := strings.TrimSpace(strings.ToLower(s.RequestRate))
	if t == "inf" || t == "" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(t, 64)
	if err != nil || r <= 0 || math.IsNaN(r) {
		return 0, setting.Errorf("RequestRate", strconv.Quote(s.RequestRate), "want a positive number of requests/s or inf")
	}
	if math.IsInf(r, 1) {
		return 0, nil
	}
	if r > runlog.MaxRequestRate {
		// A report of the records would refuse the level it stores.
		return 0, setting.Errorf("RequestRate", strconv.Quote(s.RequestRate), "want at most %g requests/s, or inf", float64(runlog.MaxRequestRate))
	}
	return r, nil
}

// Level is the level the spec describes. NumPrompts not given with a
// Duration sends for the duration only.
func (s *LoadSpec) Level(given setting.Given) (runlog.Level, error) {
	rate, err := s.Rate()
	if err != nil {
		return runlog.Level{}, err
	}
	// The load's ranges are checked once, in loadgen, for every driver;
	// only what a Level cannot hold (a flag's own form) is checked here.
	if err := loadgen.CheckLevel(runlog.Level{RequestRate: rate, Burstiness: s.Burstiness, MaxConcurrency: s.MaxConcurrency,
		NumPrompts: s.NumPrompts, NumWarmups: s.NumWarmups, DurationS: s.Duration.Seconds()}); err != nil {
		return runlog.Level{}, err
	}
	n := s.NumPrompts
	if s.Duration > 0 && !given.Has("NumPrompts") {
		n = 0
	}
	if n == 0 && s.Duration == 0 {
		return runlog.Level{}, setting.Errorf("", "", "%v 0 needs %v", setting.Name("NumPrompts"), setting.Name("Duration"))
	}
	ramp, err := s.ramp(rate, n)
	if err != nil {
		return runlog.Level{}, err
	}
	lv := runlog.Level{RequestRate: rate, Burstiness: s.Burstiness, MaxConcurrency: s.MaxConcurrency,
		NumPrompts: n, DurationS: s.Duration.Seconds(), NumWarmups: s.NumWarmups, Ramp: ramp}
	if ramp != nil {
		lv.Label = fmt.Sprintf("ramp-up %s %g→%g req/s", ramp.Strategy, ramp.StartRPS, ramp.EndRPS)
	}
	return lv, nil
}

// LevelFor is Level for a run of the dataset named: a trace replays
// whole unless NumPrompts is given, and a run of the embedded simulator
// (embedded) is a quick look, 200 requests, unless NumPrompts or a
// Duration is given.
func (s *LoadSpec) LevelFor(dataset string, embedded bool, given setting.Given) (runlog.Level, error) {
	trace, c := strings.EqualFold(dataset, "trace"), *s
	if embedded && !given.Has("NumPrompts") && s.Duration == 0 && !trace {
		c.NumPrompts = 200
	}
	lv, err := c.Level(given)
	if err == nil && lv.DurationS == 0 && !given.Has("NumPrompts") && trace {
		lv.NumPrompts = 0
	}
	return lv, err
}

// ramp is the ramp-up asked for, nil for none; rate is RequestRate parsed
// and n the measured requests.
func (s *LoadSpec) ramp(rate float64, n int) (*runlog.Ramp, error) {
	st := strings.ToLower(strings.TrimSpace(s.RampUpStrategy))
	start, end := s.RampUpStartRPS, s.RampUpEndRPS
	if st == "" {
		if start != nil || end != nil {
			return nil, setting.Errorf("", "", "%v and %v need %v linear or exponential",
				setting.Name("RampUpStartRPS"), setting.Name("RampUpEndRPS"), setting.Name("RampUpStrategy"))
		}
		return nil, nil
	}
	strategy := workload.RampStrategy(st)
	if strategy != workload.RampLinear && strategy != workload.RampExponential {
		return nil, setting.Errorf("RampUpStrategy", strconv.Quote(s.RampUpStrategy), "want linear or exponential")
	}
	if start == nil || end == nil {
		return nil, setting.Errorf("", "", "%v %s needs both %v and %v", setting.Name("RampUpStrategy"), st, setting.Name("RampUpStartRPS"), setting.Name("RampUpEndRPS"))
	}
	r := &runlog.Ramp{Strategy: st, StartRPS: *start, EndRPS: *end}
	switch {
	case rate > 0:
		return nil, setting.Errorf("", "", "%v sets the request rate: leave %v at inf (it is %s)", setting.Name("RampUpStrategy"), setting.Name("RequestRate"), s.RequestRate)
	case r.StartRPS < 0 || r.EndRPS < 0:
		return nil, setting.Errorf("", "", "%v %g, %v %g: want rates ≥ 0", setting.Name("RampUpStartRPS"), r.StartRPS, setting.Name("RampUpEndRPS"), r.EndRPS)
	case r.StartRPS == 0 && strategy == workload.RampExponential:
		return nil, setting.Errorf("RampUpStartRPS", "0", "an exponential ramp cannot start at 0 requests/s")
	case r.StartRPS == 0:
		return nil, setting.Errorf("RampUpStartRPS", "0", "the first request's rate would be 0 (no gap before it is defined); start above 0")
	case r.EndRPS < r.StartRPS:
		return nil, setting.Errorf("", "", "%v %g is below %v %g: the ramp goes up", setting.Name("RampUpEndRPS"), r.EndRPS, setting.Name("RampUpStartRPS"), r.StartRPS)
	case !(r.EndRPS <= runlog.MaxRequestRate):
		return nil, setting.Errorf("RampUpEndRPS", fmt.Sprint(r.EndRPS), "want at most %g requests/s", float64(runlog.MaxRequestRate))
	case n <= 0:
		return nil, setting.Errorf("", "", "%v ramps over %v requests: give %v", setting.Name("RampUpStrategy"), setting.Name("NumPrompts"), setting.Name("NumPrompts"))
	}
	return r, nil
}

// Retry is the client's retry policy, nil for no retries.
func (s *LoadSpec) Retry() (*loadgen.RetryPolicy, error) {
	if s.Retries < 0 || s.Retries > 100 {
		return nil, setting.Errorf("Retries", strconv.Itoa(s.Retries), "want 0 to 100")
	}
	p, err := loadgen.ParseBackoff(s.RetryBackoff)
	if err != nil {
		return nil, setting.Errorf("RetryBackoff", strconv.Quote(s.RetryBackoff), "%v", err)
	}
	if s.Retries == 0 {
		if s.RetryIgnoreRetryAfter {
			return nil, setting.Errorf("", "", "%v needs %v", setting.Name("RetryIgnoreRetryAfter"), setting.Name("Retries"))
		}
		return nil, nil
	}
	p.Max = s.Retries
	p.IgnoreRetryAfter = s.RetryIgnoreRetryAfter
	return &p, nil
}

// ShardOf is the load's shard (nil: a whole run) and its start (zero:
// once ready), the index of Shards N read from shard.JobIndexEnv through getenv
// (nil: none).
func (s *LoadSpec) ShardOf(getenv func(string) string, now time.Time) (*shard.Shard, time.Time, error) {
	index := ""
	if getenv != nil {
		index = getenv(shard.JobIndexEnv)
	}
	return s.Spec.Build(index, now)
}
