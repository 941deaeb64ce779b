package simserve

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// replaySplit drives a fresh prefill/decode split in virtual time, as
// replayFleet drives a cluster, returning each request's token times and
// the replica of each of its token events.
func replaySplit(t *testing.T, cfg cluster.Config, reqs []fleetReq) (map[string][]int64, map[string][]int) {
	t.Helper()
	d, err := cluster.NewDisagg(cfg)
	if err != nil {
		t.Fatal(err)
	}
	times, reps := map[string][]int64{}, map[string][]int{}
	now, k := int64(0), 0
	for k < len(reqs) || d.Busy() {
		for ; k < len(reqs) && reqs[k].at <= now; k++ {
			info := analyzePrompt([]string{reqs[k].prompt}, nil, 0, cfg.Replicas[0].BlockSize, false)
			id := "r" + strconv.Itoa(k+1)
			if _, err := d.Add(now, cluster.Request{Request: sim.Request{ID: id, PromptTokens: info.tokens,
				OutputTokens: reqs[k].maxTokens, BlockHashes: info.hashes, HashBlockTokens: 16}}); err != nil {
				t.Fatal(err)
			}
		}
		until := int64(math.MaxInt64)
		if k < len(reqs) {
			until = reqs[k].at
		}
		at, bs := d.Step(now, until)
		for _, b := range bs {
			for _, ev := range b.Events {
				if ev.Kind == sim.EventTokens {
					times[ev.ID] = append(times[ev.ID], at)
					reps[ev.ID] = append(reps[ev.ID], b.Replica)
				}
			}
		}
		if at == now && len(bs) == 0 && k == len(reqs) && !d.Busy() {
			break
		}
		now = at
	}
	return times, reps
}

// TestFleetSplitOnSchedule: 1 prefill and 1 decode replica on the wall
// clock keep the split's virtual times: each request's first token leaves
// at its prefill replica's iteration end, the rest at the decode
// replica's, after its KV crossed the link (the loop wakes at the
// transfer's arrival, NextEnd, so the decode replica starts on time). The
// answers name the prefill replica; /metrics observes TTFT on engine 0 and
// the finish (E2E, success) on engine 1; every replica ends with nothing
// outstanding.
func TestFleetSplitOnSchedule(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	reqs := []fleetReq{
		{0, words(600), 6, ""},
		{int64(2 * time.Millisecond), "a " + words(200), 4, ""},
	}
	cfg := fleetConfig(2, "")
	cfg.Disagg = &cluster.Disaggregation{Prefill: 1}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"prefill", "decode"}, s.Roles()); diff != "" {
			t.Errorf("Roles (-want +got):\n%s", diff)
		}
		ws := serveFleetRequests(t, s, reqs)
		want, reps := replaySplit(t, cfg, reqs)
		// By the split's contract: the first token from replica 0, the
		// other 5 and 3 from replica 1.
		if diff := cmp.Diff(map[string][]int{"r1": {0, 1, 1, 1, 1, 1}, "r2": {0, 1, 1, 1}}, reps); diff != "" {
			t.Fatalf("replay's token replicas (-want +got):\n%s", diff)
		}
		for i, w := range ws {
			id := "r" + strconv.Itoa(i+1)
			if w.status != 200 || w.Header().Get(ReplicaHeader) != "1" {
				t.Fatalf("%s: status %d, %s %q; want 200 from prefill replica 1", id, w.status, ReplicaHeader, w.Header().Get(ReplicaHeader))
			}
			var got []int64
			for _, f := range w.flushes {
				if strings.Contains(f.data, `"text":" `) {
					got = append(got, f.t)
				}
			}
			if diff := cmp.Diff(want[id], got); diff != "" {
				t.Errorf("%s: token departure times (-split schedule +server):\n%s", id, diff)
			}
		}
		for i, n := range s.fl.outstanding {
			if n != 0 {
				t.Errorf("replica %d: %d outstanding after the run; want 0", i, n)
			}
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, line := range []string{
			`vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 2`,
			`vllm:time_to_first_token_seconds_count{engine="2",model_name="m"} 0`,
			`vllm:e2e_request_latency_seconds_count{engine="1",model_name="m"} 0`,
			`vllm:e2e_request_latency_seconds_count{engine="2",model_name="m"} 2`,
			`vllm:request_success_total{engine="2",finished_reason="length",model_name="m"} 2`,
			`vllm:request_success_total{engine="1",finished_reason="length",model_name="m"} 0`,
		} {
			if !strings.Contains(rec.Body.String(), line+"\n") {
				t.Errorf("/metrics lacks %s", line)
			}
		}
	})
}

// TestFleetSplitAbort: a client leaving mid-decode aborts its request on
// its decode replica: the abort is counted on engine 1 (the decode
// replica, where it was), not on its prefill replica 0, and no replica
// keeps it outstanding.
func TestFleetSplitAbort(t *testing.T) {
	cfg := fleetConfig(2, "")
	cfg.Disagg = &cluster.Disaggregation{Prefill: 1}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		rctx, leave := context.WithCancel(context.Background())
		w := &flushWriter{now: s.clock}
		r := httptest.NewRequestWithContext(rctx, http.MethodPost, "/v1/completions",
			strings.NewReader(`{"prompt":"one two three","max_tokens":400,"ignore_eos":true,"stream":true}`))
		fin := make(chan struct{})
		go func() { s.Handler().ServeHTTP(w, r); close(fin) }()
		time.Sleep(100 * time.Millisecond) // decoding on replica 1
		synctest.Wait()
		leave()
		<-fin
		synctest.Wait()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, line := range []string{
			`vllm:request_success_total{engine="2",finished_reason="abort",model_name="m"} 1`,
			`vllm:request_success_total{engine="1",finished_reason="abort",model_name="m"} 0`,
			`vllm:num_requests_running{engine="2",model_name="m"} 0`,
		} {
			if !strings.Contains(rec.Body.String(), line+"\n") {
				t.Errorf("/metrics after the abort lacks %s", line)
			}
		}
		cancel()
		<-done
		for i, n := range s.fl.outstanding {
			if n != 0 {
				t.Errorf("replica %d: %d outstanding after the abort; want 0", i, n)
			}
		}
	})
}
