package stats

import "github.com/goodput/goodput/internal/runlog"

// Summary aggregates the non-warm-up records of one run (or one load level).
// Latency fields are in milliseconds, throughputs per second, token counts in
// tokens. Zero values mean "nothing to measure" (e.g. no successful request),
// as vLLM reports them.
type Summary struct {
	// Options are the effective options (defaults filled in).
	Options Options

	// Level is the load level all records belonged to, or -1 when they were
	// mixed (the caller should have split them) or there were none.
	Level int
	// Requests counts non-warm-up records: Completed + Failed.
	Requests int
	// Completed counts successful non-warm-up records.
	Completed int
	// Failed counts failed non-warm-up records.
	Failed int
	// Failures counts failed records by error class (only classes seen).
	Failures map[runlog.ErrorClass]int
	// RetriedAttempts counts the attempts the client sent again (records
	// with Retried set), by their error class in RetriedBy: they loaded the
	// server but are not requests (each request is its last attempt), so
	// Requests + RetriedAttempts is what the server was offered.
	RetriedAttempts int
	RetriedBy       map[runlog.ErrorClass]int
	// OriginalRate is the original load, Requests / DurationS (requests/s,
	// failed ones included); AttemptRate the offered load, (Requests +
	// RetriedAttempts) / DurationS (attempts/s); RetryAmplification their
	// ratio, (Requests + RetriedAttempts) / Requests (1 without retries, 0
	// with no request). A retry storm is AttemptRate rising while
	// goodput falls.
	OriginalRate, AttemptRate float64
	RetryAmplification        float64
	// Warmups counts the warm-up records excluded from everything else.
	Warmups int
	// Empty counts successful records that carried no generated token (they
	// count as completed but have no TTFT/E2E).
	Empty int

	// FirstSendNs is the earliest send among non-warm-up records and
	// LastEndNs the latest stream end (ns from the run start).
	FirstSendNs, LastEndNs int64
	// DurationS is FirstSendNs → LastEndNs in seconds, the denominator of
	// every throughput and of goodput.
	DurationS float64

	// InputTokens sums PromptTokens over completed records (as vLLM does).
	InputTokens int64
	// OutputTokens sums Record.OutputTokens over completed records.
	OutputTokens int64
	// ReasoningTokens sums the hidden part of OutputTokens, where known.
	ReasoningTokens int64
	// CachedTokens sums prompt tokens served from the server's prefix cache.
	CachedTokens int64
	// CachedShare is CachedTokens / InputTokens (0 with no input).
	CachedShare float64

	// Embeddings sums the inputs embedded by completed embeddings requests
	// (0 for a run of generated answers).
	Embeddings int64
	// EmbeddingThroughput is Embeddings / DurationS, inputs/s.
	EmbeddingThroughput float64

	// RequestThroughput is Completed / DurationS, requests/s.
	RequestThroughput float64
	// InputThroughput is InputTokens / DurationS, tokens/s.
	InputThroughput float64
	// OutputThroughput is OutputTokens / DurationS, tokens/s.
	OutputThroughput float64
	// TotalTokenThroughput is (InputTokens + OutputTokens) / DurationS.
	TotalTokenThroughput float64
	// RequestThroughputCI and OutputThroughputCI are the confidence
	// intervals of RequestThroughput and OutputThroughput at
	// Options.Confidence (zero when not asked for): batch means over
	// consecutive time windows of the run, each event counted at its
	// record's end.
	RequestThroughputCI, OutputThroughputCI Interval
	// PeakOutputTokensPerS is vLLM's max_output_tokens_per_s: output tokens
	// of completed records bucketed into 1-second windows from the first
	// successful send by chunk arrival time, the fullest window's count.
	// Chunks count with their token counts (vLLM counts each chunk as one).
	// Window edges are exact to 1 ms (coarser only past ~70 min of run).
	PeakOutputTokensPerS float64
	// PeakConcurrency is the most requests in flight at once, from each
	// non-warm-up record's [Sent, End) interval (an end and a send at the
	// same instant do not overlap). Unlike vLLM, failed requests count,
	// and so do a client's retried attempts: they held a slot too. See
	// PeakConcurrencyBinNs for its precision.
	PeakConcurrency int
	// PeakConcurrencyBinNs is 0 when PeakConcurrency is exact (an
	// Accumulator past ExactRequests requests no longer keeps every
	// interval); otherwise the width of the time bins it was counted in, ns
	// (1 ms, coarser on long spans), and PeakConcurrency is then the most
	// requests in flight at any moment of one bin: never below the exact
	// figure, above it by at most the sends and ends within one bin.
	PeakConcurrencyBinNs int64
	// PeakDroppedChunks counts chunks left out of PeakOutputTokensPerS
	// because they lay weeks apart from the rest (corrupt times); normally 0.
	PeakDroppedChunks int

	// Metrics summarises each selected latency metric over completed
	// records, in AllMetrics order (with MetricITLToken after MetricITL).
	Metrics []MetricSummary
	// MultiTokenRecords counts completed records with a chunk carrying more
	// than one token after the first, where per-token ITL differs from ITL.
	MultiTokenRecords int

	// SLO is goodput and attainment; SLO.Set is false with no SLO.
	SLO SLOSummary
	// Buckets are the per-input-length summaries (nil with no buckets).
	Buckets []BucketSummary

	// SendLag summarises Sent − Intended over all non-warm-up records, ms:
	// large values mean the client could not keep its schedule.
	SendLag MetricSummary
	// InputLen summarises the prompt lengths sent (PromptTokens, else
	// RequestedPromptTokens) over non-warm-up records, tokens.
	InputLen MetricSummary
	// OutputLen summarises Record.OutputTokens over completed records,
	// tokens.
	OutputLen MetricSummary
	// RetryAfter summarises the waits rate-limited answers advertised
	// (Record.RetryAfterNs, over failed records of class http_429 that gave
	// one), ms: the limit's own word on when to come back.
	RetryAfter MetricSummary
	// PromptMismatch summarises |RequestedPromptTokens − PromptTokens| over
	// completed records where both are known, tokens.
	PromptMismatch MetricSummary
	// TokenSources counts completed records by where their token counts came
	// from: usage, counted, or "" when the producer did not say.
	TokenSources map[runlog.TokenSource]int
	// UsageRejected counts completed records whose server usage was not
	// believed (runlog.Record.UsageRejected), so their tokens were counted;
	// UsageRejectedExample is the first one's reason.
	UsageRejected        int
	UsageRejectedExample string

	// Approx reports whether any figure here is approximate: some
	// MetricSummary with Approx set (in Metrics, Buckets, SendLag, InputLen,
	// OutputLen or PromptMismatch) or PeakConcurrencyBinNs > 0. It is false
	// for Summarize and below an Accumulator's bounds.
	Approx bool

	// Warnings are human-readable caveats: percentiles over too few samples
	// (see MinSamples), no successful request, client-counted tokens.
	Warnings []string
}

// approx computes Summary.Approx from the other fields.
func (s *Summary) approx() bool {
	if s.PeakConcurrencyBinNs > 0 || s.SendLag.Approx || s.InputLen.Approx || s.OutputLen.Approx || s.PromptMismatch.Approx || s.RetryAfter.Approx {
		return true
	}
	for _, m := range s.Metrics {
		if m.Approx {
			return true
		}
	}
	for _, b := range s.Buckets {
		for _, m := range b.Metrics {
			if m.Approx {
				return true
			}
		}
	}
	return false
}

// Metric returns the summary of the named metric and whether it was
// selected.
func (s *Summary) Metric(name string) (MetricSummary, bool) {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricSummary{}, false
}

// MetricSummary describes one distribution. Values are in milliseconds for
// latencies, tokens for lengths.
type MetricSummary struct {
	// Name is the metric name (see AllMetrics).
	Name string
	// N is the number of samples.
	N int
	// Mean, Median (the 50th percentile), Std (population standard deviation,
	// numpy's default as vLLM uses it), Min and Max of the samples; 0 when
	// N is 0.
	Mean, Median, Std, Min, Max float64
	// Percentiles holds the requested percentiles in the order asked.
	Percentiles []PercentileValue
	// Approx is true when Median and Percentiles come from a quantile
	// sketch rather than the samples themselves: an Accumulator switches a
	// series to one past ExactRequests samples (ExactGaps for ITL), so that
	// memory stays bounded on long runs. N, Mean, Std, Min and Max stay
	// exact. Exact percentiles come from the records (Summarize).
	Approx bool
	// RelErr bounds the relative error of Median and Percentiles when
	// Approx: |reported − exact| ≤ RelErr·|exact| (SketchRelErr, 0.001);
	// 0 when they are exact.
	RelErr float64
	// MeanCI and MedianCI are confidence intervals for the mean and the
	// median of the distribution the samples came from, at
	// Options.Confidence (the zero Interval when that is 0 or the sample
	// is too small; see docs/metrics.md for the methods). Intervals on a
	// sketch's percentiles carry its RelErr too.
	MeanCI, MedianCI Interval
}

// PercentileValue is one percentile of a distribution.
type PercentileValue struct {
	// P is the percentile, 0–100.
	P float64
	// Value is the percentile's value, in the distribution's unit.
	Value float64
	// CI is Value's confidence interval at Options.Confidence: order
	// statistics chosen for the effective sample size. It is the zero
	// Interval when intervals were not asked for or EffectiveN is below
	// MinSamplesForInterval(P, level) (and for P 0 and 100).
	CI Interval
	// EffectiveN is the number of independent samples the correlated ones
	// are worth for this percentile (N divided by the variance inflation
	// batch means measure; at most N), 0 when intervals were not asked
	// for.
	EffectiveN float64
}

// P returns the p-th percentile if it was computed; the 50th is always
// known, as the median.
func (m MetricSummary) P(p float64) (float64, bool) {
	for _, pv := range m.Percentiles {
		if pv.P == p {
			return pv.Value, true
		}
	}
	if p == 50 && m.N > 0 {
		return m.Median, true
	}
	return 0, false
}

// PCI is the confidence interval of the p-th percentile (the median's
// when p is 50 and not listed); the zero Interval when there is none.
func (m MetricSummary) PCI(p float64) Interval {
	for _, pv := range m.Percentiles {
		if pv.P == p {
			return pv.CI
		}
	}
	if p == 50 {
		return m.MedianCI
	}
	return Interval{}
}

// MetricPCI is PCI of the named metric; the zero Interval when the metric
// was not summarised.
func (s *Summary) MetricPCI(name string, p float64) Interval {
	m, ok := s.Metric(name)
	if !ok {
		return Interval{}
	}
	return m.PCI(p)
}

// MetricP returns the p-th percentile of the named metric, or false when
// the metric was not selected, has no sample, or p was not computed.
func (s *Summary) MetricP(name string, p float64) (float64, bool) {
	m, ok := s.Metric(name)
	if !ok || m.N == 0 {
		return 0, false
	}
	return m.P(p)
}

// SLOSummary is goodput against Options.SLO.
//
// A request meets the SLO when it succeeded and every set constraint holds
// (value ≤ limit). Attainment is over all non-warm-up requests, failed ones
// counting as not met: Good / Requests.
type SLOSummary struct {
	// Set is false when no SLO was given; the other fields are then zero.
	Set bool
	// Good counts requests meeting every constraint.
	Good int
	// Goodput is Good / DurationS, requests/s (vLLM's request_goodput).
	Goodput float64
	// Attainment is Good / Requests, 0–1.
	Attainment float64
	// GoodputCI and AttainmentCI are their confidence intervals at
	// Options.Confidence (zero when not asked for): batch means over time
	// windows for the rate, Wilson's interval with the effective request
	// count for the proportion.
	GoodputCI, AttainmentCI Interval
	// Constraints breaks attainment down per set constraint.
	Constraints []ConstraintSummary
}

// ConstraintSummary is the attainment of one SLO constraint.
type ConstraintSummary struct {
	// Name is ttft, tpot, e2el or ttp.
	Name string
	// LimitMs is the limit in milliseconds.
	LimitMs float64
	// Met counts requests meeting this constraint (failed ones never do).
	Met int
	// Attainment is Met / Requests, 0–1.
	Attainment float64
	// AttainmentCI is Attainment's confidence interval at
	// Options.Confidence (zero when not asked for).
	AttainmentCI Interval
}

// BucketSummary holds the latency summaries of requests whose input length
// falls in [Lo, Hi) tokens.
type BucketSummary struct {
	// Label names the range, e.g. "<1K", "1K-8K", ">=8K".
	Label string
	// Lo is the inclusive lower edge, tokens; Hi the exclusive upper edge
	// (0 for the open-ended last bucket).
	Lo, Hi int
	// Requests, Completed and Failed count the bucket's non-warm-up records.
	Requests, Completed, Failed int
	// Good counts those meeting the SLO; Attainment is Good / Requests
	// (both zero without an SLO), AttainmentCI its interval at
	// Options.Confidence: Wilson, with the bucket's n scaled by the whole
	// run's variance inflation of meeting the SLO.
	Good         int
	Attainment   float64
	AttainmentCI Interval
	// Metrics summarises the selected per-request metrics (all but ITL,
	// whose samples are too many to keep twice) with percentiles Options'
	// plus 50 and 99.
	Metrics []MetricSummary
}

// Metric returns the bucket's summary of the named metric.
func (b *BucketSummary) Metric(name string) (MetricSummary, bool) {
	for _, m := range b.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricSummary{}, false
}
