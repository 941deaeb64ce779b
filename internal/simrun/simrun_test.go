package simrun

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// shapes is a dataset of fixed request shapes, for hand-checkable runs.
type shapes []workload.Request

func (s shapes) Name() string { return "test" }
func (s shapes) Len() int     { return len(s) }
func (s shapes) Shape(i int) workload.Request {
	r := s[i]
	r.Index = i
	return r
}
func (s shapes) Request(i int) workload.Request { return s.Shape(i) }

func newEngine(t testing.TB, mod func(*sim.Config)) *sim.Engine {
	t.Helper()
	cfg := sim.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	return eng
}

// collect runs and returns every emitted record.
func collect(t *testing.T, eng *sim.Engine, ds workload.Dataset, load Load) ([]*runlog.Record, Result) {
	t.Helper()
	var recs []*runlog.Record
	res, err := Run(context.Background(), eng, ds, load, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return recs, res
}

func byID(recs []*runlog.Record) map[string]*runlog.Record {
	m := map[string]*runlog.Record{}
	for _, r := range recs {
		m[r.ID] = r
	}
	return m
}

func randomDataset(t testing.TB, n int) workload.Dataset {
	t.Helper()
	ds, err := workload.NewRandom(workload.RandomConfig{InputLen: 512, OutputLen: 64, RangeRatio: 0.5, NumPrompts: n, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestRecordsFollowEngine checks the records against the engine's own
// events, replayed by hand: one chunk per iteration that gave a request
// tokens, at that iteration's end.
func TestRecordsFollowEngine(t *testing.T) {
	ds := shapes{
		{PromptTokens: 100, OutputTokens: 3},
		{PromptTokens: 3000, OutputTokens: 2}, // chunked over two iterations (2048 budget)
		{PromptTokens: 20, OutputTokens: 4},
	}
	recs, res := collect(t, newEngine(t, func(c *sim.Config) { c.MaxNumBatchedTokens = 2048 }), ds, Load{})

	// The same requests, all at time 0, straight through a fresh engine.
	eng := newEngine(t, func(c *sim.Config) { c.MaxNumBatchedTokens = 2048 })
	for i, r := range ds {
		if err := eng.Add(0, sim.Request{ID: strconv.Itoa(i), PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]runlog.Chunk{}
	ends := map[string]int64{}
	for now := int64(0); eng.Busy(); {
		end, evs := eng.Step(now)
		for _, ev := range evs {
			switch ev.Kind {
			case sim.EventTokens:
				want[ev.ID] = append(want[ev.ID], runlog.Chunk{T: end, Tokens: int32(ev.Tokens), Visible: true})
			case sim.EventFinished:
				ends[ev.ID] = end
			}
		}
		now = end
	}
	got := byID(recs)
	for i, r := range ds {
		id := strconv.Itoa(i)
		rec := got[id]
		if rec == nil {
			t.Fatalf("no record for %s", id)
		}
		if diff := cmp.Diff(want[id], rec.Chunks); diff != "" {
			t.Errorf("request %s chunks (-engine +record):\n%s", id, diff)
		}
		if rec.End != ends[id] || rec.Sent != 0 || rec.Intended != 0 {
			t.Errorf("request %s: sent %d intended %d end %d; want 0, 0, %d", id, rec.Sent, rec.Intended, rec.End, ends[id])
		}
		if rec.Status != 200 || !rec.OK() || rec.TokenSource != runlog.TokensUsage || rec.FinishReason != "length" {
			t.Errorf("request %s: status %d class %q source %q finish %q", id, rec.Status, rec.ErrorClass, rec.TokenSource, rec.FinishReason)
		}
		if rec.PromptTokens != r.PromptTokens || rec.CompletionTokens != r.OutputTokens || rec.MaxTokens != r.OutputTokens {
			t.Errorf("request %s: tokens %d/%d max %d; want %d/%d", id, rec.PromptTokens, rec.CompletionTokens, rec.MaxTokens, r.PromptTokens, r.OutputTokens)
		}
		if rec.Server == nil {
			t.Fatalf("request %s: no server timing", id)
		}
		// TTFT = queue + prefill, as the engine reports it.
		if ttft, _ := rec.TTFT(); int64(ttft) != rec.Server.QueueNs+rec.Server.PrefillNs {
			t.Errorf("request %s: TTFT %d ≠ queue %d + prefill %d", id, ttft, rec.Server.QueueNs, rec.Server.PrefillNs)
		}
	}
	if res.Sent != 3 || res.Completed != 3 || res.Failed != 0 || res.Start != 0 || res.End != slices.Max([]int64{ends["0"], ends["1"], ends["2"]}) {
		t.Errorf("result = %+v", res)
	}
}

func TestDeterministic(t *testing.T) {
	ds := randomDataset(t, 300)
	load := Load{Level: runlog.Level{RequestRate: 30, Burstiness: 0.5, MaxConcurrency: 40, NumWarmups: 5}, Seed: 3}
	a, ra := collect(t, newEngine(t, nil), ds, load)
	b, rb := collect(t, newEngine(t, nil), ds, load)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(ra, rb); diff != "" {
		t.Errorf("results differ (-first +second):\n%s", diff)
	}
	if len(a) != 305 {
		t.Errorf("records = %d; want 305", len(a))
	}
}

func TestOpenLoopSchedule(t *testing.T) {
	// Intended times are exactly workload.Arrivals' schedule; with no cap
	// every request is sent on time.
	ds := randomDataset(t, 50)
	recs, res := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{RequestRate: 5, Burstiness: 1}, Seed: 11})
	arr := workload.NewArrivals(5, 1, 11)
	got := byID(recs)
	for i := range 50 {
		rec := got[strconv.Itoa(i)]
		want := int64(arr.Next())
		if rec.Intended != want || rec.Sent != want {
			t.Errorf("request %d: intended %d sent %d; want both %d", i, rec.Intended, rec.Sent, want)
		}
	}
	if res.DelayedArrivals != 0 {
		t.Errorf("DelayedArrivals = %d; want 0", res.DelayedArrivals)
	}
}

// inFlightMax returns the largest number of records whose [Sent, End)
// intervals overlap.
func inFlightMax(recs []*runlog.Record) int {
	type edge struct {
		t int64
		d int
	}
	var es []edge
	for _, r := range recs {
		es = append(es, edge{r.Sent, 1}, edge{r.End, -1})
	}
	// Ends before starts at equal times: a slot freed at t is reused at t.
	slices.SortFunc(es, func(a, b edge) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.d - b.d
	})
	cur, most := 0, 0
	for _, e := range es {
		cur += e.d
		most = max(most, cur)
	}
	return most
}

func TestClosedLoop(t *testing.T) {
	ds := shapes{
		{PromptTokens: 50, OutputTokens: 5}, {PromptTokens: 50, OutputTokens: 9},
		{PromptTokens: 50, OutputTokens: 2}, {PromptTokens: 50, OutputTokens: 4}, {PromptTokens: 50, OutputTokens: 3},
	}
	recs, res := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{RequestRate: 0, MaxConcurrency: 2}})
	if got := inFlightMax(recs); got != 2 {
		t.Errorf("max in flight = %d; want 2", got)
	}
	ends := []int64{}
	for _, r := range recs {
		if r.Intended != r.Sent {
			t.Errorf("%s: intended %d ≠ sent %d; a closed loop has no schedule", r.ID, r.Intended, r.Sent)
		}
		ends = append(ends, r.End)
	}
	// Requests 2, 3, 4 are sent exactly when a slot frees: at the end of
	// an earlier request.
	got := byID(recs)
	for _, id := range []string{"2", "3", "4"} {
		if !slices.Contains(ends, got[id].Sent) {
			t.Errorf("request %s sent at %d, not at any request's end %v", id, got[id].Sent, ends)
		}
	}
	if res.DelayedArrivals != 0 {
		t.Errorf("DelayedArrivals = %d; want 0 in a closed loop", res.DelayedArrivals)
	}
}

func TestCapDelaysArrivals(t *testing.T) {
	// 1000 req/s against one slot: nearly every arrival waits; its
	// Intended stays on schedule and Sent is when the slot freed.
	ds := shapes{{PromptTokens: 200, OutputTokens: 20}}
	recs, res := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{RequestRate: 1000, MaxConcurrency: 1, NumPrompts: 20}, Seed: 1})
	arr := workload.NewArrivals(1000, 1, 1)
	delayed := 0
	got := byID(recs)
	for i := range 20 {
		r := got[strconv.Itoa(i)]
		if want := int64(arr.Next()); r.Intended != want {
			t.Errorf("request %d: intended %d; want %d", i, r.Intended, want)
		}
		if r.Sent > r.Intended {
			delayed++
		}
	}
	if delayed != res.DelayedArrivals || delayed < 15 {
		t.Errorf("delayed = %d, DelayedArrivals = %d; want equal and most of 20", delayed, res.DelayedArrivals)
	}
	if inFlightMax(recs) != 1 {
		t.Errorf("max in flight = %d; want 1", inFlightMax(recs))
	}
}

func TestTraceArrivals(t *testing.T) {
	ds := shapes{
		{PromptTokens: 100, OutputTokens: 5, Arrival: 0, HasArrival: true},
		{PromptTokens: 100, OutputTokens: 5, Arrival: 1500 * time.Microsecond, HasArrival: true},
		{PromptTokens: 100, OutputTokens: 5, Arrival: 2 * time.Second, HasArrival: true},
	}
	// The rate is ignored for a trace; NumPrompts beyond its length is
	// capped (a trace is replayed once).
	recs, res := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{RequestRate: 1, NumPrompts: 10}})
	got := byID(recs)
	for i, r := range ds {
		rec := got[strconv.Itoa(i)]
		if rec.Intended != int64(r.Arrival) || rec.Sent != int64(r.Arrival) {
			t.Errorf("request %d: intended %d sent %d; want %d", i, rec.Intended, rec.Sent, int64(r.Arrival))
		}
	}
	if res.Sent != 3 {
		t.Errorf("Sent = %d; want 3", res.Sent)
	}
}

func TestWarmups(t *testing.T) {
	ds := randomDataset(t, 20)
	recs, res := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{RequestRate: 10, NumPrompts: 10, NumWarmups: 4, MaxConcurrency: 2}, Seed: 5, Index: 3})
	var warm, measured []*runlog.Record
	for _, r := range recs {
		if r.Level != 3 {
			t.Errorf("%s: level %d; want 3", r.ID, r.Level)
		}
		if r.Warmup {
			warm = append(warm, r)
		} else {
			measured = append(measured, r)
		}
	}
	if len(warm) != 4 || len(measured) != 10 || res.Warmups != 4 || res.Sent != 10 {
		t.Fatalf("warm-ups %d, measured %d, result %+v; want 4 and 10", len(warm), len(measured), res)
	}
	lastWarm := int64(0)
	for _, r := range warm {
		lastWarm = max(lastWarm, r.End)
		// Warm-ups use the indexes after the measured ones.
		if n, _ := strconv.Atoi(r.ID[1:]); r.ID[0] != 'w' || n < 10 {
			t.Errorf("warm-up id %q; want w10..w13", r.ID)
		}
	}
	if res.Start != lastWarm {
		t.Errorf("measured phase starts at %d; want the last warm-up's end %d", res.Start, lastWarm)
	}
	// The measured schedule is shifted to start after the warm-ups.
	arr := workload.NewArrivals(10, 0, 5)
	if want := lastWarm + int64(arr.Next()); byID(measured)["0"].Intended != want {
		t.Errorf("first measured intended %d; want %d", byID(measured)["0"].Intended, want)
	}
}

func TestDuration(t *testing.T) {
	ds := randomDataset(t, 1000)
	recs, res := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{RequestRate: 20, DurationS: (2 * time.Second).Seconds()}, Seed: 9})
	arr := workload.NewArrivals(20, 1, 9)
	want := 0
	for int64(arr.Next()) <= int64(2*time.Second) {
		want++
	}
	if len(recs) != want || res.Sent != want {
		t.Errorf("records %d, sent %d; want %d arrivals within 2 s", len(recs), res.Sent, want)
	}
	closed, _ := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{MaxConcurrency: 4, DurationS: (time.Second).Seconds()}})
	for _, r := range closed {
		if r.Sent >= int64(time.Second) {
			t.Errorf("%s sent at %v, after the 1 s duration", r.ID, time.Duration(r.Sent))
		}
	}
	if len(closed) < 4 {
		t.Errorf("closed loop by duration sent %d; want more than the cap", len(closed))
	}
	if _, err := Run(context.Background(), newEngine(t, nil), ds, Load{Level: runlog.Level{DurationS: (time.Second).Seconds()}}, func(*runlog.Record) error { return nil }); err == nil {
		t.Error("closed loop bounded only by duration, no cap: no error")
	}
}

func TestFailures(t *testing.T) {
	// A waiting queue of two: of four requests sent at once (all queued
	// before the first iteration), the last two are refused (429). A
	// request longer than max_model_len is invalid (400).
	eng := newEngine(t, func(c *sim.Config) { c.MaxNumSeqs = 1; c.MaxWaiting = 2; c.MaxModelLen = 1000 })
	ds := shapes{
		{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 100, OutputTokens: 10},
		{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 100, OutputTokens: 10},
		{PromptTokens: 999, OutputTokens: 10},
	}
	recs, res := collect(t, eng, ds, Load{})
	got := byID(recs)
	want := map[string]runlog.ErrorClass{"0": "", "1": "", "2": runlog.ErrHTTP429, "3": runlog.ErrHTTP429, "4": runlog.ErrHTTP4xx}
	for id, class := range want {
		r := got[id]
		if r.ErrorClass != class {
			t.Errorf("request %s: class %q (status %d, %q); want %q", id, r.ErrorClass, r.Status, r.Error, class)
		}
		if class != "" && (r.Error == "" || len(r.Chunks) != 0) {
			t.Errorf("request %s failed with error %q and %d chunks; want a message and none", id, r.Error, len(r.Chunks))
		}
	}
	if res.Completed != 2 || res.Failed != 3 {
		t.Errorf("completed %d, failed %d; want 2 and 3", res.Completed, res.Failed)
	}
}

func TestReasoning(t *testing.T) {
	eng := newEngine(t, func(c *sim.Config) { c.ReasoningTokens = 3 })
	recs, _ := collect(t, eng, shapes{{PromptTokens: 30, OutputTokens: 5}}, Load{})
	r := recs[0]
	vis := []bool{}
	for _, c := range r.Chunks {
		vis = append(vis, c.Visible)
	}
	if diff := cmp.Diff([]bool{false, false, false, true, true}, vis); diff != "" {
		t.Errorf("chunk visibility (-want +got):\n%s", diff)
	}
	ttft, _ := r.TTFT()
	ttp, _ := r.TTP()
	if r.ReasoningTokens != 3 || ttp <= ttft {
		t.Errorf("reasoning %d, TTFT %v, TTP %v; want 3 and TTP > TTFT", r.ReasoningTokens, ttft, ttp)
	}
}

func TestNaturalOutputLength(t *testing.T) {
	// A dataset that leaves the output length to the server gets the
	// deterministic natural length and finish reason "stop".
	recs, _ := collect(t, newEngine(t, nil), shapes{{PromptTokens: 30}}, Load{Seed: 4})
	if want := sim.NaturalLength(4^sim.Mix64(0+0x9e3779b97f4a7c15), sim.DefaultNaturalMedian); recs[0].CompletionTokens != want || recs[0].FinishReason != "stop" || recs[0].MaxTokens != 0 {
		t.Errorf("completion %d finish %q max %d; want %d, stop, 0", recs[0].CompletionTokens, recs[0].FinishReason, recs[0].MaxTokens, want)
	}
}

func TestNaturalStop(t *testing.T) {
	// Asked for 5000 tokens each: with NaturalStop a request stops at its
	// natural length where that is shorter (median 200, so nearly all do),
	// as the HTTP server does without ignore_eos; without it, all 5000.
	ds := make(shapes, 20)
	for i := range ds {
		ds[i] = workload.Request{PromptTokens: 30, OutputTokens: 5000}
	}
	for _, natural := range []bool{false, true} {
		recs, _ := collect(t, newEngine(t, nil), ds, Load{Level: runlog.Level{MaxConcurrency: 20}, Seed: 4, NaturalStop: natural})
		stopped := 0
		for _, r := range recs {
			idx, _ := strconv.Atoi(r.ID)
			want, finish := 5000, "length"
			if n := sim.NaturalLength(4^sim.Mix64(uint64(idx)+0x9e3779b97f4a7c15), sim.DefaultNaturalMedian); natural && n < 5000 {
				want, finish = n, "stop"
				stopped++
			}
			if r.CompletionTokens != want || r.FinishReason != finish || r.MaxTokens != 5000 {
				t.Errorf("NaturalStop %v, %s: completion %d finish %q max %d; want %d, %s, 5000",
					natural, r.ID, r.CompletionTokens, r.FinishReason, r.MaxTokens, want, finish)
			}
		}
		if natural && stopped < 15 {
			t.Errorf("NaturalStop: only %d of 20 stopped early; a median of 200 makes nearly all", stopped)
		}
	}
}

func TestCancel(t *testing.T) {
	ds := randomDataset(t, 200)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var recs []*runlog.Record
	res, err := Run(ctx, newEngine(t, nil), ds, Load{Level: runlog.Level{MaxConcurrency: 50}}, func(r *runlog.Record) error {
		recs = append(recs, r)
		if len(recs) == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error %v; want context.Canceled", err)
	}
	cancelled := 0
	for _, r := range recs {
		if r.ErrorClass == runlog.ErrCancelled {
			cancelled++
		}
	}
	if cancelled == 0 || res.Sent != len(recs) || res.Completed+res.Failed != res.Sent || res.Failed != cancelled {
		t.Errorf("records %d (cancelled %d), result %+v; want every sent request recorded", len(recs), cancelled, res)
	}
}

func TestEmitError(t *testing.T) {
	boom := errors.New("disk full")
	_, err := Run(context.Background(), newEngine(t, nil), randomDataset(t, 5), Load{}, func(*runlog.Record) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Run error %v; want the emit error", err)
	}
}

func TestBadLoad(t *testing.T) {
	ds := randomDataset(t, 5)
	for name, load := range map[string]Load{
		"negative concurrency": {Level: runlog.Level{MaxConcurrency: -1}},
		"negative prompts":     {Level: runlog.Level{NumPrompts: -1}},
		"negative warmups":     {Level: runlog.Level{NumWarmups: -1}},
		"negative duration":    {Level: runlog.Level{DurationS: (-time.Second).Seconds()}},
		"negative rate":        {Level: runlog.Level{RequestRate: -1}},
		"infinite rate":        {Level: runlog.Level{RequestRate: math.Inf(1)}}, // unpaced is 0, one meaning
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Run(context.Background(), newEngine(t, nil), ds, load, func(*runlog.Record) error { return nil }); err == nil {
				t.Errorf("Run(%+v) succeeded; want an error", load)
			}
		})
	}
	if _, err := Run(context.Background(), newEngine(t, nil), shapes{}, Load{}, nil); err == nil {
		t.Error("Run(empty dataset) succeeded")
	}
}

func TestRecordedLengthsAreTheLength(t *testing.T) {
	// A trace's recorded output lengths are what its server generated: with
	// NaturalStop (no ignore_eos) they are still generated exactly, and only
	// NaturalStopRecorded lets them stop early.
	ds := make(shapes, 20)
	for i := range ds {
		ds[i] = workload.Request{PromptTokens: 30, OutputTokens: 3000, OutputRecorded: true}
	}
	for _, tc := range []struct {
		name        string
		load        Load
		wantStopped bool
	}{
		{"natural stop for caps only", Load{Level: runlog.Level{MaxConcurrency: 20}, Seed: 4, NaturalStop: true}, false},
		{"natural stop for recorded too", Load{Level: runlog.Level{MaxConcurrency: 20}, Seed: 4, NaturalStop: true, NaturalStopRecorded: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _ := collect(t, newEngine(t, nil), ds, tc.load)
			stopped := 0
			for _, r := range recs {
				if r.CompletionTokens != 3000 {
					stopped++
				}
			}
			if tc.wantStopped && stopped < 15 {
				t.Errorf("%d of 20 stopped early; want nearly all (median natural length 200)", stopped)
			}
			if !tc.wantStopped && stopped != 0 {
				t.Errorf("%d of 20 stopped before their recorded 3000 tokens; want 0", stopped)
			}
		})
	}
}

// TestRetries: of four requests sent at once into a waiting queue of two,
// two are refused (429, the advertised wait 1 s); with retries each is sent
// again no sooner than that wait, as a record of its own linked to the
// first attempt, and completes. Without a policy the refusals are final.
func TestRetries(t *testing.T) {
	ds := shapes{
		{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 100, OutputTokens: 10},
		{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 100, OutputTokens: 10},
	}
	mod := func(c *sim.Config) { c.MaxNumSeqs = 1; c.MaxWaiting = 2 }
	p := loadgen.RetryPolicy{Max: 2, Base: 100 * time.Millisecond, Cap: time.Second}
	recs, res := collect(t, newEngine(t, mod), ds, Load{Retry: &p})
	got := byID(recs)
	for _, id := range []string{"2", "3"} {
		first, retry := got[id], got[id+"-a2"]
		if first == nil || retry == nil {
			t.Fatalf("request %s: first attempt %v, retry %v; want both recorded", id, first != nil, retry != nil)
		}
		if !first.Retried || first.ErrorClass != runlog.ErrHTTP429 || first.RetryAfterNs != int64(DefaultRetryAfter) {
			t.Errorf("request %s's first attempt: retried %v, class %q, advertised %v; want a retried 429 advertising 1 s",
				id, first.Retried, first.ErrorClass, time.Duration(first.RetryAfterNs))
		}
		if !retry.OK() || retry.Attempt != 2 || retry.RetryOf != id || retry.Retried {
			t.Errorf("request %s's retry: ok %v attempt %d retry_of %q retried %v; want the OK second attempt of %s",
				id, retry.OK(), retry.Attempt, retry.RetryOf, retry.Retried, id)
		}
		// The policy's backoff (100 ms) is shorter than the server's word.
		if wait := retry.Intended - first.End; wait != int64(DefaultRetryAfter) {
			t.Errorf("request %s retried %v after its refusal; want the advertised 1 s", id, time.Duration(wait))
		}
	}
	if res.Sent != 4 || res.Completed != 4 || res.Failed != 0 || res.Retried != 2 {
		t.Errorf("sent %d completed %d failed %d retried %d; want 4, 4, 0, 2", res.Sent, res.Completed, res.Failed, res.Retried)
	}
	// The same run without retries: the refusals stand.
	_, res = collect(t, newEngine(t, mod), ds, Load{})
	if res.Completed != 2 || res.Failed != 2 || res.Retried != 0 {
		t.Errorf("without retries: completed %d failed %d retried %d; want 2, 2, 0", res.Completed, res.Failed, res.Retried)
	}
}

// TestLoadCheckedAsUserSettings: a bad load reaches the virtual-time
// driver in the words a user's flag gets (loadgen.CheckLevel), not a
// driver's own.
func TestLoadCheckedAsUserSettings(t *testing.T) {
	_, err := Run(context.Background(), newEngine(t, nil), randomDataset(t, 4), Load{Level: runlog.Level{MaxConcurrency: -1}}, func(*runlog.Record) error { return nil })
	var se *setting.Error
	if !errors.As(err, &se) || se.Field != "MaxConcurrency" || err.Error() != "simrun: MaxConcurrency -1: want ≥ 0" {
		t.Errorf("Run with max concurrency -1 = %v; want the setting error of MaxConcurrency", err)
	}
}
