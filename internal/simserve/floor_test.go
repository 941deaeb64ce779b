package simserve

import (
	"fmt"
	"github.com/goodput/goodput/internal/perfgoal"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkWriteFloor measures the least any server can do on this machine
// for BenchmarkConcurrentStreams' shape: N loopback TCP connections, each
// to receive one 180-byte chunk at the same instant (the end of a decode
// iteration), written by one goroutine per core straight to the sockets —
// no HTTP, no per-stream goroutine, no formatting — while the client
// goroutines read them. It reports how late the P50 and P99 write returns
// are after the instant. A server that sends each stream's token on its own
// TCP connection cannot beat these figures, so they bound what
// BenchmarkConcurrentStreams can show here.
func BenchmarkWriteFloor(b *testing.B) {
	for _, conns := range perfgoal.Sizes([]int{250, 1000, 2000}, []int{10}) {
		b.Run(fmt.Sprintf("streams=%d", conns), func(b *testing.B) { benchWriteFloor(b, conns) })
	}
}

func benchWriteFloor(b *testing.B, conns int) {
	const rounds = 32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	servers := make([]net.Conn, conns)
	var readers sync.WaitGroup
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		if servers[i], err = ln.Accept(); err != nil {
			b.Fatal(err)
		}
		readers.Go(func() {
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		})
	}
	chunk := []byte("data: " + `{"id":"cmpl-r1","object":"text_completion","created":1764400000,"model":"llama-3.1-8b","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}]}` + "\n\n")
	workers := runtime.GOMAXPROCS(0)
	lags := make([]int64, 0, conns*rounds)
	var mu sync.Mutex
	for b.Loop() {
		lags = lags[:0]
		for range rounds {
			due := time.Now().Add(20 * time.Millisecond)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					mine := make([]int64, 0, conns/workers+1)
					time.Sleep(time.Until(due) - 2*time.Millisecond)
					for time.Now().Before(due) {
						// Spin the last stretch: Go's timers may wake a
						// millisecond late, which is not the sockets' cost.
					}
					for i := w; i < conns; i += workers {
						if _, err := servers[i].Write(chunk); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, int64(time.Since(due)))
					}
					mu.Lock()
					lags = append(lags, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
	}
	for _, c := range servers {
		c.Close()
	}
	readers.Wait()
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / 1e6 }
	b.ReportMetric(q(0.50), "p50-lag-ms")
	b.ReportMetric(q(0.99), "p99-lag-ms")
}
