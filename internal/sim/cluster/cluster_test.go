package cluster

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
)

func replicas(n int, cfg sim.Config) []sim.Config {
	out := make([]sim.Config, n)
	for i := range out {
		out[i] = cfg
	}
	return out
}

func TestNewErrors(t *testing.T) {
	bad := sim.DefaultConfig()
	bad.GPU = "tpu-v9"
	good := sim.DefaultConfig()
	tests := []struct {
		name    string
		cfg     Config
		field   string
		replica int
		want    string
	}{
		{"no replicas", Config{}, "Replicas", -1, "at least one replica"},
		{"unknown policy", Config{Replicas: replicas(2, good), Router: Router{Policy: "random"}},
			"Policy", -1, `unknown router policy "random" (want round-robin, least-outstanding, least-kv, prefix-aware, session-affinity, dp-balance)`},
		{"rejected replica", Config{Replicas: []sim.Config{good, good, bad}}, "Replicas", 2, "replica 3: GPU: "},
		{"load cap off prefix-aware", Config{Replicas: replicas(1, good), Router: Router{Policy: PolicyRoundRobin, LoadCap: 4}},
			"LoadCap", -1, "applies to prefix-aware routing only"},
		{"negative load cap", Config{Replicas: replicas(1, good), Router: Router{Policy: PolicyPrefixAware, LoadCap: -2}},
			"LoadCap", -1, "load cap -2 must be ≥ 1"},
		{"negative prefix tokens", Config{Replicas: replicas(1, good), Router: Router{Policy: PolicyPrefixAware, PrefixTokens: -1}},
			"PrefixTokens", -1, "prefix tokens -1"},
		{"prefix tokens off prefix-aware", Config{Replicas: replicas(1, good), Router: Router{Policy: PolicyLeastKV, PrefixTokens: 10}},
			"PrefixTokens", -1, "apply to prefix-aware routing only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || ce.Replica != tt.replica || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v; want a *ConfigError{Field: %q, Replica: %d} saying %q", err, tt.field, tt.replica, tt.want)
			}
			if tt.replica >= 0 {
				var se *sim.ConfigError
				if !errors.As(err, &se) || se.Field != "GPU" {
					t.Errorf("New = %v; want it to wrap the engine's *sim.ConfigError for gpu", err)
				}
			}
		})
	}
}

func TestParseRouter(t *testing.T) {
	tests := []struct {
		in    string
		want  Router
		field string // error's field; "" for none
	}{
		{"round-robin", Router{Policy: PolicyRoundRobin}, ""},
		{"Least-Outstanding", Router{Policy: PolicyLeastOutstanding}, ""},
		{"least-kv", Router{Policy: PolicyLeastKV}, ""},
		{"session-affinity", Router{Policy: PolicySessionAffinity}, ""},
		{"prefix-aware", Router{Policy: PolicyPrefixAware}, ""},
		{"prefix-aware:cap=4", Router{Policy: PolicyPrefixAware, LoadCap: 4}, ""},
		{"prefix-aware:cap=none,tokens=65536", Router{Policy: PolicyPrefixAware, LoadCap: NoLoadCap, PrefixTokens: 65536}, ""},
		{"", Router{}, "Policy"},
		{"random", Router{}, "Policy"},
		{"round-robin:cap=2", Router{}, "Policy"},
		{"prefix-aware:", Router{}, "Policy"},
		{"prefix-aware:cap", Router{}, "Policy"},
		{"prefix-aware:cap=0", Router{}, "LoadCap"},
		{"prefix-aware:cap=-1", Router{}, "LoadCap"},
		{"prefix-aware:cap=99999999999", Router{}, "LoadCap"},
		{"prefix-aware:tokens=x", Router{}, "PrefixTokens"},
		{"prefix-aware:cap=2,cap=3", Router{}, "Policy"},
		{"prefix-aware:size=2", Router{}, "Policy"},
	}
	for _, tt := range tests {
		got, err := ParseRouter(tt.in)
		var ce *ConfigError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("ParseRouter(%q) error = %v; want none", tt.in, err)
		case tt.field == "" && got != tt.want:
			t.Errorf("ParseRouter(%q) = %+v; want %+v", tt.in, got, tt.want)
		case tt.field != "" && (!errors.As(err, &ce) || ce.Field != tt.field):
			t.Errorf("ParseRouter(%q) error = %v; want a *ConfigError for %s", tt.in, err, tt.field)
		}
	}
}

// FuzzParseRouter: any input parses or fails cleanly, and what parses
// is a valid router that its String reads back as.
func FuzzParseRouter(f *testing.F) {
	for _, s := range []string{"round-robin", "prefix-aware:cap=8", "prefix-aware:cap=none,tokens=100", "session-affinity:x=1", "", ":", "prefix-aware:,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRouter(s)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseRouter(%q) error %v: want a one-line *ConfigError", s, err)
			}
			return
		}
		if err := r.check(); err != nil {
			t.Fatalf("ParseRouter(%q) = %+v, which New rejects: %v", s, r, err)
		}
		back, err := ParseRouter(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRouter(%q) = %+v; its String %q reads back as %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// arrival is a request due at at (ns).
type arrival struct {
	at  int64
	req Request
}

// drive runs arrivals through c in virtual time and returns every event
// with its time, as "T rN event" lines, and the routing, "id rN".
func drive(t *testing.T, c *Cluster, arrivals []arrival) (events, routes []string) {
	t.Helper()
	var now int64
	i := 0
	for {
		for i < len(arrivals) && arrivals[i].at <= now {
			r, err := c.Add(arrivals[i].at, arrivals[i].req)
			if err != nil {
				t.Fatal(err)
			}
			routes = append(routes, fmt.Sprintf("%s r%d", arrivals[i].req.ID, r+1))
			i++
		}
		until := int64(math.MaxInt64)
		if i < len(arrivals) {
			until = arrivals[i].at
		}
		end, evs := c.Step(now, until)
		for _, b := range evs {
			for _, ev := range b.Events {
				events = append(events, fmt.Sprintf("%d r%d %s", end, b.Replica+1, formatEvent(ev)))
			}
		}
		if end == now && len(evs) == 0 {
			if i == len(arrivals) {
				if c.Busy() {
					t.Fatal("the cluster is busy but runs nothing")
				}
				return events, routes
			}
			end = arrivals[i].at
		}
		now = end
	}
}

// workload is n requests arriving Poisson at rate req/s, a quarter of
// them sharing one of four 256-token prefixes, every tenth of a session.
func workload(n int, rate float64, seed uint64) []arrival {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]arrival, n)
	var t float64
	for i := range out {
		t += rng.ExpFloat64() / rate
		r := Request{Request: sim.Request{ID: "r" + strconv.Itoa(i), PromptTokens: 200 + rng.IntN(1800), OutputTokens: 1 + rng.IntN(300)}}
		if rng.IntN(4) == 0 {
			p := uint64(rng.IntN(4))
			r.BlockHashes = []uint64{p*100 + 1, p*100 + 2}
			r.HashBlockTokens = 128
		}
		if i%10 == 0 {
			r.Session = "s" + strconv.Itoa(rng.IntN(5))
		}
		out[i] = arrival{at: int64(t * 1e9), req: r}
	}
	return out
}

// Each policy, run twice on the same arrivals, routes and times alike.
func TestDeterministic(t *testing.T) {
	arrivals := workload(400, 40, 3)
	for _, p := range Policies {
		t.Run(p, func(t *testing.T) {
			var runs [2][]string
			for k := range runs {
				c, err := New(Config{Replicas: replicas(4, sim.DefaultConfig()), Router: Router{Policy: p}})
				if err != nil {
					t.Fatal(err)
				}
				evs, routes := drive(t, c, arrivals)
				runs[k] = append(routes, evs...)
			}
			if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
				t.Errorf("two runs differ (-first +second):\n%s", diff)
			}
			if len(runs[0]) < 400*2 {
				t.Errorf("%d routes and events; want at least one token and one finish per request", len(runs[0]))
			}
		})
	}
}

// A cluster of one replica is the engine itself: the same events at the
// same times as a driver of the engine alone gives.
func TestOneReplicaIsTheEngine(t *testing.T) {
	arrivals := workload(300, 20, 5)
	c, err := New(Config{Replicas: replicas(1, sim.DefaultConfig())})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := drive(t, c, arrivals)

	e, err := sim.New(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var now int64
	i := 0
	for i < len(arrivals) || e.Busy() {
		for i < len(arrivals) && arrivals[i].at <= now {
			if err := e.Add(arrivals[i].at, arrivals[i].req.Request); err != nil {
				t.Fatal(err)
			}
			i++
		}
		end, evs := e.Step(now)
		if end == now && len(evs) == 0 {
			now = arrivals[i].at
			continue
		}
		// Arrivals during the iteration reach the engine at their time.
		for i < len(arrivals) && arrivals[i].at < end {
			if err := e.Add(arrivals[i].at, arrivals[i].req.Request); err != nil {
				t.Fatal(err)
			}
			i++
		}
		for _, ev := range evs {
			want = append(want, fmt.Sprintf("%d r1 %s", end, formatEvent(ev)))
		}
		now = end
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("one-replica cluster vs the engine (-engine +cluster):\n%s", diff)
	}
}

// An idle replica starts its iteration when its request arrives, not
// when a busy replica's iteration ends: b's first token comes one prefill
// after its own arrival, inside a's long prefill.
func TestIdleReplicaStartsOnArrival(t *testing.T) {
	c, err := New(Config{Replicas: replicas(2, sim.DefaultConfig())})
	if err != nil {
		t.Fatal(err)
	}
	arrivals := []arrival{
		{0, Request{Request: sim.Request{ID: "a", PromptTokens: 8000, OutputTokens: 1}}},
		{1_000_000, Request{Request: sim.Request{ID: "b", PromptTokens: 100, OutputTokens: 1}}},
	}
	evs, routes := drive(t, c, arrivals)
	if diff := cmp.Diff([]string{"a r1", "b r2"}, routes); diff != "" {
		t.Fatalf("routes (-want +got):\n%s", diff)
	}
	// b alone on an H100: its one-step prefill, measured by the engine.
	e, _ := sim.New(sim.DefaultConfig())
	_ = e.Add(0, sim.Request{ID: "b", PromptTokens: 100, OutputTokens: 1})
	prefill, _ := e.Step(0)
	want := fmt.Sprintf("%d r2 b+1", 1_000_000+prefill)
	if len(evs) < 1 || evs[0] != want {
		t.Errorf("first event %v; want %q (b on its own replica from its arrival)", evs, want)
	}
}

func TestAddErrors(t *testing.T) {
	c, err := New(Config{Replicas: replicas(2, sim.DefaultConfig())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(0, Request{Request: sim.Request{ID: "a", PromptTokens: 10, OutputTokens: 5}}); err != nil {
		t.Fatal(err)
	}
	// A duplicate of a request in flight on another replica.
	if r, err := c.Add(0, Request{Request: sim.Request{ID: "a", PromptTokens: 10, OutputTokens: 5}}); !errors.Is(err, sim.ErrInvalidRequest) || r != -1 {
		t.Errorf("Add(duplicate) = %d, %v; want -1 and an error wrapping sim.ErrInvalidRequest", r, err)
	}
	// A request the engine refuses counts nowhere.
	if r, err := c.Add(0, Request{Request: sim.Request{ID: "b", PromptTokens: 0, OutputTokens: 5}}); !errors.Is(err, sim.ErrInvalidRequest) || r != 1 {
		t.Errorf("Add(no prompt) = %d, %v; want replica 1 and an error wrapping sim.ErrInvalidRequest", r, err)
	}
	if st := c.Stats(); st[0].Outstanding != 1 || st[1].Outstanding != 0 || st[1].Routed != 0 {
		t.Errorf("Stats = %+v; want 1 outstanding on replica 0 and nothing on replica 1", st)
	}
}

// The prefix index forgets least recently routed blocks first, a
// sequence's tail before its head, within its token bound.
func TestPrefixIndexBound(t *testing.T) {
	p := newPrefixIndex(64) // four 16-token blocks
	a := chainKeys(nil, []uint64{1, 2, 3}, 16)
	b := chainKeys(nil, []uint64{9, 8}, 16)
	p.learn(a, 16)
	p.learn(b, 16) // five blocks: a's tail goes
	if got := p.match(a); got != 2 {
		t.Errorf("match(a) = %d; want 2 (its third block forgotten)", got)
	}
	if got := p.match(b); got != 2 {
		t.Errorf("match(b) = %d; want 2", got)
	}
	if p.tokens != 64 || len(p.at) != 4 {
		t.Errorf("index holds %d tokens in %d keys; want 64 in 4", p.tokens, len(p.at))
	}
	// Another granularity never matches: the keys differ.
	if got := p.match(chainKeys(nil, []uint64{1, 2}, 512)); got != 0 {
		t.Errorf("match(512-token blocks) = %d; want 0", got)
	}
}
