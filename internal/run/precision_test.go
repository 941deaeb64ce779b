package run

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/llamafake"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// firstMet is the hand calculation a level's --target-precision must
// agree with: the smallest number of measured records n, at least
// minPrecisionRequests, whose first n (in the order they finished) meet
// every target — found by judging every prefix, none skipped.
func firstMet(t *testing.T, recs []runlog.Record, ts []stats.PrecisionTarget, so stats.Options) int {
	t.Helper()
	po := stats.PrecisionOptions(ts, so.Confidence, so.SLO)
	var measured []runlog.Record
	for _, r := range recs {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	for n := minPrecisionRequests; n <= len(measured); n++ {
		s := stats.Summarize(measured[:n], po)
		met := true
		for _, st := range stats.Precision(&s, ts) {
			met = met && st.Met()
		}
		if met {
			return n
		}
	}
	return -1
}

// In virtual time, one request at a time, the level stops sending at the
// very request whose record meets the targets (checked at every record
// below 200), so it holds exactly that many records, far fewer than it
// was allowed; the level says so.
func TestTargetPrecisionStopsWhereTheRecordsMeetIt(t *testing.T) {
	cfg := simConfig(t, 2000)
	cfg.Command = "sim"
	cfg.Load.MaxConcurrency = 1
	cfg.Stats.Confidence = 0.95
	cfg.Output.KeepRecords = true
	ts, err := stats.ParsePrecision("mean_e2el:5%,median_ttft:8%")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Precision = ts
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := firstMet(t, res.Records, ts, cfg.Stats)
	if want < 0 || want >= 200 {
		t.Fatalf("the records meet the targets at %d; the test wants a stop below 200 (every record checked)", want)
	}
	if len(res.Records) != want {
		t.Errorf("the level holds %d records; its first %d meet the targets, so sending should have stopped there", len(res.Records), want)
	}
	lv := res.Levels[0].Level
	if p := "reached after " + strconv.Itoa(want) + " requests"; !strings.HasPrefix(lv.Precision, p) {
		t.Errorf("level precision %q, want it to begin %q", lv.Precision, p)
	}
	if lv.Stopped != "" {
		t.Errorf("a precise level is not a saturated one: Stopped %q", lv.Stopped)
	}
}

// A target the level cannot reach lets it run to --num-prompts, and the
// level says how far it got and about how many requests would do.
func TestTargetPrecisionNotReached(t *testing.T) {
	cfg := simConfig(t, 60)
	cfg.Command, cfg.Load.RequestRate = "sim", 10
	cfg.Stats.Confidence = 0.95
	cfg.Precision, _ = stats.ParsePrecision("mean_ttft:0.1%")
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lv := res.Levels[0].Level
	if res.Levels[0].Summary.Requests != 60 || !strings.HasPrefix(lv.Precision, "not reached in 60 requests: mean_ttft ±") ||
		!strings.Contains(lv.Precision, "requests would reach it") {
		t.Errorf("%d requests, precision %q; want all 60 sent and the shortfall said", res.Levels[0].Summary.Requests, lv.Precision)
	}
}

// Over HTTP, against a scripted llama-server (fixed prompt and token
// times), one request at a time: sending stops at the record that meets
// the target, give or take the one request already on its way when the
// record arrived; the requests in flight finish, none is cancelled.
func TestTargetPrecisionOverHTTP(t *testing.T) {
	s, err := llamafake.Start(llamafake.Config{Slots: 1, TokenTime: time.Millisecond, PromptTime: 10 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := llamaConfig(t, s.URL, 3000, 1)
	cfg.Stats.Confidence = 0.95
	cfg.Precision, _ = stats.ParsePrecision("median_e2el:10%")
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := firstMet(t, res.Records, cfg.Precision, cfg.Stats)
	if want < 0 {
		t.Fatalf("the records never meet the target")
	}
	if n := len(res.Records); n < want || n > want+1 {
		t.Errorf("%d records; the first %d meet the target, so sending should stop there (one more at most)", n, want)
	}
	if sum := res.Levels[0].Summary; sum.Failed != 0 {
		t.Errorf("%d requests failed (%v): halting must let those in flight finish", sum.Failed, sum.Failures)
	}
}

// BenchmarkPrecisionWatch is what --target-precision costs a record: its
// targets' own accumulator and, every 1 % of the count, a summary of those
// figures alone (never the ITL series unless ITL is targeted).
func BenchmarkPrecisionWatch(b *testing.B) {
	const n, tokens = 20_000, 64
	recs := make([]runlog.Record, n)
	for i := range recs {
		sent := int64(i) * int64(time.Millisecond)
		r := runlog.Record{Intended: sent, Sent: sent, PromptTokens: 512, CompletionTokens: tokens, TokenSource: runlog.TokensUsage,
			Status: 200, Chunks: make([]runlog.Chunk, tokens)}
		first := sent + int64(50+i%200)*int64(time.Millisecond)
		for j := range r.Chunks {
			r.Chunks[j] = runlog.Chunk{T: first + int64(j)*int64(10*time.Millisecond) + int64((i*j)%3)*int64(time.Millisecond), Tokens: 1, Visible: true}
		}
		r.End = r.Chunks[tokens-1].T
		recs[i] = r
	}
	ts, _ := stats.ParsePrecision("p99_ttft:0.1%,mean_tpot:0.01%") // never met: every checkpoint runs
	so := stats.Options{Confidence: 0.95}
	b.ReportAllocs()
	for b.Loop() {
		w := newPrecisionWatch(ts, so, newHalt())
		for i := range recs {
			w.Record(&recs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
