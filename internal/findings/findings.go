// Package findings explains a run: diagnosis rules turn a stats.Summary (and,
// for rules that need per-request timing, a Tracker fed one pass over the
// records) into findings, each with the numbers that triggered it — queueing
// versus prefill compute, prefill stalling decode, hidden reasoning, cache
// optimism, unrealistic length distributions, long tails, small samples,
// failures by class — plus the client-bound verdict (the load generator, not
// the server, was the bottleneck), the overload verdict (the server fell
// behind an open-loop schedule), a concurrency cap that held the offered
// load back, and the one-line SLA sentence.
//
// The package is pure: no clock, no I/O but the writer given to Render. A
// Tracker is not safe for concurrent use; Analyze and Render are.
package findings

import (
	"math"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Severity ranks a finding.
type Severity string

// Severities, most severe first.
const (
	// Critical means the numbers cannot be trusted or the run mostly failed.
	Critical Severity = "critical"
	// Warning means the numbers hold but mislead if read naively.
	Warning Severity = "warning"
	// Info is a diagnosis or a fact worth stating.
	Info Severity = "info"
)

// Finding is one diagnosis with its evidence. It marshals as
// {id, severity, message, evidence}.
type Finding struct {
	// ID names the rule, e.g. "ttft-queueing" or "client-bound".
	ID string `json:"id"`
	// Severity ranks it.
	Severity Severity `json:"severity"`
	// Message is one human sentence or two: what was seen, what it means,
	// what to do.
	Message string `json:"message"`
	// Evidence holds the figures that triggered the rule, keyed with their
	// unit (…_ms, …_pct, …_tokens); values are numbers, strings or maps.
	Evidence map[string]any `json:"evidence"`
}

// DefaultReadingSpeedMs is the reading speed assumed when Input leaves it
// unset, ms per token: stats.ReadingSpeedMs, the one figure (with its
// source) that compare and the chat preset use too.
const DefaultReadingSpeedMs = stats.ReadingSpeedMs

// Thresholds of the rules (see docs/sweep.md).
const (
	// DefaultTTFTLimitMs is the TTFT P99 deemed high when no SLO sets one.
	DefaultTTFTLimitMs = 2000
	// tpotStableRatio: TPOT is stable when its P99 is at most this times its
	// P50 (and within any TPOT SLO).
	tpotStableRatio = 2.0
	// minBucketRequests is the fewest completed requests a bucket needs to
	// count in the queueing/prefill split.
	minBucketRequests = 10
	// hiddenWaitRatio and hiddenWaitMinMs: TTP P50 at least this times TTFT
	// P50 and this many ms above it.
	hiddenWaitRatio = 2.0
	hiddenWaitMinMs = 100.0
	// cachedShareHigh is the share of prompt tokens served from cache above
	// which TTFT is optimistic for cold traffic.
	cachedShareHigh = 0.3
	// lowCV is the coefficient of variation (std/mean) of lengths below which
	// they count as constant.
	lowCV = 0.05
	// minLengthSamples is the fewest lengths the variance rule needs.
	minLengthSamples = 10
	// longTailRatio: P99 at least this times the mean is a long tail.
	longTailRatio = 3.0
	// failureCriticalShare is the failed share from which failures are
	// critical.
	failureCriticalShare = 0.05
	// sendLagP50Ms and sendLagP99Ms: send lag within these is timer noise
	// whatever the scale; sendLagLatencyShare: lag beyond them changes the
	// load only when its P99 is at least this share of a typical request's
	// latency (see lateLag).
	sendLagP50Ms        = 5.0
	sendLagP99Ms        = 50.0
	sendLagLatencyShare = 0.1
	// delayedShare is the share of arrivals delayed by a full in-flight cap
	// from which the offered load counts as not delivered.
	delayedShare = 0.01
	// capHeavyShare is the share of arrivals delayed by the cap from which
	// the cap finding is a warning: the level's rate no longer describes
	// the load offered.
	capHeavyShare = 0.1
	// minOverloadRequests is the fewest measured requests the overload rule
	// needs; overloadWaitRatio and overloadMinGrowthMs: the median wait for
	// the first token of the last third of sends must be at least this
	// times, and this many ms above, the first third's;
	// overloadBacklogShare: and the requests in flight must grow from
	// mid-window to the last send by this share of the requests sent then.
	minOverloadRequests  = 50
	overloadWaitRatio    = 2.0
	overloadMinGrowthMs  = 500.0
	overloadBacklogShare = 0.05
	// clientCPUHigh is the client's CPU use (fraction of all cores) deemed
	// saturated; below clientCPUBusy late sends are not the client's own
	// doing but the host's (other load, CPU steal).
	clientCPUHigh = 0.8
	clientCPUBusy = 0.5
)

// Input is what the rules look at.
type Input struct {
	// Summary is the run (or one level) summarised; required.
	Summary *stats.Summary
	// Meta describes the run; may be nil.
	Meta *runlog.Meta
	// Level is the summarised level's load; nil means Meta.Levels[Summary.Level]
	// (or the only level).
	Level *runlog.Level
	// Levels is the number of load levels in the whole run (a sweep has
	// several); 0 means len(Meta.Levels), or 1.
	Levels int
	// Requests is the per-request view for the rules that need timing
	// across requests (ITL spikes against prefills, in-flight growth); nil
	// skips them.
	Requests *Tracker
	// ReadingSpeedMs is the per-token time a reader needs, ms; 0 means
	// DefaultReadingSpeedMs.
	ReadingSpeedMs float64
	// ClientCPU is the CPU the load generator used over the run as a
	// fraction of all cores (0–1); 0 means not measured.
	ClientCPU float64
}

func (in *Input) level() *runlog.Level {
	if in.Level != nil {
		return in.Level
	}
	if in.Meta == nil || in.Summary == nil {
		return nil
	}
	i := in.Summary.Level
	if i < 0 && len(in.Meta.Levels) == 1 {
		i = 0
	}
	if i < 0 || i >= len(in.Meta.Levels) {
		return nil
	}
	return &in.Meta.Levels[i]
}

// Analyze runs every rule over in and returns the findings in order of
// importance: the client-bound verdict, overload, a limiting concurrency
// cap, failures, latency diagnoses, caveats
// about the workload and the sample, and last the SLA sentence. A nil
// Summary yields nothing.
func Analyze(in Input) []Finding {
	if in.Summary == nil {
		return nil
	}
	var fs []Finding
	add := func(f Finding, ok bool) {
		if ok {
			fs = append(fs, f)
		}
	}
	add(ClientBound(in))
	add(HostBusy(in))
	add(Overload(in))
	add(CapLimited(in))
	fs = append(fs, failures(in)...)
	add(RetryAmplification(in))
	add(ttftHigh(in))
	add(prefillStalls(in))
	add(hiddenWait(in))
	add(outputBuffered(in))
	add(multiTokenChunks(in))
	add(readingSpeed(in))
	add(cacheOptimistic(in))
	add(uniformLengths(in))
	add(concurrencyOne(in))
	add(longTail(in))
	add(smallSample(in))
	if s := SLASentence(in); s != "" {
		fs = append(fs, Finding{ID: "sla", Severity: Info, Message: s, Evidence: slaEvidence(in)})
	}
	return fs
}

// Num formats a figure as findings write them: at most two decimals,
// trailing zeros dropped.
func Num(x float64) string { return num(x) }

// num formats a figure with at most two decimals, dropping trailing zeros.
func num(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	s := strconv.FormatFloat(x, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// round2 rounds evidence figures to two decimals so JSON stays readable.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// pctOf is 100·n/d rounded to two decimals, 0 when d is 0.
func pctOf(n, d float64) float64 {
	if d == 0 {
		return 0
	}
	return round2(100 * n / d)
}
