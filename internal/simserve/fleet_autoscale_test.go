package simserve

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goodput/goodput/internal/sim/cluster"
)

// TestFleetAutoscaleOnTime: one replica of max_num_seqs 1 under a queue
// autoscaler (threshold 0.5 waiting per active replica, down below its
// half 0.25, max 2, a tick every second, a 3 s cooldown, no provisioning
// delay). Three 100-token requests at 0 (about 0.7 s each, one at a
// time): at the tick at 1 s r1 is done, r2 runs and r3 waits, so the
// signal reads 1 > 0.5 and a second replica is added, active at once. A
// fourth request at 1.5 s goes, least-outstanding, to the new replica 1
// (replica 0 holds 2). Everything ends by about 2.2 s; the cooldown lets
// the next decision come at 4 s, when the fleet is idle: the signal reads
// 0 < 0.25 and replica 1, idle, goes at once — only because the idle loop
// wakes at the tick (nothing else steps an idle fleet). The log has one
// Info line per change.
func TestFleetAutoscaleOnTime(t *testing.T) {
	cfg := fleetConfig(1, cluster.PolicyLeastOutstanding)
	cfg.Replicas[0].MaxNumSeqs = 1
	cfg.Autoscale = &cluster.Autoscale{Signal: cluster.SignalQueue, Threshold: 0.5, Max: 2, Interval: time.Second, Window: 2 * time.Second, Cooldown: 3 * time.Second}
	synctest.Test(t, func(t *testing.T) {
		var logBuf bytes.Buffer
		s, err := NewFleet(cfg, Options{ServedModelName: "m", Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.ms); got != 2 {
			t.Fatalf("%d engines' metrics; want the autoscaler's max, 2", got)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		var wg sync.WaitGroup
		ws := make([]*flushWriter, 4)
		for i := range ws {
			if i == 3 {
				time.Sleep(1500 * time.Millisecond)
			}
			ws[i] = &flushWriter{now: s.clock}
			body := fmt.Sprintf(`{"prompt":"request %d","max_tokens":100,"ignore_eos":true}`, i)
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
			wg.Go(func() { s.Handler().ServeHTTP(ws[i], r) })
			synctest.Wait()
		}
		wg.Wait()
		time.Sleep(3 * time.Second) // past the tick at 4 s, idle
		synctest.Wait()
		cancel()
		<-done
		var got []string
		for _, w := range ws {
			if w.status != 200 {
				t.Fatalf("status %d: %s", w.status, w.buf.String())
			}
			got = append(got, w.Header().Get(ReplicaHeader))
		}
		if strings.Join(got, ",") != "1,1,1,2" {
			t.Errorf("replicas %v; want 1,1,1,2 (the fourth on the replica added at 1 s)", got)
		}
		logs := logBuf.String()
		for _, want := range []string{
			`msg="simserve: replicas" at=0s active=1 provisioning=0 draining=0`,
			`msg="simserve: replicas" at=1s active=2 provisioning=0 draining=0 signal=1 target_from=1 target_to=2`,
			`msg="simserve: replicas" at=4s active=1 provisioning=0 draining=0 signal=0 target_from=2 target_to=1`,
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %s:\n%s", want, logs)
			}
		}
	})
}
