package watch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/workload"
)

// answer is how the fake backend answers probe k.
type answer struct {
	ttft   time.Duration // send to the first token
	gap    time.Duration // between tokens
	tokens int
	class  runlog.ErrorClass // fail with this class at once
	// retryAfter is a 429's advertised wait (0: 7 s).
	retryAfter time.Duration
	hang       bool // never answer (until the context ends)
}

// fakeBackend is a Backend answering on the clock (the fake one
// inside a synctest bubble), as a server would: it records when each
// probe was sent and how many were in flight at once.
type fakeBackend struct {
	now    func() int64
	answer func(k int) answer
	// resolveFails is how many Resolve calls fail before one works.
	resolveFails int

	mu          sync.Mutex
	resolves    int
	sent        []time.Time
	reqs        []workload.Request
	inflight    int
	maxInflight int
	closed      bool
}

var _ Backend = (*fakeBackend)(nil)

func (f *fakeBackend) Resolve(ctx context.Context, _ time.Duration) (string, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolves++
	if f.resolves <= f.resolveFails {
		return "", nil, errors.New("GET /v1/models: connection refused")
	}
	return "fake-model", nil, nil
}

func (f *fakeBackend) Prepare(id string, r workload.Request) (func(context.Context, *runlog.Record), error) {
	f.mu.Lock()
	k := len(f.reqs)
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	a := answer{ttft: 100 * time.Millisecond, gap: 20 * time.Millisecond, tokens: 8}
	if f.answer != nil {
		a = f.answer(k)
	}
	return func(ctx context.Context, rec *runlog.Record) {
		f.mu.Lock()
		f.sent = append(f.sent, time.Now())
		f.inflight++
		f.maxInflight = max(f.maxInflight, f.inflight)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
		}()
		rec.ID, rec.MaxTokens, rec.PromptTokens = id, r.OutputTokens, r.PromptTokens
		rec.Sent = f.now()
		wait := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return true
			case <-ctx.Done():
				rec.End, rec.ErrorClass, rec.Error = f.now(), runlog.ErrCancelled, "cancelled"
				return false
			}
		}
		switch {
		case a.hang:
			wait(1000 * time.Hour)
			return
		case a.class != runlog.ErrNone:
			rec.End, rec.ErrorClass, rec.Error = f.now(), a.class, "fake "+string(a.class)
			rec.Status = 500
			if a.class == runlog.ErrHTTP429 {
				rec.Status, rec.RetryAfterNs = 429, int64(7*time.Second)
				if a.retryAfter > 0 {
					rec.RetryAfterNs = int64(a.retryAfter)
				}
			}
			return
		}
		rec.Status = 200
		if !wait(a.ttft) {
			return
		}
		for i := range a.tokens {
			if i > 0 && !wait(a.gap) {
				return
			}
			rec.Chunks = append(rec.Chunks, runlog.Chunk{T: f.now(), Tokens: 1, Visible: true})
		}
		rec.CompletionTokens, rec.End, rec.TokenSource = a.tokens, f.now(), runlog.TokensCounted
	}, nil
}

func (f *fakeBackend) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// fakes opens a fakeBackend per target, answering as answers says
// (nil: the default answer), and keeps them by target name.
type fakes struct {
	answers      map[string]func(k int) answer
	resolveFails int

	mu sync.Mutex
	by map[string]*fakeBackend
}

func (fs *fakes) open(t Target, now func() int64) (Backend, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.by == nil {
		fs.by = map[string]*fakeBackend{}
	}
	b := &fakeBackend{now: now, answer: fs.answers[t.Name], resolveFails: fs.resolveFails}
	fs.by[t.Name] = b
	return b, nil
}

func (fs *fakes) get(name string) *fakeBackend {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.by[name]
}

// testTargets are n targets a, b, c, … probed every interval.
func testTargets(n int, interval time.Duration) *Config {
	cfg := &Config{File: "test.yaml"}
	for i := range n {
		cfg.Targets = append(cfg.Targets, Target{
			Name: string(rune('a' + i)), BaseURL: "http://127.0.0.1:1", Backend: "openai-chat", Model: "m",
			Objective: 0.99, Interval: interval, Timeout: interval,
			Probe: Probe{PromptTokens: 16, MaxTokens: 8}, index: i, lines: map[string]int{},
		})
	}
	return cfg
}
