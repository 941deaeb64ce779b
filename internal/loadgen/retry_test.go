package loadgen

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

func TestParseBackoff(t *testing.T) {
	for in, want := range map[string]RetryPolicy{
		"exponential:100ms,2s":       {Base: 100 * time.Millisecond, Cap: 2 * time.Second, Jitter: JitterFull},
		"exponential:100,2000,none":  {Base: 100 * time.Millisecond, Cap: 2 * time.Second, Jitter: JitterNone},
		"Exponential:1s,1s, equal ":  {Base: time.Second, Cap: time.Second, Jitter: JitterEqual},
		"constant:250ms":             {Base: 250 * time.Millisecond, Cap: 250 * time.Millisecond},
		"exponential:0s,0s,none":     {},
		"exponential:0.5,1.5ms,full": {Base: 500 * time.Microsecond, Cap: 1500 * time.Microsecond, Jitter: JitterFull},
	} {
		got, err := ParseBackoff(in)
		if err != nil || got != want {
			t.Errorf("ParseBackoff(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "exponential", "exponential:1s", "exponential:2s,1s", "exponential:1s,2s,wild",
		"constant:1s,2s", "linear:1s", "exponential:-1s,2s", "exponential:1s,2h", "constant:x", "exponential:1s,2s,full,3"} {
		if _, err := ParseBackoff(bad); err == nil {
			t.Errorf("ParseBackoff(%q): no error", bad)
		}
	}
}

// FuzzParseBackoff: no input panics, and an accepted one is a policy
// whose waits stay within [0, cap] before any Retry-After.
func FuzzParseBackoff(f *testing.F) {
	for _, s := range []string{"exponential:100ms,2s", "constant:1", "exponential:0,0,equal", "exponential:1e3,1e4,none"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseBackoff(s)
		if err != nil {
			return
		}
		if p.Base < 0 || p.Cap < p.Base || p.Cap > maxBackoff {
			t.Fatalf("ParseBackoff(%q) = %+v: out of bounds", s, p)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for k := 1; k < 70; k++ {
			if d := p.Wait(k, &runlog.Record{}, rng); d < 0 || d > p.Cap {
				t.Fatalf("wait %d = %v, outside [0, %v]", k, d, p.Cap)
			}
		}
	})
}

func TestBackoffWaitsByHand(t *testing.T) {
	p := RetryPolicy{Base: 100 * time.Millisecond, Cap: time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	rec := &runlog.Record{}
	for k, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 60: time.Second} {
		if got := p.Wait(k, rec, rng); got != want {
			t.Errorf("retry %d waits %v, want %v", k, got, want)
		}
	}
	// The answer's Retry-After wins when longer, never when shorter.
	if got := p.Wait(1, &runlog.Record{RetryAfterNs: int64(3 * time.Second)}, rng); got != 3*time.Second {
		t.Errorf("with Retry-After 3 s the wait is %v", got)
	}
	if got := p.Wait(3, &runlog.Record{RetryAfterNs: int64(time.Millisecond)}, rng); got != 400*time.Millisecond {
		t.Errorf("with Retry-After 1 ms the third wait is %v, want the backoff's 400 ms", got)
	}
	// An aggressive client waits its backoff alone: 100 ms, not the 3 s.
	aggressive := p
	aggressive.IgnoreRetryAfter = true
	if got := aggressive.Wait(1, &runlog.Record{RetryAfterNs: int64(3 * time.Second)}, rng); got != 100*time.Millisecond {
		t.Errorf("ignoring Retry-After 3 s the wait is %v, want the backoff's 100 ms", got)
	}
	// Jitter: full draws in [0, b], equal in [b/2, b]; both vary.
	for _, j := range []Jitter{JitterFull, JitterEqual} {
		p.Jitter = j
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Wait(3, rec, rng)
			lo := time.Duration(0)
			if j == JitterEqual {
				lo = 200 * time.Millisecond
			}
			if d < lo || d > 400*time.Millisecond {
				t.Fatalf("jitter %d: wait %v outside [%v, 400ms]", j, d, lo)
			}
			seen[d] = true
		}
		if len(seen) < 100 {
			t.Errorf("jitter %d: only %d distinct waits in 200", j, len(seen))
		}
	}
}

// TestWithRetries runs a call that fails twice with 429 and then
// succeeds: two retried attempts are emitted as records of their own, the
// call's record is the third attempt, linked to the first's id, and a
// request failing otherwise is not retried.
func TestWithRetries(t *testing.T) {
	var clock int64
	now := func() int64 { clock += 1000; return clock }
	attempts := 0
	call := func(_ context.Context, rec *runlog.Record) {
		attempts++
		rec.ID, rec.Sent = "r1", now()
		if attempts < 3 {
			rec.Status, rec.ErrorClass, rec.Error = 429, runlog.ErrHTTP429, "HTTP 429: slow down"
			return
		}
		rec.Status = 200
		rec.Chunks = append(rec.Chunks, runlog.Chunk{T: now(), Tokens: 1, Visible: true})
	}
	var emitted []*runlog.Record
	p := RetryPolicy{Max: 3}
	wrapped := p.WithRetries(call, func(r *runlog.Record) { emitted = append(emitted, r) }, now, 7, nil)
	rec := &runlog.Record{Intended: 5, Level: 2}
	wrapped(context.Background(), rec)
	if attempts != 3 || len(emitted) != 2 {
		t.Fatalf("%d attempts, %d emitted; want 3 and 2", attempts, len(emitted))
	}
	if e := emitted[0]; !e.Retried || e.ID != "r1" || e.Attempt != 0 || e.RetryOf != "" || e.ErrorClass != runlog.ErrHTTP429 || e.Intended != 5 {
		t.Errorf("first attempt emitted as %+v", e)
	}
	if e := emitted[1]; !e.Retried || e.ID != "r1-a2" || e.Attempt != 2 || e.RetryOf != "r1" || e.Level != 2 {
		t.Errorf("second attempt emitted as %+v", e)
	}
	if !rec.OK() || rec.Retried || rec.ID != "r1-a3" || rec.Attempt != 3 || rec.RetryOf != "r1" || rec.Level != 2 || rec.Intended <= 5 {
		t.Errorf("the request's record is %+v; want the third attempt, OK, linked to r1, due after its backoff", rec)
	}

	attempts = 0
	bad := func(_ context.Context, rec *runlog.Record) {
		attempts++
		rec.ID, rec.ErrorClass = "r2", runlog.ErrHTTP4xx
	}
	emitted = nil
	p.WithRetries(bad, func(r *runlog.Record) { emitted = append(emitted, r) }, now, 7, nil)(context.Background(), &runlog.Record{})
	if attempts != 1 || len(emitted) != 0 {
		t.Errorf("a 400 was sent %d times (%d emitted); a client error is not retried", attempts, len(emitted))
	}
}

// TestWithRetriesBounded answers 429 asking for a day: the wait is cut
// to MaxRetryAfter, and a retry due after the level's end is not sent at
// all, so the request ends at once instead of holding the run for a day.
func TestWithRetriesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		now := func() int64 { return int64(time.Since(start)) }
		attempts := 0
		call := func(_ context.Context, rec *runlog.Record) {
			attempts++
			rec.ID, rec.Sent, rec.End = "r1", now(), now()
			rec.Status, rec.ErrorClass, rec.RetryAfterNs = 429, runlog.ErrHTTP429, int64(24*time.Hour)
		}
		p := RetryPolicy{Max: 1}
		if got := p.Wait(1, &runlog.Record{RetryAfterNs: int64(24 * time.Hour)}, rand.New(rand.NewPCG(1, 2))); got != MaxRetryAfter {
			t.Errorf("Wait(Retry-After 24h) = %v; want %v", got, MaxRetryAfter)
		}
		var b RetryBounds
		b.Until.Store(now() + int64(5*time.Second))
		var emitted int
		rec := &runlog.Record{}
		p.WithRetries(call, func(*runlog.Record) { emitted++ }, now, 7, &b)(context.Background(), rec)
		if waited := time.Since(start); waited != 0 || attempts != 1 || emitted != 0 {
			t.Errorf("waited %v, %d attempts, %d emitted; want no wait and the one attempt as the request's record", waited, attempts, emitted)
		}
		if rec.ErrorClass != runlog.ErrHTTP429 || rec.Retried {
			t.Errorf("record = %+v; want the 429, not marked retried", rec)
		}
		if b.Dropped.Load() != 1 || b.Capped.Load() != 1 || b.Longest.Load() != int64(24*time.Hour) {
			t.Errorf("bounds: dropped %d, capped %d, longest %v; want 1, 1, 24h", b.Dropped.Load(), b.Capped.Load(), time.Duration(b.Longest.Load()))
		}

		// Without an end, the retry waits the cap, not the day.
		attempts = 0
		var open RetryBounds
		t0 := time.Now()
		p.WithRetries(call, func(*runlog.Record) {}, now, 7, &open)(context.Background(), &runlog.Record{})
		if waited := time.Since(t0); attempts != 2 || waited != MaxRetryAfter {
			t.Errorf("without an end: %d attempts after %v; want 2 after %v", attempts, waited, MaxRetryAfter)
		}
	})
}
