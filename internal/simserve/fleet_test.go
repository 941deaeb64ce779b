package simserve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// fleetReq is one request of a fleet test: sent at `at` (server clock ns).
type fleetReq struct {
	at        int64
	prompt    string
	maxTokens int
	session   string // sent as SessionHeader when set
}

func fleetConfig(n int, policy string) cluster.Config {
	cfg := cluster.Config{Router: cluster.Router{Policy: policy}, Replicas: make([]sim.Config, n)}
	for i := range cfg.Replicas {
		cfg.Replicas[i] = testConfig()
	}
	return cfg
}

// replayFleet drives a fresh cluster in virtual time as a driver of the
// cluster's contract does (Add what is due, Step up to the next arrival),
// returning each request's token times and replica.
func replayFleet(t *testing.T, cfg cluster.Config, reqs []fleetReq) (map[string][]int64, map[string]int) {
	t.Helper()
	c, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	times, reps := map[string][]int64{}, map[string]int{}
	now, k := int64(0), 0
	for k < len(reqs) || c.Busy() {
		for ; k < len(reqs) && reqs[k].at <= now; k++ {
			info := analyzePrompt([]string{reqs[k].prompt}, nil, 0, cfg.Replicas[0].BlockSize, false)
			id := "r" + strconv.Itoa(k+1)
			i, err := c.Add(now, cluster.Request{Session: reqs[k].session, Request: sim.Request{ID: id, PromptTokens: info.tokens,
				OutputTokens: reqs[k].maxTokens, BlockHashes: info.hashes, HashBlockTokens: 16}})
			if err != nil {
				t.Fatal(err)
			}
			reps[id] = i
		}
		until := int64(math.MaxInt64)
		if k < len(reqs) {
			until = reqs[k].at
		}
		at, bs := c.Step(now, until)
		for _, b := range bs {
			for _, ev := range b.Events {
				if ev.Kind == sim.EventTokens {
					times[ev.ID] = append(times[ev.ID], at)
				}
			}
		}
		if at == now && len(bs) == 0 && k == len(reqs) {
			t.Fatal("cluster stalled in replay")
		}
		now = at
	}
	return times, reps
}

// serveFleetRequests runs reqs against a fleet server in a synctest
// bubble, each sent at its time, and returns their writers.
func serveFleetRequests(t *testing.T, s *Server, reqs []fleetReq) []*flushWriter {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	ws := make([]*flushWriter, len(reqs))
	var wg sync.WaitGroup
	for i, rq := range reqs {
		if d := rq.at - s.clock(); d > 0 {
			time.Sleep(time.Duration(d)) // fake clock
		}
		ws[i] = &flushWriter{now: s.clock}
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true,"stream":true}`, rq.prompt, rq.maxTokens)
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
		if rq.session != "" {
			r.Header.Set(SessionHeader, rq.session)
		}
		wg.Go(func() { s.Handler().ServeHTTP(ws[i], r) })
		synctest.Wait() // queued before the next is sent
	}
	wg.Wait()
	cancel()
	<-done
	return ws
}

// TestFleetDeparturesOnSchedule checks, on a fake clock, that a fleet's
// tokens leave at the cluster's virtual times, requests being spread per
// the router: r2 arrives while replica 0 is mid-iteration and must start
// on idle replica 1 at once (the loop wakes at arrivals), r3 joins replica
// 0's running batch at its next iteration.
func TestFleetDeparturesOnSchedule(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	reqs := []fleetReq{
		{0, words(1200), 12, ""},
		{int64(7300 * time.Microsecond), words(300), 8, ""},
		{int64(23100 * time.Microsecond), "the " + words(60), 5, ""},
	}
	cfg := fleetConfig(2, cluster.PolicyRoundRobin)
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		late := 0
		s.onDepart = func(_ uint64, sched, dep int64) {
			mu.Lock()
			if sched != dep {
				late++
			}
			mu.Unlock()
		}
		ws := serveFleetRequests(t, s, reqs)
		want, reps := replayFleet(t, cfg, reqs)
		// Round-robin: r1 and r3 on replica 0, r2 on replica 1.
		if diff := cmp.Diff(map[string]int{"r1": 0, "r2": 1, "r3": 0}, reps); diff != "" {
			t.Fatalf("replay routing (-want +got):\n%s", diff)
		}
		for i, w := range ws {
			id := "r" + strconv.Itoa(i+1)
			if w.status != 200 {
				t.Fatalf("%s: status %d", id, w.status)
			}
			// The cluster's replica indexes are from 0; the header numbers
			// replicas from 1, as the records do.
			if got, want := w.Header().Get(ReplicaHeader), strconv.Itoa(reps[id]+1); got != want {
				t.Errorf("%s: %s %q; want %q", id, ReplicaHeader, got, want)
			}
			var got []int64
			for _, f := range w.flushes {
				if strings.Contains(f.data, `"text":" `) {
					got = append(got, f.t)
				}
			}
			if diff := cmp.Diff(want[id], got); diff != "" {
				t.Errorf("%s: token departure times (-cluster schedule +server):\n%s", id, diff)
			}
		}
		// r2 started on arrival: its first token is one prefill after
		// 7.3 ms, long before replica 0's first iteration (a 1200-token
		// prefill) would have let a loop that slept through it start r2.
		if first := want["r2"][0]; first <= reqs[1].at {
			t.Errorf("r2's first token at %d ns, not after its arrival", first)
		}
		if late != 0 {
			t.Errorf("%d chunks left after their scheduled time; want none in a fake clock", late)
		}
	})
}

// TestFleetMetrics checks the per-replica series after 3 requests on 2
// replicas (round-robin: r1, r3 on engine 0, r2 on engine 1) and that the
// scrape parser sums them into the fleet.
func TestFleetMetrics(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	// Prompts of 40, 50 and 64 distinct-enough tokens (no shared blocks:
	// r3 starts with a different word), outputs 5, 7, 2.
	reqs := []fleetReq{{0, words(40), 5, ""}, {0, "a " + words(49), 7, ""}, {0, "b " + words(63), 2, ""}}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(fleetConfig(2, cluster.PolicyRoundRobin), Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		serveFleetRequests(t, s, reqs)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		// By hand: engine 0 served r1 (40 + 5) and r3 (64 + 2): 104 prompt,
		// 7 generated, 2 finished by length; engine 1 r2 (50 + 7).
		for _, line := range []string{
			`vllm:prompt_tokens_total{engine="1",model_name="m"} 104`,
			`vllm:prompt_tokens_total{engine="2",model_name="m"} 50`,
			`vllm:generation_tokens_total{engine="1",model_name="m"} 7`,
			`vllm:generation_tokens_total{engine="2",model_name="m"} 7`,
			`vllm:request_success_total{engine="1",finished_reason="length",model_name="m"} 2`,
			`vllm:request_success_total{engine="2",finished_reason="length",model_name="m"} 1`,
			`vllm:e2e_request_latency_seconds_count{engine="1",model_name="m"} 2`,
			`vllm:e2e_request_latency_seconds_count{engine="2",model_name="m"} 1`,
			`vllm:request_generation_tokens_sum{engine="1",model_name="m"} 7`,
			`vllm:request_generation_tokens_sum{engine="2",model_name="m"} 7`,
			`vllm:num_requests_running{engine="2",model_name="m"} 0`,
			`vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0`,
		} {
			if !strings.Contains(body, line+"\n") {
				t.Errorf("/metrics lacks %s", line)
			}
		}
		if !strings.Contains(body, `vllm:cache_config_info{`) || !strings.Contains(body, `engine="2"`) {
			t.Error("/metrics lacks engine 1's cache_config_info")
		}
		snap, err := servermetrics.Parse(strings.NewReader(body), 0)
		if err != nil {
			t.Fatal(err)
		}
		// The fleet: 104 + 50 prompt tokens, 7 + 7 generated, 3 finished,
		// and 3 e2e observations.
		for name, want := range map[servermetrics.Name]float64{
			servermetrics.PromptTokens: 154, servermetrics.GenerationTokens: 14,
			servermetrics.RequestsFinished: 3, servermetrics.Running: 0,
		} {
			if got := snap.Values[name]; got != want {
				t.Errorf("parsed %s = %v; want %v (summed over engines)", name, got, want)
			}
		}
		if got := snap.Histograms[servermetrics.E2E].Count; got != 3 {
			t.Errorf("parsed e2e count %v; want 3 (both engines' observations)", got)
		}
	})
}

// TestFleetAbortFreesReplica: with least-outstanding routing r1 goes to
// replica 0 and r2 to replica 1; r2's client leaves, which must abort it on
// replica 1 (whose running gauge drops to 0 at once), so that r3, sent
// while r1 still runs, is routed to the freed replica 1.
func TestFleetAbortFreesReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(fleetConfig(2, cluster.PolicyLeastOutstanding), Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		var aborted []string
		s.onAbort = func(id string) { aborted = append(aborted, id) }
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		send := func(ctx context.Context, maxTokens int) (*flushWriter, chan struct{}) {
			w := &flushWriter{now: s.clock}
			body := fmt.Sprintf(`{"prompt":"one two three","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/completions", strings.NewReader(body))
			fin := make(chan struct{})
			go func() { s.Handler().ServeHTTP(w, r); close(fin) }()
			synctest.Wait()
			return w, fin
		}
		w1, fin1 := send(context.Background(), 400)
		ctx2, leave := context.WithCancel(context.Background())
		w2, fin2 := send(ctx2, 400)
		time.Sleep(50 * time.Millisecond) // both decoding
		synctest.Wait()
		leave()
		<-fin2
		synctest.Wait()
		if diff := cmp.Diff([]string{"r2"}, aborted); diff != "" {
			t.Errorf("aborted (-want +got):\n%s", diff)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, line := range []string{
			`vllm:num_requests_running{engine="1",model_name="m"} 1`,
			`vllm:num_requests_running{engine="2",model_name="m"} 0`,
			`vllm:request_success_total{engine="2",finished_reason="abort",model_name="m"} 1`,
			`vllm:request_success_total{engine="1",finished_reason="abort",model_name="m"} 0`,
		} {
			if !strings.Contains(rec.Body.String(), line+"\n") {
				t.Errorf("/metrics after the abort lacks %s", line)
			}
		}
		w3, fin3 := send(context.Background(), 3)
		<-fin3
		<-fin1
		for i, c := range []struct {
			w    *flushWriter
			want string
		}{{w1, "1"}, {w2, "2"}, {w3, "2"}} {
			if got := c.w.Header().Get(ReplicaHeader); got != c.want {
				t.Errorf("r%d: %s %q; want %q", i+1, ReplicaHeader, got, c.want)
			}
		}
		cancel()
		<-done
	})
}

// TestFleetSlowdownRefused: a fleet's replicas keep their own schedules,
// which a slowdown cannot stretch: the option, SetSlowdown and the
// endpoint all refuse it rather than pretend.
func TestFleetSlowdownRefused(t *testing.T) {
	if _, err := NewFleet(fleetConfig(2, ""), Options{Slowdown: 2}); err == nil {
		t.Error("NewFleet with a Slowdown succeeded")
	}
	s, err := NewFleet(fleetConfig(2, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSlowdown(2); err == nil {
		t.Error("SetSlowdown on a fleet succeeded")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/goodput/slowdown?factor=2", nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("POST /goodput/slowdown on a fleet = %d; want 400", rec.Code)
	}
	if _, err := NewFleet(cluster.Config{}, Options{}); err == nil {
		t.Error("NewFleet with no replicas succeeded")
	}
	// A bad autoscaler is the cluster's error, naming the field.
	scaled := fleetConfig(2, "")
	scaled.Autoscale = &cluster.Autoscale{}
	var ce *cluster.ConfigError
	if _, err := NewFleet(scaled, Options{}); !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, "Autoscale") {
		t.Errorf("NewFleet with a zero Autoscale = %v; want a ConfigError of Autoscale", err)
	}
	if got := s.Replicas(); got != 2 {
		t.Errorf("Replicas() = %d; want 2", got)
	}
	if got := s.Describe().Replicas; got != 2 {
		t.Errorf(`Describe()["replicas"] = %v; want 2`, got)
	}
}

// TestFleetLockstepOnSchedule: vLLM's data parallelism with expert
// parallelism (the ranks step in lockstep) on the wall clock keeps the
// cluster's virtual times too: r2, arriving during the first step, joins
// at the next one on the rank the DP balancer picks.
func TestFleetLockstepOnSchedule(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	reqs := []fleetReq{
		{0, words(400), 6, ""},
		{int64(3100 * time.Microsecond), "a " + words(200), 4, ""},
		{int64(3100 * time.Microsecond), "b " + words(100), 3, ""},
	}
	rank := testConfig()
	rank.Model = "qwen3-30b-a3b"
	cfg := cluster.Config{Router: cluster.Router{Policy: cluster.PolicyDPBalance}, ExpertParallel: true,
		Replicas: []sim.Config{rank, rank}}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		ws := serveFleetRequests(t, s, reqs)
		want, reps := replayFleet(t, cfg, reqs)
		// dp-balance: r1 to rank 0; r2 to idle rank 1; r3 to rank 0
		// (score 4·0 + 1 running) over rank 1 (r2 waiting: 4).
		if diff := cmp.Diff(map[string]int{"r1": 0, "r2": 1, "r3": 0}, reps); diff != "" {
			t.Fatalf("replay routing (-want +got):\n%s", diff)
		}
		for i, w := range ws {
			id := "r" + strconv.Itoa(i+1)
			if got, want := w.Header().Get(ReplicaHeader), strconv.Itoa(reps[id]+1); got != want {
				t.Errorf("%s: %s %q; want %q", id, ReplicaHeader, got, want)
			}
			var got []int64
			for _, f := range w.flushes {
				if strings.Contains(f.data, `"text":" `) {
					got = append(got, f.t)
				}
			}
			if diff := cmp.Diff(want[id], got); diff != "" {
				t.Errorf("%s: token departure times (-cluster schedule +server):\n%s", id, diff)
			}
		}
		// In lockstep the ranks' tokens leave together.
		if want["r1"][1] != want["r2"][0] {
			t.Errorf("r1's second token at %d, r2's first at %d: want one lockstep end", want["r1"][1], want["r2"][0])
		}
	})
}

// TestFleetAdmission: each replica applies its own admission bounds. Two
// replicas of max_num_seqs 1 and max_waiting 1, six requests at once,
// round-robin: each replica gets three (r1 r3 r5, r2 r4 r6), runs one,
// queues one and rejects the third with a 429 at once; and on a replica of
// max_num_seqs 1 and max_queue_time 30 ms a request queued behind a long
// one is failed once it has waited past the limit.
func TestFleetAdmission(t *testing.T) {
	rep := testConfig()
	rep.MaxNumSeqs, rep.MaxWaiting = 1, 1
	cfg := cluster.Config{Router: cluster.Router{Policy: cluster.PolicyRoundRobin}, Replicas: []sim.Config{rep, rep}}
	reqs := make([]fleetReq, 6)
	for i := range reqs {
		reqs[i] = fleetReq{0, fmt.Sprintf("request %d", i), 3, ""}
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		ws := serveFleetRequests(t, s, reqs)
		var got []int
		for _, w := range ws {
			got = append(got, w.status)
		}
		if diff := cmp.Diff([]int{200, 200, 200, 200, 429, 429}, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
	})
	rep = testConfig()
	rep.MaxNumSeqs, rep.MaxQueueTime = 1, 30*time.Millisecond
	cfg = cluster.Config{Router: cluster.Router{Policy: cluster.PolicyRoundRobin}, Replicas: []sim.Config{rep}}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewFleet(cfg, Options{ServedModelName: "m"})
		if err != nil {
			t.Fatal(err)
		}
		ws := serveFleetRequests(t, s, []fleetReq{{0, "long one", 40, ""}, {0, "queued", 3, ""}})
		// The stream started when the engine admitted it to its queue, so
		// the rejection at the first step start past 30 ms is an error
		// event (code 429) after a 200.
		if ws[0].status != 200 || !strings.Contains(ws[1].buf.String(), `over the 30ms limit","type":"RateLimitError"`) {
			t.Errorf("statuses %d, %d (%q); want 200 and the queued one failed past max_queue_time", ws[0].status, ws[1].status, tail(ws[1].buf.String(), 200))
		}
	})
}

// TestFleetSessionAffinity: the session header keeps a session's turns on
// the replica its first went to. Four requests at once on 2 replicas,
// sessions a, b, b, b: affinity routes them to replicas 1, 2, 2, 2 (b's
// first turn least-outstanding to 2, the rest follow it); without the
// header they go least-outstanding, 1, 2, 1, 2.
func TestFleetSessionAffinity(t *testing.T) {
	for _, tc := range []struct {
		sessions []string
		want     []string
	}{
		{[]string{"a", "b", "b", "b"}, []string{"1", "2", "2", "2"}},
		{[]string{"", "", "", ""}, []string{"1", "2", "1", "2"}},
	} {
		cfg := fleetConfig(2, cluster.PolicySessionAffinity)
		reqs := make([]fleetReq, len(tc.sessions))
		for i, sess := range tc.sessions {
			reqs[i] = fleetReq{0, fmt.Sprintf("turn %d", i), 4, sess}
		}
		synctest.Test(t, func(t *testing.T) {
			s, err := NewFleet(cfg, Options{ServedModelName: "m"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range serveFleetRequests(t, s, reqs) {
				got = append(got, w.Header().Get(ReplicaHeader))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sessions %q: replicas (-want +got):\n%s", tc.sessions, diff)
			}
		})
	}
}
