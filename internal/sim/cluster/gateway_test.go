package cluster

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
)

// stepper is what gwDrive drives: a Cluster or a Gateway.
type stepper interface {
	Add(now int64, r Request) (int, error)
	Step(now, until int64) (int64, []Batch)
	Busy() bool
}

// outcome is what became of one request in a driven run.
type outcome struct {
	replica    int // from 0; -1 refused at the gateway
	first, end int64
	tokens     int
	hidden     int
	rejected   string
	retryAfter int64
	finished   bool
	arrival    int64
	prio       int
}

// gwDrive runs arrivals (sorted by time) to completion and returns each
// request's outcome by id.
func gwDrive(t testing.TB, c stepper, arrivals []arrival) map[string]*outcome {
	t.Helper()
	out := map[string]*outcome{}
	var now int64
	i := 0
	for steps := 0; ; steps++ {
		if steps > 10_000_000 {
			t.Fatal("no end")
		}
		for i < len(arrivals) && arrivals[i].at <= now {
			a := arrivals[i]
			r, err := c.Add(a.at, a.req)
			if err != nil {
				t.Fatal(err)
			}
			out[a.req.ID] = &outcome{replica: r, first: -1, arrival: a.at, prio: a.req.Priority}
			i++
		}
		until := int64(math.MaxInt64)
		if i < len(arrivals) {
			until = arrivals[i].at
		}
		end, bs := c.Step(now, until)
		for _, b := range bs {
			for _, ev := range b.Events {
				o := out[ev.ID]
				switch ev.Kind {
				case sim.EventTokens:
					if o.first < 0 {
						o.first = end
					}
					o.tokens += ev.Tokens
					if ev.Hidden {
						o.hidden += ev.Tokens
					}
				case sim.EventFinished:
					o.finished, o.end = true, end
				case sim.EventRejected:
					o.rejected, o.retryAfter, o.end = ev.Err, ev.RetryAfterNs, end
				}
			}
		}
		if end == now && len(bs) == 0 {
			if i == len(arrivals) {
				if c.Busy() {
					t.Fatal("busy but runs nothing")
				}
				return out
			}
			end = arrivals[i].at
		}
		now = end
	}
}

func gwReq(id string, at int64, prompt, output, prio int) arrival {
	return arrival{at: at, req: Request{Request: sim.Request{ID: id, PromptTokens: prompt, OutputTokens: output, Priority: prio}}}
}

func newGW(t *testing.T, n int, eng sim.Config, gc GatewayConfig) *Gateway {
	t.Helper()
	g, err := NewGateway(Config{Replicas: replicas(n, eng), Gateway: &gc})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRequestBucket scripts arrivals against a 2 requests/s bucket of
// burst 2 (full at 0). By hand:
//
//	t=0     a, b take the 2 tokens (level 0); c finds 0: refused, wait
//	        (1-0)/2 s = 0.5 s.
//	t=0.25  level 0.5: d refused, wait (1-0.5)/2 = 0.25 s.
//	t=0.5   level 1 (d took nothing): e admitted, level 0.
//	t=0.6   level 0.2: f refused, wait 0.8/2 = 0.4 s.
//	t=2     level min(2, 0 + 2×1.5) = 2: g, h admitted.
func TestRequestBucket(t *testing.T) {
	g := newGW(t, 1, sim.DefaultConfig(), GatewayConfig{Requests: &Bucket{Rate: 2, Burst: 2}})
	ms := int64(1e6)
	got := gwDrive(t, g, []arrival{
		gwReq("a", 0, 16, 4, 0), gwReq("b", 0, 16, 4, 0), gwReq("c", 0, 16, 4, 0),
		gwReq("d", 250*ms, 16, 4, 0), gwReq("e", 500*ms, 16, 4, 0), gwReq("f", 600*ms, 16, 4, 0),
		gwReq("g", 2000*ms, 16, 4, 0), gwReq("h", 2000*ms, 16, 4, 0),
	})
	want := map[string]int64{"c": 500 * ms, "d": 250 * ms, "f": 400 * ms}
	for id, o := range got {
		w, refused := want[id]
		switch {
		case refused && (o.retryAfter != w || !strings.HasPrefix(o.rejected, "rate limited") || o.replica != -1):
			t.Errorf("%s: rejected %q retry after %d, replica %d; want rate limited, %d ns, -1", id, o.rejected, o.retryAfter, o.replica, w)
		case !refused && !o.finished:
			t.Errorf("%s: not served (%q)", id, o.rejected)
		}
	}
	if g.RateLimited() != 3 || g.Snapshot().Rejected != 3 {
		t.Errorf("rate limited %d, snapshot rejected %d; want 3, 3", g.RateLimited(), g.Snapshot().Rejected)
	}
}

// TestTokenBucket: 1000 tokens/s, burst 1000. By hand: a (500+100) at 0
// leaves 400; b (600) at 0.1 s finds 500: refused, wait 100/1000 s =
// 0.1 s; c (600) at 0.2 s finds 600: admitted. A request of 1001 tokens
// can never fit: Add's error, a 400.
func TestTokenBucket(t *testing.T) {
	g := newGW(t, 1, sim.DefaultConfig(), GatewayConfig{Tokens: &Bucket{Rate: 1000, Burst: 1000}})
	ms := int64(1e6)
	got := gwDrive(t, g, []arrival{gwReq("a", 0, 500, 100, 0), gwReq("b", 100*ms, 500, 100, 0), gwReq("c", 200*ms, 500, 100, 0)})
	if !got["a"].finished || !got["c"].finished || got["b"].retryAfter != 100*ms {
		t.Errorf("a %+v, b %+v, c %+v; want a, c served, b refused for 100 ms", *got["a"], *got["b"], *got["c"])
	}
	if _, err := g.Add(10_000*ms, Request{Request: sim.Request{ID: "big", PromptTokens: 901, OutputTokens: 100}}); !errors.Is(err, sim.ErrInvalidRequest) {
		t.Errorf("Add(1001 tokens) = %v; want sim.ErrInvalidRequest", err)
	}
}

// TestPerClassBuckets: with PerClass, a batch flood spends only its own
// class's bucket. Burst 1 at 1/s: batch b1 at 0 takes class 1's token, b2
// is refused (wait 1 s), interactive i1 still finds class 0's.
func TestPerClassBuckets(t *testing.T) {
	g := newGW(t, 1, sim.DefaultConfig(), GatewayConfig{Requests: &Bucket{Rate: 1, Burst: 1}, PerClass: true})
	got := gwDrive(t, g, []arrival{gwReq("b1", 0, 16, 4, 1), gwReq("b2", 0, 16, 4, 1), gwReq("i1", 0, 16, 4, 0)})
	if !got["b1"].finished || !got["i1"].finished || got["b2"].retryAfter != 1e9 {
		t.Errorf("b1 %+v, b2 %+v, i1 %+v; want b2 alone refused for 1 s", *got["b1"], *got["b2"], *got["i1"])
	}
}

// TestRetryAfterIsExact: a request resent exactly after the wait it was
// told is admitted (rate 3/s: a refill of 1/3 token is not exact in
// binary), one resent 1 ns earlier is not.
func TestRetryAfterIsExact(t *testing.T) {
	g := newGW(t, 1, sim.DefaultConfig(), GatewayConfig{Requests: &Bucket{Rate: 3, Burst: 1}})
	if _, err := g.Add(0, Request{Request: sim.Request{ID: "a", PromptTokens: 8, OutputTokens: 2}}); err != nil {
		t.Fatal(err)
	}
	g.Add(0, Request{Request: sim.Request{ID: "b", PromptTokens: 8, OutputTokens: 2}})
	_, bs := g.Step(0, 0)
	wait := bs[0].Events[0].RetryAfterNs
	if wait != 333_333_334 { // ceil(1e9/3)
		t.Fatalf("Retry-After %d ns; want 333333334", wait)
	}
	if w, _ := g.admit(wait-1, 0, &Request{Request: sim.Request{ID: "b", PromptTokens: 8, OutputTokens: 2}}); w != 1 {
		t.Errorf("1 ns early: wait %d; want 1", w)
	}
	if w, _ := g.admit(wait, 0, &Request{Request: sim.Request{ID: "b", PromptTokens: 8, OutputTokens: 2}}); w != 0 {
		t.Errorf("on time: wait %d; want admitted", w)
	}
}

// TestDegradeAboveThreshold: five requests at 0 into one replica, degrade
// above 2 waiting to max_tokens 16. Requests added at one moment all wait
// until the next step, so request k finds k-1 waiting (0, 1, 2, 3, 4):
// the 4th and 5th (3 and 4 > 2) are capped at 16 tokens, the rest
// generate their 100.
func TestDegradeAboveThreshold(t *testing.T) {
	g := newGW(t, 1, sim.DefaultConfig(), GatewayConfig{Degrade: &Degrade{Above: 2, Action: DegradeMaxTokens, Value: 16}})
	var arr []arrival
	for k := 1; k <= 5; k++ {
		arr = append(arr, gwReq("r"+strconv.Itoa(k), 0, 64, 100, 0))
	}
	var how []string
	for _, a := range arr {
		if _, err := g.Add(0, a.req); err != nil {
			t.Fatal(err)
		}
		how = append(how, g.LastDegraded())
	}
	if want := []string{"", "", "", "max_tokens", "max_tokens"}; !slices.Equal(how, want) {
		t.Errorf("degraded %q; want %q", how, want)
	}
	if g.Degraded() != 2 {
		t.Errorf("Degraded() = %d; want 2", g.Degraded())
	}
	g2 := newGW(t, 1, sim.DefaultConfig(), GatewayConfig{Degrade: &Degrade{Above: 2, Action: DegradeMaxTokens, Value: 16}})
	out := gwDrive(t, g2, arr)
	for k, want := range []int{100, 100, 100, 16, 16} {
		if o := out["r"+strconv.Itoa(k+1)]; o.tokens != want {
			t.Errorf("r%d generated %d tokens; want %d", k+1, o.tokens, want)
		}
	}
}

// TestDegradeReasoning: an engine reasoning half of every output (0.5);
// a 100-token request hides 50. Above 0 waiting, a budget of 10 keeps the
// 50 visible and 10 hidden: 60 tokens. The first request (0 waiting) is
// untouched: 100, 50 of them hidden.
func TestDegradeReasoning(t *testing.T) {
	eng := sim.DefaultConfig()
	eng.ReasoningTokens = 0.5
	g := newGW(t, 1, eng, GatewayConfig{Degrade: &Degrade{Above: 0, Action: DegradeReasoning, Value: 10}})
	out := gwDrive(t, g, []arrival{gwReq("a", 0, 64, 100, 0), gwReq("b", 0, 64, 100, 0)})
	if a, b := out["a"], out["b"]; a.tokens != 100 || a.hidden != 50 || b.tokens != 60 || b.hidden != 10 {
		t.Errorf("a %d tokens (%d hidden), b %d (%d); want 100 (50), 60 (10)", a.tokens, a.hidden, b.tokens, b.hidden)
	}
}

// TestDegradeSmallModel: pools main = replica 1, small = replica 2; above
// 0 waiting in main a request goes to small. a finds main empty (replica
// 1); b finds a waiting there (replica 2); c at 1 s, with both done,
// finds main empty again.
func TestDegradeSmallModel(t *testing.T) {
	g := newGW(t, 2, sim.DefaultConfig(), GatewayConfig{
		Pools:   []Pool{{Name: "main", Replicas: []int{0}}, {Name: "small", Replicas: []int{1}}},
		Degrade: &Degrade{Above: 0, Action: DegradeSmallModel, Pool: 1}})
	out := gwDrive(t, g, []arrival{gwReq("a", 0, 64, 8, 0), gwReq("b", 0, 64, 8, 0), gwReq("c", 1e9, 64, 8, 0)})
	got := []int{out["a"].replica, out["b"].replica, out["c"].replica}
	if !slices.Equal(got, []int{0, 1, 0}) || !out["b"].finished {
		t.Errorf("replicas %v; want [0 1 0], all served", got)
	}
}

// TestPoolsAreSeparateClusters: a gateway of two pools gives each
// request exactly the events it gets in its pool's cluster run alone —
// the merge of the pools' clocks adds and loses nothing — with the
// replicas renumbered (pool 1 is replicas 2 and 4 of the cluster).
func TestPoolsAreSeparateClusters(t *testing.T) {
	eng := sim.DefaultConfig()
	t.Run("default", func(t *testing.T) { poolsAlone(t, eng, workload(300, 40, 7), false) })
	// Engines refusing at once (a waiting queue of 2): refusals at now
	// from one pool while another's iteration is in flight.
	eng.MaxWaiting = 2
	t.Run("rejections", func(t *testing.T) { poolsAlone(t, eng, workload(300, 120, 8), true) })
}

func poolsAlone(t *testing.T, eng sim.Config, arr []arrival, refusals bool) {
	var byClass [2][]arrival
	for i := range arr {
		arr[i].req.Priority = i % 3 % 2 // classes 0, 1, 0, 0, 1, 0, ...
		byClass[arr[i].req.Priority] = append(byClass[arr[i].req.Priority], arr[i])
	}
	gc := GatewayConfig{Pools: []Pool{{Name: "a", Replicas: []int{0, 2}}, {Name: "b", Replicas: []int{1, 3}}}, ClassPools: []int{0, 1}}
	g, err := NewGateway(Config{Replicas: replicas(4, eng), Router: Router{Policy: PolicyLeastOutstanding}, Gateway: &gc})
	if err != nil {
		t.Fatal(err)
	}
	got := gwDrive(t, g, arr)
	refused := 0
	for _, o := range got {
		if o.rejected != "" {
			refused++
		}
	}
	if refused > 0 != refusals {
		t.Fatalf("%d refused; want some: %v", refused, refusals)
	}
	for c, pool := range [2][]int{{0, 2}, {1, 3}} {
		alone, err := New(Config{Replicas: replicas(2, eng), Router: Router{Policy: PolicyLeastOutstanding}})
		if err != nil {
			t.Fatal(err)
		}
		want := gwDrive(t, alone, byClass[c])
		for id, w := range want {
			w.replica = pool[w.replica]
			if diff := cmp.Diff(*w, *got[id], cmp.AllowUnexported(outcome{})); diff != "" {
				t.Fatalf("class %d request %s (-alone +gateway):\n%s", c, id, diff)
			}
		}
	}
}

// flood is interactive requests (class 0: 512 prompt, 64 output) at 4/s
// for 20 s, and a batch flood (class 1: 2048 prompt, 256 output) at 40/s
// from 2 s to 10 s, past what two replicas serve.
func flood() []arrival {
	rng := rand.New(rand.NewPCG(3, 5))
	var out []arrival
	for t := 0.0; t < 20; t += rng.ExpFloat64() / 4 {
		out = append(out, gwReq(fmt.Sprintf("i%d", len(out)), int64(t*1e9), 512, 64, 0))
	}
	for t := 2.0; t < 10; t += rng.ExpFloat64() / 40 {
		out = append(out, gwReq(fmt.Sprintf("b%d", len(out)), int64(t*1e9), 2048, 256, 1))
	}
	slices.SortStableFunc(out, func(a, b arrival) int { return int(a.at - b.at) })
	return out
}

// ttft is class 0's TTFT P50 and P99 (nearest rank), ms.
func ttft(out map[string]*outcome) (p50, p99 float64) {
	var ms []float64
	for _, o := range out {
		if o.prio == 0 && o.first >= 0 {
			ms = append(ms, float64(o.first-o.arrival)/1e6)
		}
	}
	slices.Sort(ms)
	rank := func(q float64) float64 { return ms[int(math.Ceil(q*float64(len(ms))))-1] }
	return rank(0.5), rank(0.99)
}

// TestClassIsolation: under the batch flood, interactive TTFT on two
// replicas (round-robin) with both classes mixed, with priority queues,
// and with a pool each. Measured (docs/simulator.md): P50/P99 mixed
// 84/1475 ms, priority queues 84/415 ms, pools 27/44 ms. The median
// interactive request arrives outside the flood and is served alike;
// in it, priority queues put interactive requests at the head of the
// queue, but the engine does not preempt a running batch request for
// them, so they still wait behind the running batch's steps; a pool of
// their own serves them as if the flood were not there (a 512-token
// prefill on a replica of interactive requests only).
func TestClassIsolation(t *testing.T) {
	arr := flood()
	eng := sim.DefaultConfig()
	run := func(gc GatewayConfig) (float64, float64) {
		g, err := NewGateway(Config{Replicas: replicas(2, eng), Gateway: &gc})
		if err != nil {
			t.Fatal(err)
		}
		return ttft(gwDrive(t, g, arr))
	}
	m50, m99 := run(GatewayConfig{})
	q50, q99 := run(GatewayConfig{PriorityQueues: true})
	p50, p99 := run(GatewayConfig{Pools: []Pool{{Name: "interactive", Replicas: []int{0}}, {Name: "batch", Replicas: []int{1}}}, ClassPools: []int{0, 1}})
	t.Logf("interactive TTFT P50/P99: mixed %.0f/%.0f ms, priority queues %.0f/%.0f ms, pools %.0f/%.0f ms", m50, m99, q50, q99, p50, p99)
	if !(q99 < m99/2 && p99 < q99/4 && p99 < 100 && p50 <= q50 && q50 <= m50) {
		t.Errorf("want queues' P99 under half of mixed's, pools' under a quarter of queues' and 100 ms, medians in that order too")
	}
}

func TestGatewayConfigErrors(t *testing.T) {
	eng := sim.DefaultConfig()
	tests := []struct {
		name  string
		gc    GatewayConfig
		field string
		want  string
	}{
		{"zero rate", GatewayConfig{Requests: &Bucket{Rate: 0}}, "Gateway.Requests", "rate 0/s must be > 0"},
		{"small burst", GatewayConfig{Tokens: &Bucket{Rate: 5, Burst: 0.5}}, "Gateway.Tokens", "burst 0.5 must be ≥ 1"},
		{"overlap", GatewayConfig{Pools: []Pool{{"a", []int{0, 1}}, {"b", []int{1}}}}, "Gateway.Pools", "replica 2 is in another pool too"},
		{"uncovered", GatewayConfig{Pools: []Pool{{"a", []int{0}}}}, "Gateway.Pools", "replica 2 is in no pool"},
		{"out of range", GatewayConfig{Pools: []Pool{{"a", []int{0, 1, 2}}}}, "Gateway.Pools", "replica 3 out of range"},
		{"class pool", GatewayConfig{ClassPools: []int{0, 1}}, "Gateway.ClassPools", "class 1's pool 1 out of range (1 pools)"},
		{"cap", GatewayConfig{Degrade: &Degrade{Action: DegradeMaxTokens}}, "Gateway.Degrade", "max_tokens cap 0 must be ≥ 1"},
		{"action", GatewayConfig{Degrade: &Degrade{Action: "shed"}}, "Gateway.Degrade", `unknown action "shed"`},
		{"mix", GatewayConfig{Mix: []float64{1, -1}}, "Gateway.Mix", "class 1's share -1 must be ≥ 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewGateway(Config{Replicas: replicas(2, eng), Gateway: &tt.gc})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewGateway = %v; want Field %s saying %q", err, tt.field, tt.want)
			}
		})
	}
}

// TestClassOf: a 0.8/0.2 mix gives about 80% class 0 over 10,000
// indexes (binomial sd 40: 7880..8120 is 3 sd), the same class for the
// same index, and class 0 without a mix.
func TestClassOf(t *testing.T) {
	n0 := 0
	for i := range 10_000 {
		c := ClassOf([]float64{0.8, 0.2}, 1, i)
		if c != ClassOf([]float64{0.8, 0.2}, 1, i) {
			t.Fatal("not deterministic")
		}
		if c == 0 {
			n0++
		}
	}
	if n0 < 7880 || n0 > 8120 {
		t.Errorf("%d of 10000 class 0; want 8000 ± 120", n0)
	}
	if ClassOf(nil, 1, 5) != 0 || ClassOf([]float64{0, 1}, 1, 5) != 1 {
		t.Error("ClassOf: want 0 with no mix, 1 with all of it on class 1")
	}
}

func TestGatewayString(t *testing.T) {
	gc := GatewayConfig{Requests: &Bucket{Rate: 10, Burst: 5}, Tokens: &Bucket{Rate: 5e4}, PerClass: true, Mix: []float64{0.8, 0.2},
		Pools: []Pool{{"interactive", []int{0, 1}}, {"batch", []int{2}}}, ClassPools: []int{0, 1},
		Degrade: &Degrade{Above: 4, Action: DegradeMaxTokens, Value: 8}}
	want := "rate-limit=10/s,burst=5 token-rate-limit=50000/s per-class priority-mix=0.8,0.2 pools=interactive=1+2,batch=3 class-pools=0,1 degrade=max_tokens:8,above=4"
	if got := gc.String(); got != want {
		t.Errorf("String() = %q\nwant       %q", got, want)
	}
	if got := (GatewayConfig{}).String(); got != "none" {
		t.Errorf("zero String() = %q; want none", got)
	}
}

// BenchmarkGateway: 4,000 requests at 200 req/s over 8 replicas, half of
// them class 1: as one cluster, behind a gateway of one pool (a rate
// limit refusing some, degradation), and as two pools of four (a class
// each, the same load per replica) whose clocks the gateway merges.
func BenchmarkGateway(b *testing.B) {
	arr := workload(4000, 200, 9)
	for i := range arr {
		arr[i].req.Priority = i % 2
	}
	eng := sim.DefaultConfig()
	for _, bc := range []struct {
		name string
		gc   *GatewayConfig
	}{
		{"cluster", nil},
		{"one-pool", &GatewayConfig{Requests: &Bucket{Rate: 150, Burst: 50}, Degrade: &Degrade{Above: 64, Action: DegradeMaxTokens, Value: 32}}},
		{"two-pools", &GatewayConfig{Pools: []Pool{{"a", []int{0, 1, 2, 3}}, {"b", []int{4, 5, 6, 7}}}, ClassPools: []int{0, 1}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				var c stepper
				var err error
				if bc.gc == nil {
					c, err = New(Config{Replicas: replicas(8, eng), Router: Router{Policy: PolicyLeastOutstanding}})
				} else {
					c, err = NewGateway(Config{Replicas: replicas(8, eng), Router: Router{Policy: PolicyLeastOutstanding}, Gateway: bc.gc})
				}
				if err != nil {
					b.Fatal(err)
				}
				gwDrive(b, c, arr)
			}
		})
	}
}

// TestDegradePerReplica: two replicas (round-robin), above 1 waiting per
// replica. Requests added at one moment all wait; request k finds
// ⌈(k-1)/2⌉ waiting on replica 1 and ⌊(k-1)/2⌋ on replica 2, so every
// replica has more than 1 from the 5th on (2 and 2): r5, r6 degraded. The
// summed threshold (above 1) would degrade from the 3rd.
func TestDegradePerReplica(t *testing.T) {
	for _, tt := range []struct {
		per  bool
		want []string
	}{
		{true, []string{"", "", "", "", "max_tokens", "max_tokens"}},
		{false, []string{"", "", "max_tokens", "max_tokens", "max_tokens", "max_tokens"}},
	} {
		g := newGW(t, 2, sim.DefaultConfig(), GatewayConfig{Degrade: &Degrade{Above: 1, PerReplica: tt.per, Action: DegradeMaxTokens, Value: 4}})
		var how []string
		for k := 1; k <= 6; k++ {
			if _, err := g.Add(0, gwReq("r"+strconv.Itoa(k), 0, 64, 100, 0).req); err != nil {
				t.Fatal(err)
			}
			how = append(how, g.LastDegraded())
		}
		if !slices.Equal(how, tt.want) {
			t.Errorf("per replica %v: degraded %q; want %q", tt.per, how, tt.want)
		}
	}
}

// TestGatewayEveryRequestEndsOnce: random gateways (pools, classes, rate
// limits, degradation, engines refusing at once) over random workloads;
// every request admitted ends exactly once — finished with its tokens, or
// refused — and nothing is left in flight.
func TestGatewayEveryRequestEndsOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for trial := range 12 {
		n := 1 + rng.IntN(5)
		eng := sim.DefaultConfig()
		if rng.IntN(2) == 0 {
			eng.MaxWaiting = 1 + rng.IntN(4)
		}
		gc := GatewayConfig{PriorityQueues: rng.IntN(2) == 0, PerClass: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			gc.Requests = &Bucket{Rate: 5 + 50*rng.Float64(), Burst: float64(1 + rng.IntN(20))}
		}
		if rng.IntN(2) == 0 {
			gc.Tokens = &Bucket{Rate: 2e4 + 1e5*rng.Float64(), Burst: 5e4}
		}
		if n > 1 && rng.IntN(2) == 0 {
			cut := 1 + rng.IntN(n-1)
			var a, b []int
			for i := range n {
				if i < cut {
					a = append(a, i)
				} else {
					b = append(b, i)
				}
			}
			gc.Pools = []Pool{{"a", a}, {"b", b}}
			gc.ClassPools = []int{0, 1}
		}
		switch rng.IntN(4) {
		case 0:
			gc.Degrade = &Degrade{Above: rng.IntN(4), Action: DegradeMaxTokens, Value: 1 + rng.IntN(16)}
		case 1:
			gc.Degrade = &Degrade{Above: rng.IntN(4), PerReplica: true, Action: DegradeReasoning, Value: rng.IntN(8)}
		case 2:
			if len(gc.Pools) > 1 {
				gc.Degrade = &Degrade{Above: rng.IntN(4), Action: DegradeSmallModel, Pool: 1}
			}
		}
		g, err := NewGateway(Config{Replicas: replicas(n, eng), Router: Router{Policy: Policies[rng.IntN(len(Policies))]}, Gateway: &gc})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		arr := workload(150, 20+200*rng.Float64(), uint64(trial))
		for i := range arr {
			arr[i].req.Priority = rng.IntN(3)
		}
		ends := map[string]int{}
		var now int64
		i := 0
		for steps := 0; ; steps++ {
			for i < len(arr) && arr[i].at <= now {
				if _, err := g.Add(arr[i].at, arr[i].req); err != nil {
					t.Fatalf("trial %d: %v", trial, err)
				}
				i++
			}
			until := int64(math.MaxInt64)
			if i < len(arr) {
				until = arr[i].at
			}
			end, bs := g.Step(now, until)
			if end < now {
				t.Fatalf("trial %d: time went back from %d to %d", trial, now, end)
			}
			for _, b := range bs {
				if b.Replica < 0 || b.Replica > n {
					t.Fatalf("trial %d: batch of replica %d", trial, b.Replica)
				}
				for _, ev := range b.Events {
					if ev.Kind == sim.EventFinished || ev.Kind == sim.EventRejected {
						ends[ev.ID]++
					}
				}
			}
			if end == now && len(bs) == 0 {
				if i == len(arr) {
					break
				}
				end = arr[i].at
			}
			now = end
		}
		if g.Busy() || len(ends) != len(arr) {
			t.Fatalf("trial %d: %d of %d requests ended, busy %v", trial, len(ends), len(arr), g.Busy())
		}
		for id, k := range ends {
			if k != 1 {
				t.Fatalf("trial %d: %s ended %d times", trial, id, k)
			}
		}
	}
}

// A one-pool gateway in front of an autoscaled cluster: the replicas are
// the cluster's as it grows (queue above 1 per replica, every second, no
// delay: 60 requests at once, 4 running at a time, add replicas), the gateway's refusals come
// one past the last replica, and the autoscaler's report passes through.
// Pools of an autoscaled fleet are refused.
func TestGatewayAutoscaled(t *testing.T) {
	as := &Autoscale{Signal: SignalQueue, Threshold: 1, Max: 3, Interval: time.Second}
	eng := sim.DefaultConfig()
	eng.MaxNumSeqs = 4 // the rest wait
	g, err := NewGateway(Config{Replicas: replicas(1, eng), Autoscale: as,
		Gateway: &GatewayConfig{Requests: &Bucket{Rate: 1, Burst: 59}}})
	if err != nil {
		t.Fatal(err)
	}
	var arr []arrival
	for k := range 60 {
		arr = append(arr, gwReq("r"+strconv.Itoa(k), 0, 512, 256, 0))
	}
	out := gwDrive(t, g, arr)
	if g.Len() < 2 || len(g.Stats()) != g.Len() || out["r59"].retryAfter != 1e9 {
		t.Errorf("Len %d, Stats %d, r59 %+v; want grown past 1, stats of each, r59 refused for 1 s", g.Len(), len(g.Stats()), *out["r59"])
	}
	if rep := g.Autoscaling(60e9); rep == nil {
		t.Error("Autoscaling = nil; want the autoscaler's report")
	}
	_, err = NewGateway(Config{Replicas: replicas(2, sim.DefaultConfig()), Autoscale: as,
		Gateway: &GatewayConfig{Pools: []Pool{{"a", []int{0}}, {"b", []int{1}}}}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Gateway.Pools" {
		t.Errorf("pools of an autoscaled fleet: %v; want a Gateway.Pools error", err)
	}
}

// A gateway cannot front a prefill/decode split yet: a Gateway error.
func TestGatewayRefusesASplit(t *testing.T) {
	_, err := NewGateway(Config{Replicas: replicas(2, sim.DefaultConfig()), Disagg: &Disaggregation{}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Gateway" || !strings.Contains(err.Error(), "prefill/decode split") {
		t.Errorf("NewGateway(split) = %v; want a Gateway error", err)
	}
}
