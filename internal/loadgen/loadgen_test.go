package loadgen

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// fixedSchedule yields arrivals every step.
type fixedSchedule struct {
	step time.Duration
	n    int
}

func (s *fixedSchedule) Next() time.Duration {
	d := time.Duration(s.n) * s.step
	s.n++
	return d
}

// sleepTarget answers each request after d (virtual time inside synctest),
// with one token chunk at the end.
func sleepTarget(now func() int64, d time.Duration) Target {
	return TargetFunc(func(i int) (Call, error) {
		return func(ctx context.Context, rec *runlog.Record) {
			rec.Sent = now()
			select {
			case <-time.After(d):
				rec.Chunks = append(rec.Chunks, runlog.Chunk{T: now(), Tokens: 1, Visible: true})
				rec.End = now()
				rec.Status = 200
			case <-ctx.Done():
				rec.End = now()
				rec.ErrorClass = runlog.ErrCancelled
			}
		}, nil
	})
}

type collector struct {
	mu   sync.Mutex
	recs []runlog.Record
}

func (c *collector) add(r *runlog.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := *r
	cp.Chunks = append([]runlog.Chunk(nil), r.Chunks...)
	c.recs = append(c.recs, cp)
}

func clock() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

func TestOpenLoopScheduleIsAbsolute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		var c collector
		// 10 req/s for 20 requests, each taking 35 ms: no cap, so every send
		// is exactly on schedule: intended = sent = start + i*100ms.
		res, err := Run(t.Context(), Config{
			Schedule: &fixedSchedule{step: 100 * time.Millisecond}, NumPrompts: 20,
			Now: now, OnRecord: c.add, IDPrefix: "r-",
		}, sleepTarget(now, 35*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if res.Sent != 20 || len(c.recs) != 20 {
			t.Fatalf("sent %d, recorded %d; want 20, 20", res.Sent, len(c.recs))
		}
		for _, r := range c.recs {
			if r.Sent != r.Intended {
				t.Errorf("%s: sent %d, intended %d; want equal (no drift)", r.ID, r.Sent, r.Intended)
			}
			if (r.Intended-res.Start)%int64(100*time.Millisecond) != 0 {
				t.Errorf("%s: intended %d not on the 100ms grid from %d", r.ID, r.Intended, res.Start)
			}
		}
		// Last arrival at 1.9 s, plus 35 ms of work.
		if got, want := time.Duration(res.End-res.Start), 1935*time.Millisecond; got != want {
			t.Errorf("level took %v; want %v", got, want)
		}
	})
}

func TestCapDelaysArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		var c collector
		// Arrivals every 10 ms, each request takes 25 ms, at most 1 in
		// flight: request k can start only at 25k ms, while it was due at
		// 10k ms. All but the first find the cap full.
		res, err := Run(t.Context(), Config{
			Schedule: &fixedSchedule{step: 10 * time.Millisecond}, NumPrompts: 5, MaxConcurrency: 1,
			Now: now, OnRecord: c.add,
		}, sleepTarget(now, 25*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if res.Delayed != 4 {
			t.Errorf("Delayed = %d; want 4", res.Delayed)
		}
		var worst time.Duration
		for _, r := range c.recs {
			rt, _ := r.ResponseTime()
			e2e, _ := r.E2E()
			if e2e != 25*time.Millisecond {
				t.Errorf("%s: E2E = %v; want 25ms", r.ID, e2e)
			}
			worst = max(worst, rt)
		}
		// The last request was due at 40 ms and finished at 125 ms.
		if worst != 85*time.Millisecond {
			t.Errorf("worst response time = %v; want 85ms (the backlog must show)", worst)
		}
	})
}

func TestClosedLoopAndWarmups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		var c collector
		res, err := Run(t.Context(), Config{
			MaxConcurrency: 3, NumPrompts: 9, NumWarmups: 2, Now: now, OnRecord: c.add,
		}, sleepTarget(now, 10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		warm := 0
		for _, r := range c.recs {
			if r.Warmup {
				warm++
				if r.Sent >= res.Start {
					t.Errorf("warm-up %s sent at %d, after the measured start %d", r.ID, r.Sent, res.Start)
				}
			}
		}
		if warm != 2 || len(c.recs) != 11 || res.Sent != 11 {
			t.Errorf("warm-ups %d, records %d, sent %d; want 2, 11, 11", warm, len(c.recs), res.Sent)
		}
		// 9 requests, 3 at a time, 10 ms each: 30 ms.
		if got := time.Duration(res.End - res.Start); got != 30*time.Millisecond {
			t.Errorf("measured phase took %v; want 30ms", got)
		}
		if res.Delayed != 0 {
			t.Errorf("closed loop Delayed = %d; want 0 (no schedule to be late for)", res.Delayed)
		}
	})
}

func TestCancelRecordsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		var c collector
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(250*time.Millisecond, cancel)
		res, err := Run(ctx, Config{
			Schedule: &fixedSchedule{step: 100 * time.Millisecond}, NumPrompts: 100,
			Now: now, OnRecord: c.add,
		}, sleepTarget(now, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// Sent at 0, 100, 200 ms; cancelled at 250 ms while all in flight.
		if res.Sent != 3 || len(c.recs) != 3 || res.Stopped != "cancelled" {
			t.Fatalf("sent %d, recorded %d, stopped %q; want 3, 3, cancelled", res.Sent, len(c.recs), res.Stopped)
		}
		for _, r := range c.recs {
			if r.ErrorClass != runlog.ErrCancelled {
				t.Errorf("%s: class %q; want cancelled", r.ID, r.ErrorClass)
			}
		}
	})
}

func TestDurationStopsSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		var c collector
		res, err := Run(t.Context(), Config{
			Schedule: &fixedSchedule{step: 100 * time.Millisecond}, Duration: 450 * time.Millisecond,
			Now: now, OnRecord: c.add,
		}, sleepTarget(now, 300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		// Arrivals at 0..400 ms fit in 450 ms; in-flight ones complete.
		if res.Sent != 5 || res.Stopped != "duration" {
			t.Errorf("sent %d, stopped %q; want 5, duration", res.Sent, res.Stopped)
		}
		for _, r := range c.recs {
			if !r.OK() {
				t.Errorf("%s failed (%s); in-flight requests must complete at the deadline", r.ID, r.ErrorClass)
			}
		}
	})
}

func TestPrepareError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		boom := errors.New("bad prompt")
		_, err := Run(t.Context(), Config{NumPrompts: 3, Now: now}, TargetFunc(func(i int) (Call, error) {
			return nil, boom
		}))
		if !errors.Is(err, boom) {
			t.Errorf("Run() error = %v; want %v", err, boom)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	if _, err := Run(context.Background(), Config{NumPrompts: 1}, nil); err == nil {
		t.Error("Run() with nil Now succeeded; want error")
	}
	if _, err := Run(context.Background(), Config{Now: clock()}, nil); err == nil {
		t.Error("Run() with neither NumPrompts nor Duration succeeded; want error")
	}
}
