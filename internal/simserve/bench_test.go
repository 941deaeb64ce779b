package simserve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// BenchmarkConcurrentStreams holds 250, 1,000 and 2,000 streaming requests at once on
// loopback (every one running in the engine: max_num_seqs 2048) and
// measures how late each token chunk leaves the server relative to the end
// of the iteration that produced it (the engine's schedule). It reports the
// P50, P99 and maximum lateness in ms, the P1 and P99 error of each
// stream's inter-token gaps (departure gap minus scheduled gap, in ms), the
// number of chunks and the chunk rate. The goal is P99 ≤ 1 ms. Client and server share the machine's
// cores, so this is the server under a worst-case local load.
func BenchmarkConcurrentStreams(b *testing.B) {
	for _, streams := range perfgoal.Sizes([]int{250, 1000, 2000}, []int{10}) {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) { benchStreams(b, streams, 1) })
	}
}

// BenchmarkFleetStreams is BenchmarkConcurrentStreams against a
// round-robin fleet of 4 replicas behind one port (NewFleet): the same
// lateness figures, the engine goroutine now stepping a cluster.
func BenchmarkFleetStreams(b *testing.B) {
	for _, streams := range perfgoal.Sizes([]int{250, 1000}, []int{10}) {
		b.Run(fmt.Sprintf("replicas=4/streams=%d", streams), func(b *testing.B) { benchStreams(b, streams, 4) })
	}
}

func benchStreams(b *testing.B, streams, replicas int) {
	const output = 64
	cfg := sim.DefaultConfig()
	cfg.MaxNumSeqs = 2048
	cfg.MaxNumBatchedTokens = 65536 // admit every prompt in one step
	for b.Loop() {
		var (
			s   *Server
			err error
		)
		if replicas == 1 {
			s, err = New(cfg, Options{})
		} else {
			fc := cluster.Config{Replicas: make([]sim.Config, replicas)}
			for i := range fc.Replicas {
				fc.Replicas[i] = cfg
			}
			s, err = NewFleet(fc, Options{})
		}
		if err != nil {
			b.Fatal(err)
		}
		lags := make([]int64, streams*output+streams)
		var n atomic.Int64
		// Per stream, the previous chunk's schedule and departure: the
		// error in each inter-token gap is what TPOT and ITL see.
		var mu sync.Mutex
		prev := map[uint64][2]int64{}
		var gapErrs []int64
		s.onDepart = func(seq uint64, sched, dep int64) {
			if i := n.Add(1) - 1; int(i) < len(lags) {
				lags[i] = dep - sched
			}
			mu.Lock()
			if p, ok := prev[seq]; ok {
				gapErrs = append(gapErrs, (dep-p[1])-(sched-p[0]))
			}
			prev[seq] = [2]int64{sched, dep}
			mu.Unlock()
		}
		url, stop, err := s.Start(context.Background(), "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true,"stream":true}`,
			strings.TrimSpace(strings.Repeat("word ", 32)), output)
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range streams {
			wg.Go(func() {
				resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					failed.Add(1)
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReaderSize(resp.Body, 4096)
				chunks := 0
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						failed.Add(1)
						return
					}
					if bytes.HasPrefix(line, []byte("data: [DONE]")) {
						break
					}
					if bytes.HasPrefix(line, []byte("data: ")) {
						chunks++
					}
				}
				if chunks == 0 {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		if err := stop(); err != nil {
			b.Fatal(err)
		}
		client.CloseIdleConnections()
		if f := failed.Load(); f > 0 {
			b.Fatalf("%d of %d streams failed", f, streams)
		}
		got := lags[:min(int(n.Load()), len(lags))]
		slices.Sort(got)
		pct := func(p float64) float64 { return float64(got[int(p*float64(len(got)-1))]) / 1e6 }
		b.ReportMetric(pct(0.50), "p50-lag-ms")
		b.ReportMetric(pct(0.99), "p99-lag-ms")
		b.ReportMetric(float64(got[len(got)-1])/1e6, "max-lag-ms")
		// Gap errors are signed (a late chunk then an on-time one is a
		// short gap): the P1–P99 spread is what an ITL percentile can be
		// off by.
		slices.Sort(gapErrs)
		gq := func(p float64) float64 { return float64(gapErrs[int(p*float64(len(gapErrs)-1))]) / 1e6 }
		b.ReportMetric(gq(0.01), "p1-gap-err-ms")
		b.ReportMetric(gq(0.99), "p99-gap-err-ms")
		b.ReportMetric(float64(len(got)), "chunks")
		b.ReportMetric(float64(len(got))/elapsed.Seconds(), "chunks/s")
		b.ReportMetric(float64(s.lastEnd)/1e6/float64(output), "ms/iteration")
	}
}
