package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/scrape"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
	"github.com/goodput/goodput/internal/workload"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/shareddata"
)

// streamServer is a loopback OpenAI-shaped server: after first it sends
// chunks tokens, one every gap (0: as fast as it can), then usage and
// [DONE]. The request's max_tokens is ignored; the shape is fixed.
type streamServer struct {
	first, gap time.Duration
	chunks     int
	url        string
	srv        *http.Server
}

var chunkLine = []byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")

func startServer(b testing.TB, first, gap time.Duration, chunks int) *streamServer {
	b.Helper()
	s := &streamServer{first: first, gap: gap, chunks: chunks}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String()
	usage := []byte(fmt.Sprintf(`data: {"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", chunks))
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fl.Flush()
		for i := range s.chunks {
			if s.first > 0 || s.gap > 0 {
				// Absolute schedule, so server-side jitter does not add up.
				due := start.Add(s.first + time.Duration(i)*s.gap)
				if d := time.Until(due); d > 0 {
					t := time.NewTimer(d)
					select {
					case <-t.C:
					case <-r.Context().Done():
						t.Stop()
						return
					}
				}
			}
			if _, err := w.Write(chunkLine); err != nil {
				return
			}
			fl.Flush()
		}
		_, _ = w.Write(usage)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	b.Cleanup(func() { _ = s.srv.Close() })
	return s
}

type runResult struct {
	recs    []runlog.Record
	res     loadgen.Result
	elapsed time.Duration
}

// drive runs n requests through loadgen and the real client.
func drive(b testing.TB, url string, n, conc int, sched loadgen.Schedule, keep bool, onRec func(*runlog.Record)) runResult {
	b.Helper()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	c, err := openai.NewClient(wire.Config{BaseURL: url, Endpoint: "/v1/completions", Model: "m", MaxConns: max(conc, n), Now: now, IdleTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var out runResult
	// The server ignores max_tokens, but the client abandons a stream
	// that runs far past it as a runaway, so it covers the longest shape
	// here (BenchmarkChunkThroughput's 2,000 chunks).
	req := &wire.Request{Prompt: "hello world", MaxTokens: 2000}
	body, _ := c.Body(req)
	t0 := time.Now()
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		Schedule: sched, MaxConcurrency: conc, NumPrompts: n, Now: now, Precise: true,
		OnRecord: func(r *runlog.Record) {
			if onRec != nil {
				onRec(r)
			}
			if keep {
				cp := *r
				cp.Chunks = slices.Clone(r.Chunks)
				mu.Lock()
				out.recs = append(out.recs, cp)
				mu.Unlock()
			}
		},
	}, loadgen.TargetFunc(func(i int) (loadgen.Call, error) {
		r := *req
		r.ID = "b-" + strconv.Itoa(i)
		return func(ctx context.Context, rec *runlog.Record) { c.Stream(ctx, &r, body, rec) }, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	out.elapsed = time.Since(t0)
	out.res = res
	return out
}

func failures(recs []runlog.Record) (int, string) {
	n, first := 0, ""
	for _, r := range recs {
		if !r.OK() {
			if n == 0 {
				first = string(r.ErrorClass) + ": " + r.Error
			}
			n++
		}
	}
	return n, first
}

// BenchmarkChunkThroughput: one process reading token chunks as fast as a
// loopback server can send them (goal ≥ 100,000 chunks/s).
func BenchmarkChunkThroughput(b *testing.B) {
	streams, chunks := 64, perfgoal.Size(2000, 50)
	srv := startServer(b, 0, 0, chunks)
	var total atomic.Int64
	var elapsed time.Duration
	for b.Loop() {
		out := drive(b, srv.url, streams, streams, nil, false, func(r *runlog.Record) {
			total.Add(int64(len(r.Chunks)))
			if !r.OK() {
				b.Errorf("request failed: %s %s", r.ErrorClass, r.Error)
			}
		})
		elapsed += out.elapsed
	}
	b.ReportMetric(float64(total.Load())/elapsed.Seconds(), "chunks/s")
	perfgoal.AtLeast(b, "chunks/s", float64(total.Load())/elapsed.Seconds(), 827_000)
}

// BenchmarkConcurrentStreams2000: 2,000 streams at once, 20 chunks 50 ms
// apart; every one must succeed.
func BenchmarkConcurrentStreams2000(b *testing.B) {
	n := perfgoal.Size(2000, 50)
	srv := startServer(b, 50*time.Millisecond, 50*time.Millisecond, 20)
	for b.Loop() {
		out := drive(b, srv.url, n, n, nil, true, nil)
		f, first := failures(out.recs)
		b.ReportMetric(float64(f), "failed")
		if f > 0 {
			b.Errorf("%d of %d streams failed, first: %s", f, n, first)
		}
	}
}

// BenchmarkTimingAccuracy: the server sends the first token 50 ms after the
// request, then one every 10 ms. Median TTFT and TPOT at C concurrent
// streams, minus their single-stream values, is the client's own error.
func BenchmarkTimingAccuracy(b *testing.B) {
	srv := startServer(b, 50*time.Millisecond, 10*time.Millisecond, 64)
	measure := func(conc int) (ttft, tpot float64) {
		out := drive(b, srv.url, conc*4, conc, nil, true, nil)
		if f, first := failures(out.recs); f > 0 {
			b.Fatalf("%d failed: %s", f, first)
		}
		s := stats.Summarize(out.recs, stats.Options{Percentiles: []float64{50}})
		tt, _ := s.Metric("ttft")
		tp, _ := s.Metric("tpot")
		return tt.Median, tp.Median
	}
	for b.Loop() {
		// Warm the connection pool and the runtime first.
		measure(1)
		t1, p1 := measure(1)
		for _, c := range perfgoal.Sizes([]int{256, 1024}, []int{8}) {
			tc, pc := measure(c)
			b.ReportMetric(tc-t1, fmt.Sprintf("ttft_err_ms@%d", c))
			b.ReportMetric(pc-p1, fmt.Sprintf("tpot_err_ms@%d", c))
		}
		b.ReportMetric(t1, "ttft_ms@1")
		b.ReportMetric(p1, "tpot_ms@1")
	}
}

// BenchmarkOpenLoop1000: 1,000 req/s Poisson against an instant server for
// 10 s: achieved rate vs the schedule's, and P99 send lag.
func BenchmarkOpenLoop1000(b *testing.B) {
	rate, n := 1000.0, perfgoal.Size(10000, 200)
	srv := startServer(b, 0, 0, 4)
	for b.Loop() {
		out := drive(b, srv.url, n, 0, workload.NewArrivals(rate, 1, 1), true, nil)
		if f, first := failures(out.recs); f > 0 {
			b.Fatalf("%d failed: %s", f, first)
		}
		lags := make([]float64, 0, len(out.recs))
		first, last := out.recs[0].Sent, out.recs[0].Sent
		ifirst, ilast := out.recs[0].Intended, out.recs[0].Intended
		for _, r := range out.recs {
			lags = append(lags, float64(r.Sent-r.Intended)/1e6)
			first, last = min(first, r.Sent), max(last, r.Sent)
			ifirst, ilast = min(ifirst, r.Intended), max(ilast, r.Intended)
		}
		slices.Sort(lags)
		// Achieved vs the schedule's own rate: a Poisson sample of 10,000
		// gaps has its own ±1 % noise around the nominal rate, which is
		// not the client's doing.
		achieved := float64(n-1) / (float64(last-first) / 1e9)
		scheduled := float64(n-1) / (float64(ilast-ifirst) / 1e9)
		b.ReportMetric(achieved, "req/s")
		b.ReportMetric(100*(achieved-scheduled)/scheduled, "rate_err_%")
		b.ReportMetric(stats.Percentile(lags, 99), "p99_send_lag_ms")
	}
}

// BenchmarkMemory100k: 100,000 finished requests through the accumulator;
// heap in use afterwards vs the bytes the summary's samples need.
func BenchmarkMemory100k(b *testing.B) {
	n, chunks := perfgoal.Size(100_000, 1000), 16
	srv := startServer(b, 0, 0, chunks)
	for b.Loop() {
		acc := stats.NewAccumulator(stats.Options{})
		var mu sync.Mutex
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		drive(b, srv.url, n, 256, nil, false, func(r *runlog.Record) {
			mu.Lock()
			acc.Add(r)
			mu.Unlock()
		})
		// Only the accumulator should remain: drop the loopback server's
		// connections and buffers (drive already closed the client's).
		_ = srv.srv.Close()
		runtime.GC()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// What the summary's samples need, exactly: per request five
		// latencies (TTFT, TTP, TPOT, E2E, response) as int64 for the run
		// and again for its bucket (80 B), send lag and input, output and
		// mismatch lengths (32 B), the send/end span (16 B), and 15 chunk
		// gaps as float32 (60 B; with one token per chunk the per-token
		// gaps are the same samples, stored once).
		need := float64(n) * (80 + 32 + 16 + 15*4)
		used := float64(after.HeapInuse) - float64(before.HeapInuse)
		b.ReportMetric(used/1e6, "heap_MB")
		b.ReportMetric(need/1e6, "samples_MB")
		b.ReportMetric(used/need, "ratio")
		_ = acc.Summary()
	}
}

// datasetSchedule replays a dataset's own arrival times (traces).
type datasetSchedule struct {
	ds workload.Dataset
	i  int
}

func (s *datasetSchedule) Next() time.Duration {
	r := s.ds.Shape(s.i)
	s.i++
	return r.Arrival
}

// BenchmarkAzureTraceReplay: the Azure conversation trace at 60× speed-up
// (one minute of replay, ~5.5 × 60 req/s) against an instant loopback
// server: send-time error vs the trace's schedule, and the prompt lengths.
func BenchmarkAzureTraceReplay(b *testing.B) {
	path := shareddata.Path(b, "azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv")
	ds, err := workload.FromOptions(workload.Options{DatasetName: "trace", DatasetPath: path, TraceSpeedup: 60, TraceWindow: "0:3600", Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	window := time.Minute
	if perfgoal.Smoke() {
		window = time.Second
	}
	for n < ds.Len() && ds.Shape(n).Arrival < window {
		n++
	}
	srv := startServer(b, 0, 0, 4)
	for b.Loop() {
		out := drive(b, srv.url, n, 0, &datasetSchedule{ds: ds}, true, nil)
		lags := make([]float64, 0, len(out.recs))
		for _, r := range out.recs {
			lags = append(lags, float64(r.Sent-r.Intended)/1e6)
		}
		slices.Sort(lags)
		b.ReportMetric(float64(n), "requests")
		b.ReportMetric(stats.Percentile(lags, 50), "p50_send_lag_ms")
		b.ReportMetric(stats.Percentile(lags, 99), "p99_send_lag_ms")
	}
}

// BenchmarkTimingAccuracyScraped is BenchmarkTimingAccuracy's 256 streams
// while the server-metrics scraper polls, every 100 ms, an endpoint that
// hangs for 5 s, one that answers garbage and a 200 KB metrics body: the
// TTFT and TPOT error with and without it, which must agree within noise
// (the scraper shares no lock, queue or connection with the streams).
func BenchmarkTimingAccuracyScraped(b *testing.B) {
	srv := startServer(b, 50*time.Millisecond, 10*time.Millisecond, 64)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	b.Cleanup(hang.Close)
	big := strings.Repeat("vllm:num_requests_running{model_name=\"m\"} 3\n", 4500)
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/junk" {
			fmt.Fprint(w, "{ not metrics")
			return
		}
		fmt.Fprint(w, big)
	}))
	b.Cleanup(metrics.Close)
	measure := func(conc int) (ttft, tpot float64) {
		out := drive(b, srv.url, conc*4, conc, nil, true, nil)
		if f, first := failures(out.recs); f > 0 {
			b.Fatalf("%d failed: %s", f, first)
		}
		s := stats.Summarize(out.recs, stats.Options{Percentiles: []float64{50}})
		tt, _ := s.Metric("ttft")
		tp, _ := s.Metric("tpot")
		return tt.Median, tp.Median
	}
	for b.Loop() {
		measure(1)
		t1, p1 := measure(1)
		conc := perfgoal.Size(256, 8)
		tc, pc := measure(conc)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = scrape.Run(ctx, scrape.Config{Interval: 100 * time.Millisecond, Targets: []scrape.Target{
				{Name: "hung", URL: hang.URL + "/metrics"}, {Name: "junk", URL: metrics.URL + "/junk"}, {Name: "big", URL: metrics.URL + "/metrics"}}},
				func(s scrape.Sample) {
					if s.Err == nil {
						_, _ = servermetrics.Parse(bytes.NewReader(s.Body), s.At) // the parse runs as a run's would
					}
				})
		}()
		ts, ps := measure(conc)
		cancel()
		<-done
		b.ReportMetric(tc-t1, "ttft_err_ms@256")
		b.ReportMetric(pc-p1, "tpot_err_ms@256")
		b.ReportMetric(ts-t1, "ttft_err_ms@256_scraped")
		b.ReportMetric(ps-p1, "tpot_err_ms@256_scraped")
	}
}
