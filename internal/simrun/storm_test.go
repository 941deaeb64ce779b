package simrun

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/workload"
)

// TestTimeoutByHand: two 100-token requests sent at once to an engine
// running one at a time. Without a timeout request 0 ends at E0 and
// request 1, which starts then, at E1. With a client timeout T halfway
// between, request 0 completes and request 1 ends at exactly T (its send,
// 0, plus T) as a timeout, keeping the chunks that came by T (some, none
// later). A server that notices the disconnect drops it at the iteration
// that straddles T: the engine generated 100 + the tokens the client saw +
// that iteration's one. A server that does not runs it to its end: the
// rest, 100 − seen, is the abandoned waste, and the engine generated 200.
func TestTimeoutByHand(t *testing.T) {
	ds := shapes{{PromptTokens: 100, OutputTokens: 100}, {PromptTokens: 100, OutputTokens: 100}}
	mod := func(c *sim.Config) { c.MaxNumSeqs = 1 }
	recs, _ := collect(t, newEngine(t, mod), ds, Load{})
	got := byID(recs)
	e0, e1 := got["0"].End, got["1"].End
	if !(e0 < e1) {
		t.Fatalf("request 0 ends at %d, request 1 at %d; want 0 first", e0, e1)
	}
	timeout := time.Duration((e0 + e1) / 2)
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			recs, res := collect(t, newEngine(t, mod), ds, Load{Timeout: timeout, KeepAbandoned: keep})
			got := byID(recs)
			r0, r1 := got["0"], got["1"]
			if !r0.OK() || r0.End != e0 {
				t.Errorf("request 0: ok %v end %d; want it to complete at %d as without a timeout", r0.OK(), r0.End, e0)
			}
			if r1.ErrorClass != runlog.ErrTimeout || r1.End != int64(timeout) || r1.Error != "request exceeded "+timeout.String() {
				t.Errorf("request 1: class %q end %d error %q; want a timeout at %d", r1.ErrorClass, r1.End, r1.Error, int64(timeout))
			}
			seen := r1.CompletionTokens
			if seen <= 0 || seen >= 100 {
				t.Errorf("request 1 saw %d tokens before its timeout; want some of its 100", seen)
			}
			for _, c := range r1.Chunks {
				if c.T > r1.End {
					t.Errorf("request 1 has a chunk at %d, after its timeout at %d", c.T, r1.End)
				}
			}
			if res.Completed != 1 || res.Failed != 1 {
				t.Errorf("completed %d failed %d; want 1 and 1", res.Completed, res.Failed)
			}
			gen := res.Engine.GenerationTokens
			if keep {
				if res.Abandoned != 1 || res.AbandonedTokens != int64(100-seen) || gen != 200 {
					t.Errorf("abandoned %d, %d tokens wasted, %d generated; want 1, %d (100 − %d seen) and 200",
						res.Abandoned, res.AbandonedTokens, gen, 100-seen, seen)
				}
			} else if res.Abandoned != 0 || res.AbandonedTokens != 0 || gen != int64(100+seen+1) {
				t.Errorf("abandoned %d, %d tokens wasted, %d generated; want 0, 0 and %d (100 + %d seen + 1)",
					res.Abandoned, res.AbandonedTokens, gen, 101+seen, seen)
			}
		})
	}
}

// TestTimeoutRetry: the timed-out request of TestTimeoutByHand retried at
// once (constant:0) is sent at the timeout itself, as attempt 2 of "1";
// alone on the engine then, it completes, and the timed-out attempt is a
// retried record, not a failure.
func TestTimeoutRetry(t *testing.T) {
	ds := shapes{{PromptTokens: 100, OutputTokens: 100}, {PromptTokens: 100, OutputTokens: 100}}
	mod := func(c *sim.Config) { c.MaxNumSeqs = 1 }
	recs, _ := collect(t, newEngine(t, mod), ds, Load{})
	got := byID(recs)
	timeout := time.Duration((got["0"].End + got["1"].End) / 2)
	p := loadgen.RetryPolicy{Max: 1}
	recs, res := collect(t, newEngine(t, mod), ds, Load{Timeout: timeout, Retry: &p})
	got = byID(recs)
	first, retry := got["1"], got["1-a2"]
	if first == nil || retry == nil {
		t.Fatalf("want the first attempt and the retry of request 1; got ids %v", ids(recs))
	}
	if !first.Retried || first.ErrorClass != runlog.ErrTimeout || first.RetryAfterNs != 0 {
		t.Errorf("first attempt: retried %v class %q advertised %d; want a retried timeout advertising nothing", first.Retried, first.ErrorClass, first.RetryAfterNs)
	}
	if retry.Attempt != 2 || retry.RetryOf != "1" || retry.Intended != int64(timeout) || retry.Sent != int64(timeout) || !retry.OK() {
		t.Errorf("retry: attempt %d of %q intended %d sent %d ok %v; want the OK attempt 2 of \"1\" sent at %d",
			retry.Attempt, retry.RetryOf, retry.Intended, retry.Sent, retry.OK(), int64(timeout))
	}
	if res.Sent != 2 || res.Completed != 2 || res.Failed != 0 || res.Retried != 1 {
		t.Errorf("sent %d completed %d failed %d retried %d; want 2, 2, 0, 1", res.Sent, res.Completed, res.Failed, res.Retried)
	}
}

func ids(recs []*runlog.Record) []string {
	var s []string
	for _, r := range recs {
		s = append(s, r.ID)
	}
	return s
}

// rejecter is an engine whose rejections advertise a wait of their own, as
// a gateway's rate limiter does (sim.Event.RetryAfterNs).
type rejecter struct {
	single
	after int64
}

func (r *rejecter) step(now int64, fd feed) (int64, []cluster.Batch) {
	end, bs := r.single.step(now, fd)
	for _, b := range bs {
		for i := range b.Events {
			if b.Events[i].Kind == sim.EventRejected {
				b.Events[i].RetryAfterNs = r.after
			}
		}
	}
	return end, bs
}

// TestRetryAfterFromRejection: the engine's queue of one refuses the third
// of three requests sent at once; its rejection says 3 s, so the retry
// waits 3 s (not DefaultRetryAfter, 1 s) — unless the client ignores
// Retry-After, when it waits only its backoff, 0.
func TestRetryAfterFromRejection(t *testing.T) {
	ds := shapes{{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 100, OutputTokens: 10}}
	for _, ignore := range []bool{false, true} {
		p := loadgen.RetryPolicy{Max: 1, IgnoreRetryAfter: ignore}
		eng := &rejecter{single: single{e: newEngine(t, func(c *sim.Config) { c.MaxNumSeqs = 1; c.MaxWaiting = 1 })}, after: int64(3 * time.Second)}
		var recs []*runlog.Record
		if _, err := run(t.Context(), eng, ds, Load{Retry: &p}, func(r *runlog.Record) error { recs = append(recs, r); return nil }); err != nil {
			t.Fatal(err)
		}
		got := byID(recs)
		first, retry := got["2"], got["2-a2"]
		if first == nil || retry == nil {
			t.Fatalf("ignore %v: want request 2 refused and retried; got ids %v", ignore, ids(recs))
		}
		want := int64(3 * time.Second)
		if ignore {
			want = 0
		}
		if first.RetryAfterNs != int64(3*time.Second) || retry.Intended-first.End != want {
			t.Errorf("ignore %v: advertised %v, retried %v after; want 3s advertised and a wait of %v",
				ignore, time.Duration(first.RetryAfterNs), time.Duration(retry.Intended-first.End), time.Duration(want))
		}
	}
}

// burstTrace is the retry-storm experiment's arrivals as a trace CSV (the
// file docs/simulator.md makes with awk, byte for byte): 512-token prompts
// and 128-token answers at 4/s for 10 s, 12/s for the next 10 s (a burst
// of 1.5× the engine's ~7.8 req/s), and 4/s for 50 s more.
func burstTrace() string {
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	for i := range 40 {
		fmt.Fprintf(&b, "%.6f,512,128\n", float64(i)/4)
	}
	for i := range 120 {
		fmt.Fprintf(&b, "%.6f,512,128\n", 10+float64(i)/12)
	}
	for i := range 200 {
		fmt.Fprintf(&b, "%.6f,512,128\n", 20+float64(i)/4)
	}
	return b.String()
}

// stormRun is one run of the experiment: the success share, the attempts
// per original request (amplification) and the goodput, successful
// requests per second of the run (Result.Duration).
type stormRun struct {
	ok        int
	amp, good float64
}

func storm(t *testing.T, ds workload.Dataset, p *loadgen.RetryPolicy, mod func(*sim.Config), keep bool) stormRun {
	t.Helper()
	eng := newEngine(t, func(c *sim.Config) {
		c.MaxNumSeqs = 8
		if mod != nil {
			mod(c)
		}
	})
	_, res := collect(t, eng, ds, Load{Retry: p, Timeout: 5 * time.Second, KeepAbandoned: keep})
	if res.Sent != ds.Len() {
		t.Fatalf("sent %d of %d", res.Sent, ds.Len())
	}
	return stormRun{ok: res.Completed, amp: float64(res.Sent+res.Retried) / float64(res.Sent), good: float64(res.Completed) / res.Duration().Seconds()}
}

// TestRetryStorm is the retry-storm experiment (docs/simulator.md, "Retry
// storms"): one engine of 8 sequences (~7.8 req/s of these requests) takes
// burstTrace's 360 requests from clients that give up after 5 s; the
// engine drops a request whose client left, as vLLM does. The figures
// (goodput sim gives the same):
//
//	no retries                               317 ok  ×1.00  4.49 req/s
//	(a) 5 retries at once, ignore Retry-After 218 ok  ×3.54  2.24 req/s
//	(b) 2 retries, exponential 1s..30s full   331 ok  ×1.37  4.68 req/s
//	    5 retries, exponential 1s..30s full   273 ok  ×3.29  2.42 req/s
//	(b) with a 16-request queue bound (429s):
//	    5 retries, exponential 1s..30s full   360 ok  ×1.36  5.09 req/s
//
// (a) is the storm: each timeout comes back at once into the queue the
// burst left, times out in turn, and the queue stays 5 s deep long after
// the burst — attempts rise, goodput halves. (b) backs off and stops, and
// the run recovers as without retries, serving more. Backoff alone does
// not save a timeout-driven storm when the client keeps retrying; a retry
// cap, or a server that sheds load early with 429s (honoured), does.
func TestRetryStorm(t *testing.T) {
	ds, err := workload.ReadTrace(strings.NewReader(burstTrace()), "burst.csv", workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 360 {
		t.Fatalf("the trace has %d requests; want 360", ds.Len())
	}
	aggressive := loadgen.RetryPolicy{Max: 5, IgnoreRetryAfter: true}
	backoff := loadgen.RetryPolicy{Max: 2, Base: time.Second, Cap: 30 * time.Second, Jitter: loadgen.JitterFull}
	none := storm(t, ds, nil, nil, false)
	a := storm(t, ds, &aggressive, nil, false)
	b := storm(t, ds, &backoff, nil, false)
	t.Logf("none %+v, storm %+v, backoff %+v", none, a, b)
	if a.amp < 3 || a.good > 0.6*none.good || a.ok >= none.ok {
		t.Errorf("aggressive retries: ×%.2f attempts, goodput %.2f (%d ok); want a storm: ≥ ×3 and under 0.6 × the %.2f (%d ok) without retries",
			a.amp, a.good, a.ok, none.good, none.ok)
	}
	if b.amp > 1.5 || b.good < 0.95*none.good || b.ok < none.ok {
		t.Errorf("backoff with jitter: ×%.2f attempts, goodput %.2f (%d ok); want ≤ ×1.5 and at least about the %.2f (%d ok) without retries",
			b.amp, b.good, b.ok, none.good, none.ok)
	}
	// A server that sheds load (a bounded queue answering 429 with
	// Retry-After 1 s) lets a backing-off client retry five times and
	// still serve every request.
	shed := func(c *sim.Config) { c.MaxWaiting = 16 }
	backoff.Max = 5
	if s := storm(t, ds, &backoff, shed, false); s.ok != ds.Len() || s.amp > 1.5 {
		t.Errorf("backoff against a bounded queue: %d ok, ×%.2f; want all 360 at ≤ ×1.5", s.ok, s.amp)
	}
	// A server that does not notice disconnects computes every abandoned
	// attempt: any retrying of timeouts then storms.
	if k := storm(t, ds, &aggressive, nil, true); k.ok >= a.ok || k.amp < a.amp {
		t.Errorf("a server ignoring disconnects: %d ok ×%.2f; want worse than the %d ok ×%.2f of one that notices", k.ok, k.amp, a.ok, a.amp)
	}
}

// TestClusterTimeout: TestTimeoutByHand on each replica of a round-robin
// pair — four requests at once, replica 1 serving 0 and 2, replica 2
// serving 1 and 3, one at a time. Each replica runs as the lone engine
// did, so 0 and 1 complete at E0, and 2 and 3 time out at exactly T,
// having seen as many tokens as the lone engine's request 1.
func TestClusterTimeout(t *testing.T) {
	one := shapes{{PromptTokens: 100, OutputTokens: 100}, {PromptTokens: 100, OutputTokens: 100}}
	mod := func(c *sim.Config) { c.MaxNumSeqs = 1 }
	recs, _ := collect(t, newEngine(t, mod), one, Load{})
	got := byID(recs)
	timeout := time.Duration((got["0"].End + got["1"].End) / 2)
	recs, _ = collect(t, newEngine(t, mod), one, Load{Timeout: timeout})
	lone := byID(recs)

	ds := append(append(shapes{}, one...), one...)
	c := newCluster(t, 2, cluster.Router{Policy: cluster.PolicyRoundRobin}, mod)
	recs, res := collectCluster(t, c, ds, Load{Timeout: timeout})
	got = byID(recs)
	for _, id := range []string{"0", "1"} {
		if r := got[id]; !r.OK() || r.End != lone["0"].End {
			t.Errorf("request %s: ok %v end %d; want complete at %d", id, r.OK(), r.End, lone["0"].End)
		}
	}
	for _, id := range []string{"2", "3"} {
		if r := got[id]; r.ErrorClass != runlog.ErrTimeout || r.End != int64(timeout) || r.CompletionTokens != lone["1"].CompletionTokens {
			t.Errorf("request %s: class %q end %d tokens %d; want a timeout at %d with %d tokens seen",
				id, r.ErrorClass, r.End, r.CompletionTokens, int64(timeout), lone["1"].CompletionTokens)
		}
	}
	if res.Completed != 2 || res.Failed != 2 {
		t.Errorf("completed %d failed %d; want 2 and 2", res.Completed, res.Failed)
	}
}
