package simserve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim/cluster"
)

// serveBodies posts each body to /v1/completions at once, in order (each
// queued before the next is sent), in a synctest bubble, and returns the
// writers.
func serveBodies(t *testing.T, s *Server, bodies []string) []*flushWriter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	ws := make([]*flushWriter, len(bodies))
	var wg sync.WaitGroup
	for i, body := range bodies {
		ws[i] = &flushWriter{now: s.clock}
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
		wg.Go(func() { s.Handler().ServeHTTP(ws[i], r) })
		synctest.Wait()
	}
	wg.Wait()
	cancel()
	<-done
	return ws
}

// TestFleetGatewayRateLimit: a request bucket of rate 0.4/s and burst 2,
// per class, in front of 2 replicas. Four requests at 0: r1 and r2
// (class 0) empty class 0's bucket; r3 (class 0) is short one request,
// refilled in (1 − 0)/0.4 = 2.5 s, so it is answered 429 with Retry-After
// 3 (seconds, rounded up); r4 names "priority":1 in its body, a class of
// its own bucket, and is served.
func TestFleetGatewayRateLimit(t *testing.T) {
	cfg := fleetConfig(2, cluster.PolicyRoundRobin)
	cfg.Gateway = &cluster.GatewayConfig{Requests: &cluster.Bucket{Rate: 0.4, Burst: 2}, PerClass: true}
	body := `{"prompt":"one two three","max_tokens":4,"ignore_eos":true`
	bodies := []string{body + `}`, body + `,"stream":true}`, body + `,"stream":true}`, body + `,"priority":1}`}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		ws := serveBodies(t, s, bodies)
		var status, retry, replica []string
		for _, w := range ws {
			status = append(status, http.StatusText(w.status))
			retry = append(retry, w.Header().Get("Retry-After"))
			replica = append(replica, w.Header().Get(ReplicaHeader))
		}
		want := []string{"OK", "OK", "Too Many Requests", "OK"}
		if diff := cmp.Diff(want, status); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"", "", "3", ""}, retry); diff != "" {
			t.Errorf("Retry-After (-want +got):\n%s", diff)
		}
		// Round-robin over the admitted: r1 1, r2 2, r4 1; r3 none.
		if diff := cmp.Diff([]string{"1", "2", "", "1"}, replica); diff != "" {
			t.Errorf("%s (-want +got):\n%s", ReplicaHeader, diff)
		}
		if !strings.Contains(ws[2].buf.String(), "class 0 over the gateway's limit; retry in 2.500 s") {
			t.Errorf("r3's answer %q; want the gateway's reason", ws[2].buf.String())
		}
		// No replica counted r3: both are idle again.
		for i, n := range s.fl.outstanding {
			if n != 0 {
				t.Errorf("replica %d: %d outstanding after the run; want 0", i, n)
			}
		}
	})
}

// TestFleetGatewayDegrade: max_tokens:2 above 0 waiting, one replica of
// max_num_seqs 1. r1 starts at once on the idle replica; r2 finds no
// request waiting (r1 runs), so it keeps its 6 tokens and waits; r3 finds
// r2 waiting (1 > 0) and is capped at 2 tokens: its answer has 2.
func TestFleetGatewayDegrade(t *testing.T) {
	cfg := fleetConfig(1, "")
	cfg.Replicas[0].MaxNumSeqs = 1
	cfg.Gateway = &cluster.GatewayConfig{Degrade: &cluster.Degrade{Action: cluster.DegradeMaxTokens, Value: 2}}
	body := `{"prompt":"one two three","max_tokens":6,"ignore_eos":true}`
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		ws := serveBodies(t, s, []string{body, body, body})
		for i, want := range []int{6, 6, 2} {
			got := ws[i].buf.String()
			if ws[i].status != 200 || !strings.Contains(got, `"completion_tokens":`+string(rune('0'+want))+`,`) {
				t.Errorf("r%d: status %d, %q; want 200 with %d completion tokens", i+1, ws[i].status, got, want)
			}
		}
	})
}
