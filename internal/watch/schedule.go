package watch

import (
	"context"
	"hash/fnv"
	"strconv"
	"time"
)

// The schedule. Target i of n has its k-th probe due at
//
//	start + i/n × interval + k × interval + jitter(name, k)
//
// so n targets sharing an interval take turns, evenly spaced, and a
// jitter below a tenth of that spacing (at most MaxJitter), drawn from
// the target's name and k, keeps probes off round seconds and away from
// each other without ever reordering them. The schedule is absolute: a
// late probe does not shift the ones after it.
//
// A target has at most one probe in flight. One still running when its
// next is due makes that probe (and any further due before it ends) be
// skipped and counted as missed: running probes of one vendor
// concurrently would load it and measure the monitor's own contention,
// and queueing them would fire a burst when the slow one ends.

// MaxJitter bounds the jitter added to a probe's due time.
const MaxJitter = time.Second

// schedule is one target's due times.
type schedule struct {
	start    time.Time
	phase    time.Duration
	interval time.Duration
	jitter   time.Duration // bound, exclusive
	seed     uint64
}

// newSchedule is the schedule of target i of n with the given interval.
func newSchedule(start time.Time, name string, i, n int, interval time.Duration) schedule {
	n = max(n, 1)
	h := fnv.New64a()
	h.Write([]byte(name))
	return schedule{
		start:    start,
		phase:    time.Duration(int64(interval) / int64(n) * int64(i)),
		interval: interval,
		jitter:   min(interval/time.Duration(10*n), MaxJitter),
		seed:     h.Sum64(),
	}
}

// due is when probe k is due.
func (s schedule) due(k int64) time.Time {
	return s.start.Add(s.phase + time.Duration(k)*s.interval + s.jitterOf(k))
}

// jitterOf is probe k's jitter, in [0, s.jitter).
func (s schedule) jitterOf(k int64) time.Duration {
	if s.jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(s.seed >> (8 * i))
	}
	h.Write(b[:])
	h.Write(strconv.AppendInt(nil, k, 10))
	return time.Duration(h.Sum64() % uint64(s.jitter))
}

// next is the first probe index after last due at or after t, and how many
// were skipped on the way (their due time passed while probe last ran).
func (s schedule) next(last int64, t time.Time) (k int64, missed int64) {
	k = last + 1
	// Jitter is below one interval, so stepping from an estimate is exact.
	if late := t.Sub(s.due(k)); late > 0 {
		k += int64(late / s.interval)
	}
	for s.due(k).Before(t) {
		k++
	}
	for k > last+1 && !s.due(k-1).Before(t) {
		k--
	}
	return k, k - last - 1
}

// Clock is the watcher's time: the wall clock read for schedules and
// windows, and waiting for the next probe. The default is the system
// clock (which testing/synctest fakes inside a bubble).
type Clock interface {
	Now() time.Time
	// SleepUntil waits until t or until ctx is done, returning ctx's error
	// then.
	SleepUntil(ctx context.Context, t time.Time) error
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
