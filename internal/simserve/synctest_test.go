package simserve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/tokenize"
)

// flushWriter is an in-memory http.ResponseWriter that notes the server
// clock at every Flush together with the bytes written since the last one:
// what a client on an ideal network would receive, and when.
type flushWriter struct {
	header  http.Header
	status  int
	buf     bytes.Buffer
	mark    int
	now     func() int64
	flushes []flushed
}

type flushed struct {
	t    int64
	data string
}

func (w *flushWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *flushWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *flushWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.buf.Write(p)
}

func (w *flushWriter) Flush() {
	w.flushes = append(w.flushes, flushed{t: w.now(), data: w.buf.String()[w.mark:]})
	w.mark = w.buf.Len()
}

// TestDeparturesOnSchedule checks, in a synctest bubble (fake clock), that
// every token chunk leaves the server at exactly the iteration end the
// engine computed for it: the same requests replayed through a fresh
// engine in virtual time give the expected departure times.
func TestDeparturesOnSchedule(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNumBatchedTokens = 512 // long prompts are chunked over iterations
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	reqs := []struct {
		prompt    string
		maxTokens int
	}{
		{words(40), 6},
		{words(1500), 4}, // 3 prefill chunks at a 512-token budget
		{words(300), 9},
		{"the " + words(40), 3},
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var departures [][2]int64
		var mu sync.Mutex
		s.onDepart = func(_ uint64, sched, dep int64) {
			mu.Lock()
			departures = append(departures, [2]int64{sched, dep})
			mu.Unlock()
		}
		ws := make([]*flushWriter, len(reqs))
		var wg sync.WaitGroup
		for i, rq := range reqs {
			ws[i] = &flushWriter{now: s.clock}
			body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true,"stream":true}`, rq.prompt, rq.maxTokens)
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
			wg.Go(func() { s.Handler().ServeHTTP(ws[i], r) })
			// Each handler queues its request before the next starts, so
			// the engine sees them in order r1, r2, ...
			synctest.Wait()
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		wg.Wait()
		cancel()
		<-done

		want := replay(t, cfg, reqs)
		for i, w := range ws {
			if w.status != 200 {
				t.Fatalf("request %d: status %d", i, w.status)
			}
			var got []int64
			for _, f := range w.flushes {
				if strings.Contains(f.data, `"text":" `) {
					got = append(got, f.t)
				}
			}
			id := "r" + strconv.Itoa(i+1)
			if diff := cmp.Diff(want[id], got); diff != "" {
				t.Errorf("request %d: token departure times (-engine schedule +server):\n%s", i, diff)
			}
		}
		if len(departures) == 0 {
			t.Fatal("onDepart never called")
		}
		for _, d := range departures {
			if d[0] != d[1] {
				t.Errorf("a chunk scheduled at %d ns left at %d ns; want equal in a fake clock", d[0], d[1])
			}
		}
	})
}

// replay runs the requests through a fresh engine the way Run does with
// all arrivals at time 0, returning each request's token times.
func replay(t *testing.T, cfg sim.Config, reqs []struct {
	prompt    string
	maxTokens int
}) map[string][]int64 {
	t.Helper()
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, rq := range reqs {
		info := analyzePrompt([]string{rq.prompt}, nil, 0, cfg.BlockSize, false)
		if err := eng.Add(0, sim.Request{ID: "r" + strconv.Itoa(i+1), PromptTokens: info.tokens,
			OutputTokens: rq.maxTokens, BlockHashes: info.hashes, HashBlockTokens: cfg.BlockSize}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]int64{}
	now := int64(0)
	for eng.Busy() {
		end, evs := eng.Step(now)
		for _, ev := range evs {
			if ev.Kind == sim.EventTokens {
				want[ev.ID] = append(want[ev.ID], end)
			}
		}
		if end == now && len(evs) == 0 {
			t.Fatal("engine stalled in replay")
		}
		now = end
	}
	return want
}

// stallWriter is a flushWriter whose second Flush (the first token chunk
// after the headers) blocks until release is closed: a client that stopped
// reading, with its socket buffer full.
type stallWriter struct {
	flushWriter
	release chan struct{}
	n       int
}

func (w *stallWriter) Flush() {
	w.flushWriter.Flush()
	if w.n++; w.n == 2 {
		<-w.release
	}
}

// TestStalledClient checks that a client that does not read neither slows
// the engine nor other clients, and costs constant memory: its tokens are
// merged in its mailbox and go out as one chunk when it reads again.
func TestStalledClient(t *testing.T) {
	cfg := testConfig()
	reqs := []struct {
		prompt    string
		maxTokens int
	}{
		{"one two three", 40}, // r1: stalls after its first token
		{"four five six", 20}, // r2: reads normally
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		stalled := &stallWriter{flushWriter: flushWriter{now: s.clock}, release: make(chan struct{})}
		normal := &flushWriter{now: s.clock}
		writers := []http.ResponseWriter{stalled, normal}
		var wg sync.WaitGroup
		for i, rq := range reqs {
			body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true,"stream":true}`, rq.prompt, rq.maxTokens)
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
			wg.Go(func() { s.Handler().ServeHTTP(writers[i], r) })
			synctest.Wait()
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()

		// Let the whole schedule play out: the engine finishes both
		// requests while r1's handler is stuck in its first write.
		want := replay(t, cfg, reqs)
		last := want["r1"][len(want["r1"])-1]
		time.Sleep(time.Duration(last) + time.Millisecond) // fake clock
		synctest.Wait()

		var got []int64
		for _, f := range normal.flushes {
			if strings.Contains(f.data, `"text":" `) {
				got = append(got, f.t)
			}
		}
		if diff := cmp.Diff(want["r2"], got); diff != "" {
			t.Errorf("the reading client's departures (-schedule +got):\n%s", diff)
		}
		// r1 has finished in the engine; its 39 undelivered tokens wait in
		// its mailbox merged into one piece (constant memory), which is
		// what the client gets once it reads again.
		close(stalled.release)
		wg.Wait()
		cancel()
		<-done

		cs := parseFlushes(t, stalled.flushes)
		s1 := summarize(cs)
		if s1.Pieces != 2 || s1.Finish != "length" {
			t.Errorf("stalled client got %d token chunks, finish %q; want 2 (the first token, then the other 39 at once) and length", s1.Pieces, s1.Finish)
		}
		var tok tokenize.Approx
		if n := tok.Count(s1.Content); n != 40 {
			t.Errorf("stalled client got %d tokens; want 40", n)
		}
	})
}

// parseFlushes decodes the chunks a flushWriter received.
func parseFlushes(t *testing.T, fs []flushed) []streamChunk {
	t.Helper()
	var all strings.Builder
	for _, f := range fs {
		all.WriteString(f.data)
	}
	return readStream(t, strings.NewReader(all.String()))
}
