package stats

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goodput/goodput/internal/runlog"
)

const ms = int64(time.Millisecond)

// chunks builds token-carrying chunks from (t ms, tokens, visible) triples.
func chunks(cs ...[3]int64) []runlog.Chunk {
	out := make([]runlog.Chunk, len(cs))
	for i, c := range cs {
		out[i] = runlog.Chunk{T: c[0] * ms, Tokens: int32(c[1]), Visible: c[2] == 1}
	}
	return out
}

// handRun is a scripted run whose every figure is worked out by hand in
// TestSummarizeHandRun. Times in ms.
//
//	r1: sent 0 (on time); tokens at 100,110,120,130 (1 each, visible); end 135
//	    prompt 100, 4 output tokens, usage.
//	r2: intended 50, sent 60; tokens at 260 (1, hidden reasoning), 280 (2,
//	    visible), 300 (1, visible); end 310; prompt 2000 (asked 2010),
//	    4 output tokens (1 reasoning), 5 cached, usage.
//	r3: sent 100; one token at 1100 (visible); end 1100; prompt 10000,
//	    1 output token, counted.
//	r4: sent 150, failed http_5xx at 400; prompt unknown (asked 500).
//	w:  a warm-up, sent −1000, ends −500: excluded from everything.
func handRun() []runlog.Record {
	return []runlog.Record{
		{ID: "w", Warmup: true, Intended: -1000 * ms, Sent: -1000 * ms, End: -500 * ms,
			Chunks: chunks([3]int64{-900, 1, 1}), PromptTokens: 99999, CompletionTokens: 1, Status: 200},
		{ID: "r1", Intended: 0, Sent: 0, End: 135 * ms,
			Chunks:       chunks([3]int64{100, 1, 1}, [3]int64{110, 1, 1}, [3]int64{120, 1, 1}, [3]int64{130, 1, 1}),
			PromptTokens: 100, CompletionTokens: 4, TokenSource: runlog.TokensUsage, Status: 200},
		{ID: "r2", Intended: 50 * ms, Sent: 60 * ms, End: 310 * ms,
			Chunks:       chunks([3]int64{260, 1, 0}, [3]int64{280, 2, 1}, [3]int64{300, 1, 1}),
			PromptTokens: 2000, RequestedPromptTokens: 2010, CompletionTokens: 4, ReasoningTokens: 1, CachedTokens: 5,
			TokenSource: runlog.TokensUsage, Status: 200},
		{ID: "r3", Intended: 100 * ms, Sent: 100 * ms, End: 1100 * ms,
			Chunks:       chunks([3]int64{1100, 1, 1}),
			PromptTokens: 10000, CompletionTokens: 1, TokenSource: runlog.TokensCounted, Status: 200},
		{ID: "r4", Intended: 150 * ms, Sent: 150 * ms, End: 400 * ms,
			RequestedPromptTokens: 500, Status: 500, ErrorClass: runlog.ErrHTTP5xx, Error: "boom"},
	}
}

// tpot2 is r2's TPOT: (300 − 260) ms / (4 − 1) tokens, in whole ns as runlog
// computes it: 40,000,000/3 = 13,333,333 ns = 13.333333 ms.
const tpot2 = 13.333333

func pv(ps []float64, vs ...float64) []PercentileValue {
	out := make([]PercentileValue, len(ps))
	for i := range ps {
		out[i] = PercentileValue{P: ps[i], Value: vs[i]}
	}
	return out
}

func TestSummarizeHandRun(t *testing.T) {
	slo, err := ParseSLO("ttft:500 tpot:12 ttp:250")
	if err != nil {
		t.Fatal(err)
	}
	ps := []float64{50, 90, 99}
	got := Summarize(handRun(), Options{Percentiles: ps, SLO: slo})

	// Percentiles over 3 samples x0 ≤ x1 ≤ x2: p50 → x1; p90: v = 1.8 →
	// x2 − (x2−x1)·0.2; p99: v = 1.98 → x2 − (x2−x1)·0.02.
	p3 := func(x0, x1, x2 float64) []PercentileValue {
		return pv(ps, x1, x2-(x2-x1)*0.2, x2-(x2-x1)*0.02)
	}
	std3 := func(x0, x1, x2 float64) float64 {
		m := (x0 + x1 + x2) / 3
		return math.Sqrt(((x0-m)*(x0-m) + (x1-m)*(x1-m) + (x2-m)*(x2-m)) / 3)
	}
	want := Summary{
		Options:  Options{Percentiles: ps, Metrics: AllMetrics, SLO: slo, Buckets: DefaultBuckets},
		Level:    0,
		Requests: 4, Completed: 3, Failed: 1, Warmups: 1,
		Failures: map[runlog.ErrorClass]int{runlog.ErrHTTP5xx: 1},
		// First send 0 (r1), last end 1100 (r3): 1.1 s.
		FirstSendNs: 0, LastEndNs: 1100 * ms, DurationS: 1.1,
		// Completed only, as vLLM: 100+2000+10000 in, 4+4+1 out.
		InputTokens: 12100, OutputTokens: 9, ReasoningTokens: 1, CachedTokens: 5,
		CachedShare:       5.0 / 12100,
		RequestThroughput: 3 / 1.1,
		// No retries: offered and original load are both 4 / 1.1.
		OriginalRate: 4 / 1.1, AttemptRate: 4 / 1.1, RetryAmplification: 1,
		InputThroughput:      12100 / 1.1,
		OutputThroughput:     9 / 1.1,
		TotalTokenThroughput: 12109 / 1.1,
		// Windows from the first successful send (0): [0,1 s) holds r1's 4
		// tokens and r2's 1+2+1; [1 s,2 s) holds r3's 1. Peak 8.
		PeakOutputTokensPerS: 8,
		// In flight at 150 ms: r2 [60,310), r3 [100,1100), r4 [150,400); r1
		// ended at 135. Nothing overlaps more.
		PeakConcurrency: 3,
		Metrics: []MetricSummary{
			// TTFT: r1 100, r2 260−60 = 200, r3 1100−100 = 1000.
			{Name: "ttft", N: 3, Mean: 1300.0 / 3, Median: 200, Std: std3(100, 200, 1000), Min: 100, Max: 1000,
				Percentiles: p3(100, 200, 1000)},
			// TPOT: r1 (130−100)/3 = 10, r2 13.333333; r3 has one token.
			// Two samples: p50 = mean; p90: v = 0.9 → x1 − (x1−x0)·0.1.
			{Name: "tpot", N: 2, Mean: (10 + tpot2) / 2, Median: (10 + tpot2) / 2, Std: (tpot2 - 10) / 2, Min: 10, Max: tpot2,
				Percentiles: pv(ps, (10+tpot2)/2, tpot2-(tpot2-10)*0.1, tpot2-(tpot2-10)*0.01)},
			// ITL (chunk gaps): r1 10,10,10; r2 280−260 = 20, 300−280 = 20.
			// Sorted [10,10,10,20,20]: mean 14, deviations −4,−4,−4,6,6 →
			// std √(120/5) = √24; p50 v=2 → 10; p90 v=3.6 → 20; p99 → 20.
			{Name: "itl", N: 5, Mean: 14, Median: 10, Std: math.Sqrt(24), Min: 10, Max: 20,
				Percentiles: pv(ps, 10, 20, 20)},
			// Per-token ITL: r1 10,10,10; r2: the 280 chunk's 20 ms over 2
			// tokens → 10,10, then 20. Sorted [10,10,10,10,10,20]: mean 70/6,
			// deviations −5/3 ×5 and 25/3 → var (5·25/9 + 625/9)/6 = 750/54;
			// p90 v = 4.5 → halfway 10..20 = 15; p99 v = 4.95 → 20 − 10·0.05.
			{Name: "itl_token", N: 6, Mean: 70.0 / 6, Median: 10, Std: math.Sqrt(750.0 / 54), Min: 10, Max: 20,
				Percentiles: pv(ps, 10, 15, 19.5)},
			// E2E: r1 130, r2 300−60 = 240, r3 1000.
			{Name: "e2el", N: 3, Mean: 1370.0 / 3, Median: 240, Std: std3(130, 240, 1000), Min: 130, Max: 1000,
				Percentiles: p3(130, 240, 1000)},
			// TTP: r1 100, r2 280−60 = 220 (its first chunk is hidden), r3 1000.
			{Name: "ttp", N: 3, Mean: 1320.0 / 3, Median: 220, Std: std3(100, 220, 1000), Min: 100, Max: 1000,
				Percentiles: p3(100, 220, 1000)},
			// Response time, from the intended send: r1 130, r2 300−50 = 250,
			// r3 1100−100 = 1000.
			{Name: "response", N: 3, Mean: 1380.0 / 3, Median: 250, Std: std3(130, 250, 1000), Min: 130, Max: 1000,
				Percentiles: p3(130, 250, 1000)},
		},
		MultiTokenRecords: 1,
		// SLO ttft ≤ 500, tpot ≤ 12, ttp ≤ 250:
		//   r1: 100, 10, 100 → good.
		//   r2: 200 ok, 13.33 > 12 fails, 220 ok.
		//   r3: 1000 fails ttft; one token → tpot met; ttp 1000 fails.
		//   r4: failed, meets nothing.
		// Good 1 of 4 → attainment 0.25, goodput 1/1.1 req/s.
		// Per constraint: ttft r1,r2 = 2; tpot r1,r3 = 2; ttp r1,r2 = 2.
		SLO: SLOSummary{Set: true, Good: 1, Goodput: 1 / 1.1, Attainment: 0.25, Constraints: []ConstraintSummary{
			{Name: "ttft", LimitMs: 500, Met: 2, Attainment: 0.5},
			{Name: "tpot", LimitMs: 12, Met: 2, Attainment: 0.5},
			{Name: "ttp", LimitMs: 250, Met: 2, Attainment: 0.5},
		}},
		// Sent − Intended: r1 0, r2 10, r3 0, r4 0 → [0,0,0,10]: p50 0;
		// p99 v = 2.97 → 10 − 10·0.03 = 9.7; mean 2.5; std √(3·6.25+56.25)/2 = √75/2.
		SendLag: MetricSummary{Name: "send_lag", N: 4, Mean: 2.5, Median: 0, Std: math.Sqrt(75.0 / 4), Min: 0, Max: 10,
			Percentiles: pv([]float64{50, 99}, 0, 9.7)},
		// Prompt lengths sent: 100, 2000, 10000 and r4's asked-for 500.
		// Sorted [100,500,2000,10000]: p50 v=1.5 → 1250; p90 v=2.7 →
		// 10000 − 8000·0.3 = 7600; p99 v=2.97 → 10000 − 8000·0.03 = 9760.
		InputLen: MetricSummary{Name: "input_len", N: 4, Mean: 12600.0 / 4, Median: 1250,
			Std: std4(100, 500, 2000, 10000), Min: 100, Max: 10000,
			// p95: rank 0.95×3 = 2.85 → 2000 + 0.85×8000 = 8800.
			Percentiles: pv([]float64{50, 90, 95, 99}, 1250, 7600, 8800, 9760)},
		// Output tokens of completed: [1,4,4]: p50 4, p90 4, p99 4.
		OutputLen: MetricSummary{Name: "output_len", N: 3, Mean: 3, Median: 4, Std: math.Sqrt(2), Min: 1, Max: 4,
			Percentiles: pv([]float64{50, 90, 99}, 4, 4, 4)},
		// Only r2 has both: |2010 − 2000| = 10.
		PromptMismatch: MetricSummary{Name: "prompt_mismatch", N: 1, Mean: 10, Median: 10, Min: 10, Max: 10,
			Percentiles: pv([]float64{50, 99}, 10, 10)},
		TokenSources: map[runlog.TokenSource]int{runlog.TokensUsage: 2, runlog.TokensCounted: 1},
		Warnings: []string{
			"1 of 3 requests had no usage report: their output tokens were counted by the client and may be undercounted",
			"p90 needs at least 10 samples to say more than the sample max: too few for ttft (3), tpot (2), itl (5), itl_token (6), e2el (3), ttp (3), response (3)",
			"p99 needs at least 100 samples to say more than the sample max: too few for ttft (3), tpot (2), itl (5), itl_token (6), e2el (3), ttp (3), response (3)",
			"per-bucket p99 needs at least 100 requests per bucket: too few in <1K (1), 1K-8K (1), >=8K (1)",
		},
	}
	// Buckets by prompt length: <1K holds r1 (100) and the failed r4 (asked
	// 500); 1K-8K holds r2 (2000); >=8K holds r3 (10000). One completed
	// sample each, so every statistic is that sample.
	one := func(name string, v float64) MetricSummary {
		return MetricSummary{Name: name, N: 1, Mean: v, Median: v, Min: v, Max: v,
			Percentiles: pv([]float64{50, 90, 99}, v, v, v)}
	}
	want.Buckets = []BucketSummary{
		{Label: "<1K", Lo: 0, Hi: 1024, Requests: 2, Completed: 1, Failed: 1, Good: 1, Attainment: 0.5,
			Metrics: []MetricSummary{one("ttft", 100), one("tpot", 10), one("e2el", 130), one("ttp", 100), one("response", 130)}},
		{Label: "1K-8K", Lo: 1024, Hi: 8192, Requests: 1, Completed: 1,
			Metrics: []MetricSummary{one("ttft", 200), one("tpot", tpot2), one("e2el", 240), one("ttp", 220), one("response", 250)}},
		{Label: ">=8K", Lo: 8192, Hi: 0, Requests: 1, Completed: 1,
			Metrics: []MetricSummary{one("ttft", 1000), {Name: "tpot", Percentiles: pv([]float64{50, 90, 99}, 0, 0, 0)},
				one("e2el", 1000), one("ttp", 1000), one("response", 1000)}},
	}
	approx := cmpopts.EquateApprox(1e-9, 1e-9)
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Summarize(handRun) mismatch (-want +got):\n%s", diff)
	}
}

func std4(xs ...float64) float64 {
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)))
}

// TestSummaryRepeatable checks Summary can be called again, after more Adds.
func TestSummaryRepeatable(t *testing.T) {
	recs := handRun()
	a := NewAccumulator(Options{})
	for i := range recs[:3] {
		a.Add(&recs[i])
	}
	first := a.Summary()
	if first.Completed != 2 {
		t.Fatalf("Summary().Completed after r1, r2 = %d; want 2", first.Completed)
	}
	for i := range recs[3:] {
		a.Add(&recs[3+i])
	}
	if diff := cmp.Diff(Summarize(recs, Options{}), a.Summary(), cmpopts.EquateApprox(1e-9, 1e-9)); diff != "" {
		t.Errorf("incremental Summary differs from Summarize (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(a.Summary(), a.Summary()); diff != "" {
		t.Errorf("Summary() twice differs:\n%s", diff)
	}
}

func TestSummarizeEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		recs  []runlog.Record
		opt   Options
		check func(t *testing.T, s Summary)
	}{
		{"no records", nil, Options{}, func(t *testing.T, s Summary) {
			if s.Requests != 0 || s.DurationS != 0 || s.Level != -1 || len(s.Warnings) != 0 || s.PeakConcurrency != 0 {
				t.Errorf("Summarize(nil) = %+v; want zeros, level -1, no warnings", s)
			}
			if m, _ := s.Metric("ttft"); m.N != 0 || m.Mean != 0 {
				t.Errorf("empty ttft = %+v; want zero", m)
			}
		}},
		{"only warm-ups", []runlog.Record{{Warmup: true, Sent: 5}}, Options{}, func(t *testing.T, s Summary) {
			if s.Requests != 0 || s.Warmups != 1 {
				t.Errorf("Requests, Warmups = %d, %d; want 0, 1", s.Requests, s.Warmups)
			}
		}},
		{"all failed", []runlog.Record{
			{Sent: 0, End: 10 * ms, ErrorClass: runlog.ErrConnect},
			{Sent: 0, End: 20 * ms, ErrorClass: runlog.ErrConnect},
			{Sent: 5 * ms, End: 20 * ms, ErrorClass: runlog.ErrTimeout},
		}, Options{SLO: SLO{TTFT: time.Second}}, func(t *testing.T, s Summary) {
			want := map[runlog.ErrorClass]int{runlog.ErrConnect: 2, runlog.ErrTimeout: 1}
			if diff := cmp.Diff(want, s.Failures); diff != "" {
				t.Errorf("Failures mismatch (-want +got):\n%s", diff)
			}
			// 0 → 20 ms.
			if s.DurationS != 0.02 || s.RequestThroughput != 0 || s.SLO.Attainment != 0 || !s.SLO.Set {
				t.Errorf("DurationS, RequestThroughput, SLO = %v, %v, %+v; want 0.02, 0, set with 0", s.DurationS, s.RequestThroughput, s.SLO)
			}
			if len(s.Warnings) == 0 || s.Warnings[0] != "all 3 requests failed: no latency figures" {
				t.Errorf("Warnings = %q; want the all-failed one first", s.Warnings)
			}
			if s.PeakOutputTokensPerS != 0 {
				t.Errorf("PeakOutputTokensPerS = %v; want 0", s.PeakOutputTokensPerS)
			}
		}},
		{"empty success", []runlog.Record{{Sent: 0, End: 5 * ms, Status: 200}}, Options{SLO: SLO{TPOT: time.Millisecond}},
			func(t *testing.T, s Summary) {
				// No token: no TTFT sample; a TPOT-only SLO is met (vLLM
				// counts TPOT as 0 for a request with < 2 tokens).
				if m, _ := s.Metric("ttft"); s.Empty != 1 || m.N != 0 || s.SLO.Good != 1 {
					t.Errorf("Empty, ttft N, Good = %d, %d, %d; want 1, 0, 1", s.Empty, m.N, s.SLO.Good)
				}
			}},
		// Times before the run start (a clock origin after the first send):
		// −500 ms → −100 ms is 0.4 s, not −500 ms → 0.
		{"negative times", []runlog.Record{{Sent: -500 * ms, End: -300 * ms}, {Sent: -400 * ms, End: -100 * ms}}, Options{},
			func(t *testing.T, s Summary) {
				if s.DurationS != 0.4 || s.LastEndNs != -100*ms {
					t.Errorf("DurationS, LastEndNs = %v, %d; want 0.4, %d", s.DurationS, s.LastEndNs, -100*ms)
				}
			}},
		{"mixed levels", []runlog.Record{{Level: 0, Sent: 0, End: 1}, {Level: 1, Sent: 0, End: 1}}, Options{}, func(t *testing.T, s Summary) {
			if s.Level != -1 {
				t.Errorf("Level = %d; want -1 for mixed levels", s.Level)
			}
		}},
		{"one level", []runlog.Record{{Level: 2, Sent: 0, End: 1}, {Level: 2, Sent: 0, End: 1}}, Options{}, func(t *testing.T, s Summary) {
			if s.Level != 2 {
				t.Errorf("Level = %d; want 2", s.Level)
			}
		}},
		{"no buckets, only ttft", handRun(), Options{Buckets: []int{}, Metrics: []string{"ttft"}}, func(t *testing.T, s Summary) {
			if s.Buckets != nil || len(s.Metrics) != 1 || s.Metrics[0].Name != "ttft" {
				t.Errorf("Buckets, Metrics = %v, %v; want nil, [ttft]", s.Buckets, s.Metrics)
			}
		}},
		{"itl without tpot goes after ttft", handRun(), Options{Metrics: []string{"e2el", "itl", "ttft"}}, func(t *testing.T, s Summary) {
			var names []string
			for _, m := range s.Metrics {
				names = append(names, m.Name)
			}
			if diff := cmp.Diff([]string{"ttft", "itl", "itl_token", "e2el"}, names); diff != "" {
				t.Errorf("metric order mismatch (-want +got):\n%s", diff)
			}
		}},
		{"edge value goes up", []runlog.Record{
			{PromptTokens: 1023, Chunks: chunks([3]int64{1, 1, 1})},
			{PromptTokens: 1024, Chunks: chunks([3]int64{1, 1, 1})},
			{PromptTokens: 8192, Chunks: chunks([3]int64{1, 1, 1})},
		}, Options{}, func(t *testing.T, s Summary) {
			for i, b := range s.Buckets {
				if b.Requests != 1 {
					t.Errorf("bucket %d (%s) Requests = %d; want 1 each", i, b.Label, b.Requests)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Summarize(tt.recs, tt.opt))
		})
	}
}

func TestPeakConcurrency(t *testing.T) {
	tests := []struct {
		name  string
		spans []int64
		want  int
	}{
		{"none", nil, 0},
		{"one", []int64{0, 10}, 1},
		// [0,10) and [10,20) touch but do not overlap (half-open).
		{"back to back", []int64{0, 10, 10, 20}, 1},
		// [0,10), [5,15), [6,7), [12,20): at 6 three are in flight.
		{"nested", []int64{0, 10, 5, 15, 6, 7, 12, 20}, 3},
		{"same start", []int64{0, 10, 0, 10, 0, 10}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := peakConcurrency(tt.spans); got != tt.want {
				t.Errorf("peakConcurrency(%v) = %d; want %d", tt.spans, got, tt.want)
			}
		})
	}
}

func TestTimelinePeak(t *testing.T) {
	type tok struct {
		t int64
		n int32
	}
	sec := int64(time.Second)
	tests := []struct {
		name   string
		toks   []tok
		origin int64
		want   int64
	}{
		{"empty", nil, 0, 0},
		// Origin 0.5 s: windows [0.5,1.5), [1.5,2.5). Tokens at 0.6 (3),
		// 1.4 (4) fall in the first; 1.6 (5) in the second. Peak 7.
		{"origin shifts windows", []tok{{sec * 6 / 10, 3}, {sec * 14 / 10, 4}, {sec * 16 / 10, 5}}, sec / 2, 7},
		// Same tokens from origin 0: [0,1) holds 3, [1,2) holds 4+5 = 9.
		{"origin zero", []tok{{sec * 6 / 10, 3}, {sec * 14 / 10, 4}, {sec * 16 / 10, 5}}, 0, 9},
		// Added out of order: the later token first, then one 3 s earlier
		// (the bucket slice grows to the left).
		{"grow left", []tok{{5 * sec, 2}, {2 * sec, 6}, {2*sec + 1, 1}}, 2 * sec, 7},
		{"negative times", []tok{{-sec / 2, 2}, {-sec / 4, 2}}, -sec, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl timeline
			for _, k := range tt.toks {
				tl.add(k.t, k.n)
			}
			if got := tl.peak(tt.origin); got != tt.want {
				t.Errorf("peak(%d) = %d; want %d", tt.origin, got, tt.want)
			}
		})
	}
}

// TestTimelineFarApart checks chunks weeks apart neither exhaust memory nor
// vanish silently: the buckets widen to 1 s and the outlier is dropped.
func TestTimelineFarApart(t *testing.T) {
	var tl timeline
	day := int64(24 * time.Hour)
	tl.add(0, 3)
	tl.add(100*day, 1)
	tl.add(-100*day, 1)
	if tl.width != 1e9 || tl.dropped != 2 || len(tl.counts) > maxBuckets {
		t.Errorf("width, dropped, len = %d, %d, %d; want 1e9, 2, ≤ %d", tl.width, tl.dropped, len(tl.counts), maxBuckets)
	}
	if got := tl.peak(0); got != 3 {
		t.Errorf("peak(0) = %d; want 3", got)
	}
	recs := []runlog.Record{
		{Sent: 0, Chunks: []runlog.Chunk{{T: ms, Tokens: 1}}},
		{Sent: 0, Chunks: []runlog.Chunk{{T: 100 * day, Tokens: 1}}},
	}
	s := Summarize(recs, Options{})
	want := "peak output throughput leaves out 1 chunks timed weeks apart from the rest (corrupt times?)"
	found := false
	for _, w := range s.Warnings {
		found = found || w == want
	}
	if !found {
		t.Errorf("Warnings = %q; want one saying %q", s.Warnings, want)
	}
}

// TestTimelineCoarsen runs past maxBuckets of 1 ms so the buckets widen to
// 10 ms, and checks counts survive: 1 token every 2 s for ~2.4 h, plus a
// burst of 50 in one second; the peak window holds the burst and its second's
// regular token only if they share a window.
func TestTimelineCoarsen(t *testing.T) {
	var tl timeline
	sec := int64(time.Second)
	span := int64(maxBuckets/1000+10) * 2 * sec // past the cap at 1 ms
	for ts := int64(0); ts < span; ts += 2 * sec {
		tl.add(ts, 1)
	}
	for i := range int64(50) {
		tl.add(101*sec+i*10*ms, 1) // 101.00 s … 101.49 s: window [101,102)
	}
	if tl.width != 1e7 {
		t.Fatalf("width = %d; want 1e7 after coarsening", tl.width)
	}
	// Window [101,102) holds the 50-token burst; the regular token sits at
	// even seconds (100, 102), outside it.
	if got := tl.peak(0); got != 50 {
		t.Errorf("peak(0) = %d; want 50", got)
	}
	var total int64
	for _, c := range tl.counts {
		total += int64(c)
	}
	if want := span/(2*sec) + 50; total != want {
		t.Errorf("total tokens after coarsening = %d; want %d", total, want)
	}
}

// TestSummarizeRetries: request a completes at 1 s; request b, refused
// (429) and timed out, is tried three times and its last attempt times
// out at 2 s. The duration is 0 → 2 s, so the original load is 2 / 2 = 1
// request/s, the offered load (2 + 2 retried) / 2 = 2 attempts/s, and
// each request took 4 / 2 = 2 attempts. The retried attempts are load,
// not outcomes: 1 completed, 1 failed.
func TestSummarizeRetries(t *testing.T) {
	recs := []runlog.Record{
		{ID: "a", Sent: 0, End: 1000 * ms, Status: 200, PromptTokens: 10,
			Chunks: []runlog.Chunk{{T: 500 * ms, Tokens: 1, Visible: true}, {T: 1000 * ms, Tokens: 1, Visible: true}}},
		{ID: "b", Sent: 0, End: 300 * ms, ErrorClass: runlog.ErrHTTP429, Status: 429, Retried: true},
		{ID: "b-a2", Attempt: 2, RetryOf: "b", Sent: 400 * ms, End: 900 * ms, ErrorClass: runlog.ErrTimeout, Retried: true},
		{ID: "b-a3", Attempt: 3, RetryOf: "b", Sent: 900 * ms, End: 2000 * ms, ErrorClass: runlog.ErrTimeout},
	}
	s := Summarize(recs, Options{})
	if s.Requests != 2 || s.Completed != 1 || s.Failed != 1 || s.RetriedAttempts != 2 || s.DurationS != 2 {
		t.Fatalf("requests %d completed %d failed %d retried %d duration %v; want 2, 1, 1, 2, 2 s", s.Requests, s.Completed, s.Failed, s.RetriedAttempts, s.DurationS)
	}
	if s.OriginalRate != 1 || s.AttemptRate != 2 || s.RetryAmplification != 2 {
		t.Errorf("original %v/s, offered %v/s, amplification %v; want 1, 2 and 2", s.OriginalRate, s.AttemptRate, s.RetryAmplification)
	}
	if s.RetriedBy[runlog.ErrTimeout] != 1 || s.RetriedBy[runlog.ErrHTTP429] != 1 {
		t.Errorf("retried by %v; want a timeout and a 429", s.RetriedBy)
	}
}

// TestWindowFromFirstAttempt: the run's window opens at the first attempt
// sent, even when that attempt was retried and its request's outcome is a
// later one: 0 → 3 s here, not the final attempts' 1 → 3 s.
func TestWindowFromFirstAttempt(t *testing.T) {
	recs := []runlog.Record{
		{ID: "a", Sent: 0, End: 200 * ms, ErrorClass: runlog.ErrHTTP429, Status: 429, Retried: true},
		{ID: "a-a2", Attempt: 2, RetryOf: "a", Sent: 1000 * ms, End: 3000 * ms, Status: 200, PromptTokens: 10,
			Chunks: []runlog.Chunk{{T: 1500 * ms, Tokens: 1, Visible: true}}},
	}
	s := Summarize(recs, Options{})
	if s.DurationS != 3 || s.FirstSendNs != 0 {
		t.Errorf("duration %v s, first send %d; want 3 s from 0", s.DurationS, s.FirstSendNs)
	}
	// 1 request over 3 s, 2 attempts over 3 s.
	if s.OriginalRate != 1.0/3 || s.AttemptRate != 2.0/3 {
		t.Errorf("original %v/s, offered %v/s; want 1/3 and 2/3", s.OriginalRate, s.AttemptRate)
	}
}

// TestPeakConcurrencyCountsRetries: a retried attempt held a slot on the
// server beside the rest, so peak concurrency counts it: three attempts
// overlap at 100–500 ms here, where the requests' last attempts never
// overlap more than two.
func TestPeakConcurrencyCountsRetries(t *testing.T) {
	ok := func(id string, sent, end int64) runlog.Record {
		return runlog.Record{ID: id, Sent: sent, End: end, Status: 200, PromptTokens: 10,
			Chunks: []runlog.Chunk{{T: end, Tokens: 1, Visible: true}}}
	}
	recs := []runlog.Record{
		ok("a", 0, 1000*ms),
		{ID: "b", Sent: 0, End: 500 * ms, ErrorClass: runlog.ErrTimeout, Retried: true},
		{ID: "c", Sent: 100 * ms, End: 600 * ms, ErrorClass: runlog.ErrTimeout, Retried: true},
		ok("b-a2", 700*ms, 800*ms),
		ok("c-a2", 1100*ms, 1200*ms),
	}
	for _, exact := range []bool{true, false} {
		acc := NewAccumulator(Options{})
		if exact {
			acc = NewExactAccumulator(Options{})
		}
		for i := range recs {
			acc.Add(&recs[i])
		}
		if s := acc.Summary(); s.PeakConcurrency != 3 {
			t.Errorf("exact=%v: PeakConcurrency = %d; want 3 (retried attempts in flight count)", exact, s.PeakConcurrency)
		}
	}
}
