package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// RetryPolicy is how the client retries a failed request, as real clients
// do (the OpenAI and Anthropic SDKs retry twice by default): up to Max more
// attempts after a rate limit (429), a server error (5xx), a timeout or a
// reset connection, each after an exponential backoff — Base·2^(k−1) for
// the k-th retry, at most Cap, jittered — and never sooner than the
// answer's Retry-After, believed up to MaxRetryAfter. Under overload, retries feed the queue that caused
// them (a retry storm); backoff with jitter spreads them out.
type RetryPolicy struct {
	// Max is the most retries of one request (0: none).
	Max int
	// Base and Cap bound the backoff; Base 0 retries at once (unless the
	// answer said when).
	Base, Cap time.Duration
	// Jitter spreads each wait: JitterNone waits exactly the backoff,
	// JitterFull a uniform draw in [0, backoff], JitterEqual half of it
	// plus a uniform draw in [0, half].
	Jitter Jitter
	// IgnoreRetryAfter waits the backoff alone, however long the answer's
	// Retry-After: an aggressive client, as some are, that makes a retry
	// storm worse.
	IgnoreRetryAfter bool
}

// Jitter is how a backoff is spread.
type Jitter uint8

// The jitters of a backoff (AWS's names for them).
const (
	JitterNone Jitter = iota
	JitterFull
	JitterEqual
)

// ParseBackoff reads a backoff: "exponential:BASE,CAP[,JITTER]" (JITTER
// none, full or equal; default full) or "constant:WAIT". Durations are Go's
// ("100ms", "2s"); a bare number is milliseconds. The error says what is
// wrong, not the text: the caller names the setting and its value.
func ParseBackoff(s string) (RetryPolicy, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	parts := strings.Split(rest, ",")
	bad := func(why string) (RetryPolicy, error) {
		return RetryPolicy{}, fmt.Errorf("%s (want exponential:BASE,CAP[,none|full|equal] or constant:WAIT)", why)
	}
	if !ok {
		return bad("no kind")
	}
	var p RetryPolicy
	switch strings.ToLower(kind) {
	case "constant":
		if len(parts) != 1 {
			return bad("constant takes one wait")
		}
		d, err := backoffDuration(parts[0])
		if err != nil {
			return bad(err.Error())
		}
		p.Base, p.Cap = d, d
		return p, nil
	case "exponential":
		if len(parts) < 2 || len(parts) > 3 {
			return bad("exponential takes a base, a cap and optionally a jitter")
		}
		var err error
		if p.Base, err = backoffDuration(parts[0]); err != nil {
			return bad(err.Error())
		}
		if p.Cap, err = backoffDuration(parts[1]); err != nil {
			return bad(err.Error())
		}
		if p.Cap < p.Base {
			return bad("the cap is below the base")
		}
		p.Jitter = JitterFull
		if len(parts) == 3 {
			switch strings.ToLower(strings.TrimSpace(parts[2])) {
			case "none":
				p.Jitter = JitterNone
			case "full":
			case "equal":
				p.Jitter = JitterEqual
			default:
				return bad("unknown jitter " + strconv.Quote(parts[2]))
			}
		}
		return p, nil
	}
	return bad("unknown kind " + strconv.Quote(kind))
}

// maxBackoff bounds a backoff: longer waits are not a client's retries.
const maxBackoff = time.Hour

func backoffDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		if !(ms >= 0 && ms <= float64(maxBackoff/time.Millisecond)) {
			return 0, errors.New("a wait from 0 to 1h")
		}
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxBackoff {
		return 0, fmt.Errorf("%q is not a wait from 0 to 1h", s)
	}
	return d, nil
}

// MaxRetryAfter is the longest advertised wait (Retry-After, a rate
// limit's reset) a retry waits for: the OpenAI and Anthropic SDKs believe
// one only up to a minute, and a benchmark told to come back tomorrow
// would otherwise not end.
const MaxRetryAfter = time.Minute

// RetryBounds bounds one level's retries by the run's own end and counts
// what the bounds cut, for the caller to say so. It is safe for concurrent
// use.
type RetryBounds struct {
	// Until, when not 0, is the instant (ns on the run's clock) after which
	// no retry is sent: a retry is a new request, and the level's duration
	// ends those.
	Until atomic.Int64
	// Capped counts waits cut to MaxRetryAfter; Longest is the longest wait
	// an answer asked for (ns).
	Capped, Longest atomic.Int64
	// Dropped counts retries not sent because they were due after Until.
	Dropped atomic.Int64
}

// storeMax raises v to x when x is larger.
func storeMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// Retryable reports whether a failed attempt is worth sending again.
func Retryable(rec *runlog.Record) bool {
	switch rec.ErrorClass {
	case runlog.ErrHTTP429, runlog.ErrHTTP5xx, runlog.ErrTimeout, runlog.ErrIdleTimeout, runlog.ErrConnectReset:
		return true
	}
	return false
}

// Wait is the wait before retry k (from 1) of the attempt rec, drawn with
// rng: the jittered backoff, or the answer's Retry-After (at most
// MaxRetryAfter) when that is longer (unless IgnoreRetryAfter). The
// virtual-time driver draws its waits with it too.
func (p *RetryPolicy) Wait(k int, rec *runlog.Record, rng *rand.Rand) time.Duration {
	b := p.Base
	for i := 1; i < k && b < p.Cap; i++ {
		b *= 2
	}
	b = min(b, p.Cap)
	switch p.Jitter {
	case JitterFull:
		b = time.Duration(rng.Int64N(int64(b) + 1))
	case JitterEqual:
		b = b/2 + time.Duration(rng.Int64N(int64(b/2)+1))
	}
	if p.IgnoreRetryAfter {
		return b
	}
	return max(b, min(time.Duration(rec.RetryAfterNs), MaxRetryAfter))
}

// WithRetries wraps call so that a failed attempt is sent again as the
// policy says. Each attempt that is retried goes to emit as a record of its
// own (Retried set); the retries' records carry Attempt, RetryOf (the
// first attempt's id) and an id of their own, and the call's record ends
// as the last attempt. A retry's Intended is when it was due, after its
// backoff, so send lag still measures the client alone. The request's
// concurrency slot is held while it backs off, as a client's is. now is
// the run's clock; seed makes the jitter repeatable. bounds, when not
// nil, stops retries due after its Until (the failed attempt is then the
// request's record) and counts the waits cut.
func (p *RetryPolicy) WithRetries(call Call, emit func(*runlog.Record), now func() int64, seed uint64, bounds *RetryBounds) Call {
	return func(ctx context.Context, rec *runlog.Record) {
		call(ctx, rec)
		orig := rec.ID
		var rng *rand.Rand
		for k := 1; k <= p.Max && !rec.OK() && Retryable(rec) && ctx.Err() == nil; k++ {
			if rng == nil {
				rng = rand.New(rand.NewPCG(seed, HashID(orig)))
			}
			d := p.Wait(k, rec, rng)
			if bounds != nil {
				if asked := rec.RetryAfterNs; asked > int64(MaxRetryAfter) && !p.IgnoreRetryAfter {
					bounds.Capped.Add(1)
					storeMax(&bounds.Longest, asked)
				}
				if until := bounds.Until.Load(); until != 0 && now()+int64(d) > until {
					bounds.Dropped.Add(1)
					return
				}
			}
			failed := new(runlog.Record)
			rec.CopyTo(failed)
			failed.Retried = true
			emit(failed)
			due := now() + int64(d)
			level, warm := rec.Level, rec.Warmup
			*rec = runlog.Record{Chunks: rec.Chunks[:0], Level: level, Warmup: warm, Intended: due}
			if !SleepUntil(ctx, now, due) {
				rec.ID, rec.Attempt, rec.RetryOf = orig+"-a"+strconv.Itoa(k+1), k+1, orig
				rec.Sent, rec.End = now(), now()
				rec.ErrorClass, rec.Error = runlog.ErrCancelled, "cancelled while backing off before a retry"
				return
			}
			call(ctx, rec)
			rec.ID, rec.Attempt, rec.RetryOf = orig+"-a"+strconv.Itoa(k+1), k+1, orig
		}
	}
}

// SleepUntil waits until the clock now (ns) reads at; false when ctx
// ended first.
func SleepUntil(ctx context.Context, now func() int64, at int64) bool {
	d := time.Duration(at - now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// HashID is a request id's FNV-1a hash, a stream for its jitter.
func HashID(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}
