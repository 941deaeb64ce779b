package cluster

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim"
)

const sec = int64(time.Second)

// scripted is a cluster of initial default replicas under a with its
// signal replaced by script (the value at each tick, by tick time in
// seconds; 0 for a tick not listed).
func scripted(t *testing.T, initial int, a Autoscale, script map[int64]float64) *Cluster {
	t.Helper()
	a.Signal, a.Threshold = SignalQueue, 1 // scale up above 1, down below 0.5
	c, err := New(Config{Replicas: replicas(initial, sim.DefaultConfig()), Autoscale: &a})
	if err != nil {
		t.Fatal(err)
	}
	c.as.read = func(at int64) float64 { return script[at/sec] }
	return c
}

// The controller on a scripted signal: every 10 s, up above 1 and down
// below 0.5, one replica at a time, 30 s cooldown, 25 s provisioning, 1 to
// 4 replicas, 2 at the start.
func TestAutoscaleDecisions(t *testing.T) {
	high := map[int64]float64{}
	for s := int64(10); s <= 70; s += 10 {
		high[s] = 2
	}
	c := scripted(t, 2, Autoscale{Min: 1, Max: 4, Interval: 10 * time.Second, Cooldown: 30 * time.Second, ProvisionDelay: 25 * time.Second}, high)
	c.advance(200 * sec)
	rep := c.Autoscaling(200 * sec)
	// t=10 high: 2→3 (ready 35). 20, 30: cooldown. 40 high: 3→4 (ready
	// 65). 50, 60: cooldown. 70 high but at the maximum: nothing (and no
	// new cooldown). 80 low: 4→3, the highest active (slot 3, idle) goes at
	// once. 90, 100: cooldown. 110: 3→2. 140: 2→1. 170: at the minimum.
	wantD := []ScaleDecision{{10 * sec, 2, 2, 3}, {40 * sec, 2, 3, 4}, {80 * sec, 0, 4, 3}, {110 * sec, 0, 3, 2}, {140 * sec, 0, 2, 1}}
	if diff := cmp.Diff(wantD, rep.Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	wantT := []ReplicaCount{{0, 2, 0, 0}, {10 * sec, 2, 1, 0}, {35 * sec, 3, 0, 0}, {40 * sec, 3, 1, 0}, {65 * sec, 4, 0, 0},
		{80 * sec, 3, 0, 0}, {110 * sec, 2, 0, 0}, {140 * sec, 1, 0, 0}}
	if diff := cmp.Diff(wantT, rep.Timeline); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	// GPU-seconds to 200 s, one GPU each: replica 1 0–200 (200), replica
	// 2 0–140 (140), replica 3 10–110 (100), replica 4 40–80 (40): 480
	// GPU-s = 0.1333 GPU-hours.
	if math.Abs(rep.GPUHours-480.0/3600) > 1e-12 {
		t.Errorf("GPU-hours %v; want 480/3600", rep.GPUHours)
	}
	if rep.Start != 2 || rep.Peak != 4 || rep.Final != 1 {
		t.Errorf("start, peak, final %d, %d, %d; want 2, 4, 1", rep.Start, rep.Peak, rep.Final)
	}
}

// No scale-down before the window has filled: at a steady load the first
// ticks read a signal of a few seconds (here, from t=10 s on, below the
// down threshold), and two replicas cut to one at 10 s walked into
// overload. With a 60 s window the first scale-down is at 60 s; a
// scale-up needs no full window.
func TestAutoscaleDownAfterWindow(t *testing.T) {
	c := scripted(t, 2, Autoscale{Min: 1, Max: 4, Interval: 10 * time.Second, Window: 60 * time.Second, Cooldown: 60 * time.Second, ProvisionDelay: 120 * time.Second}, map[int64]float64{})
	c.advance(59 * sec)
	if rep := c.Autoscaling(59 * sec); len(rep.Decisions) != 0 {
		t.Errorf("decisions before the 60 s window filled: %+v; want none", rep.Decisions)
	}
	c.advance(60 * sec)
	want := []ScaleDecision{{60 * sec, 0, 2, 1}}
	if diff := cmp.Diff(want, c.Autoscaling(60*sec).Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}

	// Up at once: a burst in the first interval adds a replica at 10 s.
	c = scripted(t, 2, Autoscale{Min: 1, Max: 4, Interval: 10 * time.Second, Window: 60 * time.Second}, map[int64]float64{10: 3})
	c.advance(10 * sec)
	if diff := cmp.Diff([]ScaleDecision{{10 * sec, 3, 2, 3}}, c.Autoscaling(10*sec).Decisions); diff != "" {
		t.Errorf("scale-up decisions (-want +got):\n%s", diff)
	}
}

// A scale-down while a replica provisions cancels it (paid for until
// then); a tensor-parallel replica costs its GPUs; steps of 2 bounded by
// the minimum and maximum.
func TestAutoscaleCancelAndSteps(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.TP = 2
	a := Autoscale{Signal: SignalQueue, Threshold: 1, Min: 1, Max: 3, UpStep: 2, DownStep: 2, Interval: 10 * time.Second, Window: 30 * time.Second, ProvisionDelay: 50 * time.Second}
	c, err := New(Config{Replicas: replicas(1, cfg), Autoscale: &a})
	if err != nil {
		t.Fatal(err)
	}
	script := map[int64]float64{10: 5, 20: 0.7, 30: 0}
	c.as.read = func(at int64) float64 { return script[at/sec] }
	c.advance(40 * sec)
	rep := c.Autoscaling(40 * sec)
	// 10: 1→3 (two provisioning, ready 60). 20: 0.7 is between the
	// thresholds: nothing. 30: 3→1, both provisioning ones cancelled. 40:
	// at the minimum.
	wantD := []ScaleDecision{{10 * sec, 5, 1, 3}, {30 * sec, 0, 3, 1}}
	if diff := cmp.Diff(wantD, rep.Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	wantT := []ReplicaCount{{0, 1, 0, 0}, {10 * sec, 1, 2, 0}, {30 * sec, 1, 0, 0}}
	if diff := cmp.Diff(wantT, rep.Timeline); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	// 2 GPUs each: replica 1 0–40 (80 GPU-s), two 10–30 (2 × 40): 160.
	if math.Abs(rep.GPUHours-160.0/3600) > 1e-12 {
		t.Errorf("GPU-hours %v; want 160/3600", rep.GPUHours)
	}
	// The slots are reused: a later scale-up takes replica 2 again.
	script[50] = 5
	c.advance(50 * sec)
	if got := c.Len(); got != 3 {
		t.Errorf("%d slots; want 3 (freed ones reused)", got)
	}
}

// Requests never go to a provisioning or draining replica, whatever the
// router; a draining replica goes when its last request ends, and its
// time until then is paid for.
func TestRoutersSkipInactive(t *testing.T) {
	for _, p := range Policies {
		if p == PolicyDPBalance {
			continue // checked below with the rest: same loop
		}
		t.Run(p, func(t *testing.T) { skipInactive(t, p) })
	}
	t.Run(PolicyDPBalance, func(t *testing.T) { skipInactive(t, PolicyDPBalance) })
}

func skipInactive(t *testing.T, policy string) {
	a := Autoscale{Signal: SignalQueue, Threshold: 1, Min: 1, Max: 3, Interval: 10 * time.Second, ProvisionDelay: 100 * time.Second}
	c, err := New(Config{Replicas: replicas(2, sim.DefaultConfig()), Router: Router{Policy: policy}, Autoscale: &a})
	if err != nil {
		t.Fatal(err)
	}
	// 10 s: up to 3 (replica 3 provisioning until 110 s). 120 s: down to
	// 2, replica 3 (the highest active) drains. Otherwise between the
	// thresholds: nothing.
	script := map[int64]float64{10: 5, 120: 0}
	c.as.read = func(at int64) float64 {
		if v, ok := script[at/sec]; ok {
			return v
		}
		return 0.7
	}
	add := func(at int64, id string, prompt, output int) int {
		t.Helper()
		i, err := c.Add(at, Request{Request: sim.Request{ID: id, PromptTokens: prompt, OutputTokens: output}, Session: id})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	run := func(until int64) {
		t.Helper()
		now := until - 5*sec
		for c.Busy() {
			end, _ := c.Step(now, until)
			if end >= until {
				return
			}
			now = end
		}
	}
	for k := range 12 {
		if i := add(20*sec+int64(k)*sec, fmt.Sprintf("p%d", k), 100, 2); i == 2 {
			t.Fatalf("request p%d went to replica 3, provisioning", k)
		}
		run(20*sec + int64(k+1)*sec)
	}
	// Replica 3 active from 110 s: with the others loaded, it gets work.
	got3 := false
	for k := range 12 {
		i := add(111*sec, fmt.Sprintf("a%d", k), 2000, 200)
		got3 = got3 || i == 2
	}
	if !got3 {
		t.Fatal("no request went to replica 3 once active")
	}
	// Past 120 s replica 3 drains: new requests go elsewhere, and it
	// goes when its last request ends.
	c.advance(120 * sec)
	if c.reps[2].state != stateDraining {
		t.Fatalf("replica 3 is in state %d at 120 s; want draining (busy)", c.reps[2].state)
	}
	for k := range 6 {
		if i := add(121*sec, fmt.Sprintf("d%d", k), 100, 2); i == 2 {
			t.Fatalf("request d%d went to replica 3, draining", k)
		}
	}
	now := 121 * sec
	for c.Busy() {
		end, _ := c.Step(now, math.MaxInt64)
		now = end
	}
	if c.reps[2].state != stateGone {
		t.Fatalf("replica 3 is in state %d after its requests; want gone", c.reps[2].state)
	}
	rep := c.Autoscaling(now)
	last := rep.Timeline[len(rep.Timeline)-1]
	if last.Active != 2 || last.Draining != 0 || last.At <= 120*sec {
		t.Errorf("last count %+v; want 2 active after 120 s", last)
	}
	// Paid: replicas 1, 2 for the whole run, replica 3 from 10 s to its
	// removal.
	want := float64(2*now+last.At-10*sec) / float64(time.Hour)
	if math.Abs(rep.GPUHours-want) > 1e-12 {
		t.Errorf("GPU-hours %v; want %v", rep.GPUHours, want)
	}
	if s := c.Snapshot(); s.Finished != 12+12+6 {
		t.Errorf("finished %d; want 30 (a removed replica's counters kept)", s.Finished)
	}
}

// The signals read by hand.
func TestAutoscaleSignals(t *testing.T) {
	// util: one replica, one request whose single iteration (prefill and
	// its one token) takes d, at 1 s; the first tick (10 s, window 10 s)
	// reads d / 10 s.
	e, _ := sim.New(sim.DefaultConfig())
	_ = e.Add(0, sim.Request{ID: "x", PromptTokens: 4000, OutputTokens: 1})
	d, _ := e.Step(0)
	// queue: MaxNumSeqs 1, five requests at 9 s: one runs, four wait.
	one := sim.DefaultConfig()
	one.MaxNumSeqs = 1
	tests := []struct {
		name   string
		signal string
		cfg    sim.Config
		reqs   [][3]int64 // arrival s, prompt and output tokens
		want   float64
	}{
		{"util", SignalUtil, sim.DefaultConfig(), [][3]int64{{1, 4000, 1}}, float64(d) / 1e10},
		{"queue", SignalQueue, one, [][3]int64{{9, 4000, 400}, {9, 4000, 400}, {9, 4000, 400}, {9, 4000, 400}, {9, 4000, 400}}, 4},
		{"idle util", SignalUtil, sim.DefaultConfig(), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A tiny threshold: the first tick scales, recording the value.
			a := Autoscale{Signal: tt.signal, Threshold: 1e-9, Max: 2, Interval: 10 * time.Second, Window: 10 * time.Second}
			c, err := New(Config{Replicas: []sim.Config{tt.cfg}, Autoscale: &a})
			if err != nil {
				t.Fatal(err)
			}
			var arrivals []arrival
			for k, r := range tt.reqs {
				arrivals = append(arrivals, arrival{at: r[0] * sec, req: Request{Request: sim.Request{ID: strconv.Itoa(k), PromptTokens: int(r[1]), OutputTokens: int(r[2])}}})
			}
			drive(t, c, arrivals)
			c.advance(10 * sec)
			rep := c.Autoscaling(0)
			if tt.want == 0 {
				if len(rep.Decisions) != 0 {
					t.Errorf("decisions %+v; want none (signal 0)", rep.Decisions)
				}
				return
			}
			if len(rep.Decisions) == 0 || math.Abs(rep.Decisions[0].Value-tt.want) > 1e-9 {
				t.Errorf("decisions %+v; want the first at 10 s reading %v", rep.Decisions, tt.want)
			}
		})
	}
}

// p95-ttft: two requests alone on an idle replica have TTFTs of their
// prefill each, measured on the engine alone; p95 of {a, b}, a < b, is
// a + 0.95 (b − a).
func TestAutoscaleP95Signal(t *testing.T) {
	prefill := func(n int) int64 {
		e, _ := sim.New(sim.DefaultConfig())
		_ = e.Add(0, sim.Request{ID: "x", PromptTokens: n, OutputTokens: 1})
		d, _ := e.Step(0)
		return d
	}
	a, b := prefill(500), prefill(6000)
	as := Autoscale{Signal: SignalP95TTFT, Threshold: 1e-9, Max: 2, Interval: 10 * time.Second, Window: 10 * time.Second}
	c, err := New(Config{Replicas: replicas(1, sim.DefaultConfig()), Autoscale: &as})
	if err != nil {
		t.Fatal(err)
	}
	drive(t, c, []arrival{
		{1 * sec, Request{Request: sim.Request{ID: "a", PromptTokens: 500, OutputTokens: 1}}},
		{5 * sec, Request{Request: sim.Request{ID: "b", PromptTokens: 6000, OutputTokens: 1}}},
	})
	c.advance(10 * sec)
	want := (float64(a) + 0.95*float64(b-a)) / 1e9
	if d := c.Autoscaling(0).Decisions; len(d) == 0 || math.Abs(d[0].Value-want) > 1e-12 {
		t.Errorf("decisions %+v; want the first reading %v s", d, want)
	}
	// percentile by hand: 1..20, p95 at rank 0.95 × 19 = 18.05: 19.05.
	vs := make([]float64, 20)
	for i := range vs {
		vs[len(vs)-1-i] = float64(i + 1)
	}
	if got := percentile(vs, 95); math.Abs(got-19.05) > 1e-12 {
		t.Errorf("percentile(1..20, 95) = %v; want 19.05", got)
	}
}

func TestAutoscaleConfigErrors(t *testing.T) {
	good := Autoscale{Signal: SignalQueue, Threshold: 4, Max: 4}
	tests := []struct {
		name    string
		mod     func(*Autoscale)
		initial int
		ep      bool
		field   string
		want    string
	}{
		{"unknown signal", func(a *Autoscale) { a.Signal = "gpu" }, 1, false, "Signal", `unknown autoscaling signal "gpu" (want p95-ttft, queue, kv, util)`},
		{"no threshold", func(a *Autoscale) { a.Threshold = 0 }, 1, false, "Threshold", "threshold 0 must be > 0"},
		{"util above 1", func(a *Autoscale) { a.Signal, a.Threshold = SignalUtil, 70 }, 1, false, "Threshold", "a fraction"},
		{"down above up", func(a *Autoscale) { a.DownThreshold = 5 }, 1, false, "DownThreshold", "below the threshold 4"},
		{"min above max", func(a *Autoscale) { a.Min = 5 }, 5, false, "Max", "maximum 4 replicas is below the minimum 5"},
		{"no max", func(a *Autoscale) { a.Max = 0 }, 1, false, "Max", "below the minimum 1"},
		{"negative min", func(a *Autoscale) { a.Min = -1 }, 1, false, "Min", "want ≥ 1"},
		{"start below min", func(a *Autoscale) { a.Min = 2 }, 1, false, "Min", "starts with 1 replicas, below the minimum 2"},
		{"start above max", nil, 5, false, "Max", "starts with 5 replicas, above the maximum 4"},
		{"negative delay", func(a *Autoscale) { a.ProvisionDelay = -time.Second }, 1, false, "ProvisionDelay", "provisioning delay -1s"},
		{"negative cooldown", func(a *Autoscale) { a.Cooldown = -1 }, 1, false, "Cooldown", "cooldown"},
		{"negative interval", func(a *Autoscale) { a.Interval = -1 }, 1, false, "Interval", "interval"},
		{"negative window", func(a *Autoscale) { a.Window = -1 }, 1, false, "Window", "window"},
		{"negative step", func(a *Autoscale) { a.UpStep = -1 }, 1, false, "UpStep", "step"},
		{"negative down step", func(a *Autoscale) { a.DownStep = -1 }, 1, false, "DownStep", "step"},
		{"too many", func(a *Autoscale) { a.Max = 70000 }, 1, false, "Max", "too many"},
		{"lockstep", nil, 1, true, "ExpertParallel", "not expert-parallel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := good
			if tt.mod != nil {
				tt.mod(&a)
			}
			err := a.check(tt.initial, tt.ep)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "Autoscale."+tt.field || ce.Replica != -1 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("check = %v; want a *ConfigError{Field: Autoscale.%s} saying %q", err, tt.field, tt.want)
			}
		})
	}
	// Through New too.
	a := good
	a.Signal = "gpu"
	if _, err := New(Config{Replicas: replicas(1, sim.DefaultConfig()), Autoscale: &a}); err == nil {
		t.Error("New accepted an unknown signal")
	}
	if err := good.check(1, false); err != nil {
		t.Errorf("check(good) = %v", err)
	}
}

func TestParseAutoscaleRule(t *testing.T) {
	tests := []struct {
		in    string
		want  Autoscale
		field string
	}{
		{"p95-ttft:2s", Autoscale{Signal: SignalP95TTFT, Threshold: 2}, ""},
		{"P95-TTFT:1500ms,500ms", Autoscale{Signal: SignalP95TTFT, Threshold: 1.5, DownThreshold: 0.5}, ""},
		{"queue:8", Autoscale{Signal: SignalQueue, Threshold: 8}, ""},
		{"kv:0.8,0.3", Autoscale{Signal: SignalKV, Threshold: 0.8, DownThreshold: 0.3}, ""},
		{"util:0.7", Autoscale{Signal: SignalUtil, Threshold: 0.7}, ""},
		{"gpu:0.7", Autoscale{}, "Signal"},
		{"", Autoscale{}, "Signal"},
		{"queue", Autoscale{}, "Threshold"},
		{"queue:", Autoscale{}, "Threshold"},
		{"queue:x", Autoscale{}, "Threshold"},
		{"queue:-1", Autoscale{}, "Threshold"},
		{"queue:NaN", Autoscale{}, "Threshold"},
		{"p95-ttft:2", Autoscale{}, "Threshold"},
		{"util:70", Autoscale{}, "Threshold"},
		{"queue:8,9", Autoscale{}, "DownThreshold"},
		{"queue:8,0", Autoscale{}, "DownThreshold"},
		{"queue:8,y", Autoscale{}, "DownThreshold"},
	}
	for _, tt := range tests {
		got, err := ParseAutoscaleRule(tt.in)
		if tt.field == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseAutoscaleRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "Autoscale."+tt.field {
			t.Errorf("ParseAutoscaleRule(%q) = %+v, %v; want a *ConfigError for Autoscale.%s", tt.in, got, err, tt.field)
		}
	}
	if s := (Autoscale{Signal: SignalP95TTFT, Threshold: 2}).String(); s != "p95-ttft > 2s" {
		t.Errorf("String = %q", s)
	}
}

// Whatever the input, ParseAutoscaleRule returns a rule that validates
// and reads back from its RuleString, or a *ConfigError; never a panic.
func FuzzParseAutoscaleRule(f *testing.F) {
	for _, s := range []string{"p95-ttft:2s", "p95-ttft:1500ms,500ms", "queue:8", "kv:0.8,0.3", "util:0.7", "util:1", "queue:1e3,1e-3", "gpu:1", ":", "queue:8,9,", "p95-ttft:-1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAutoscaleRule(s)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, "Autoscale.") {
				t.Fatalf("ParseAutoscaleRule(%q) error %v is not a *ConfigError of an Autoscale field", s, err)
			}
			return
		}
		a.Max = 1
		if err := a.check(1, false); err != nil {
			t.Fatalf("ParseAutoscaleRule(%q) = %+v, which check rejects: %v", s, a, err)
		}
		back, err := ParseAutoscaleRule(a.RuleString())
		if err != nil {
			t.Fatalf("ParseAutoscaleRule(%q) = %+v; its RuleString %q does not read back: %v", s, a, a.RuleString(), err)
		}
		// p95-ttft levels round to the nanosecond in writing.
		if back.Signal != a.Signal || math.Abs(back.Threshold-a.Threshold) > 1e-9*max(1, a.Threshold) || math.Abs(back.DownThreshold-a.DownThreshold) > 1e-9*max(1, a.DownThreshold) {
			t.Fatalf("ParseAutoscaleRule(%q) = %+v; RuleString %q reads back as %+v", s, a, a.RuleString(), back)
		}
	})
}

// Two runs of one autoscaled cluster route, time and scale alike.
func TestAutoscaleDeterministic(t *testing.T) {
	arrivals := burstTrace(7, [][2]float64{{20, 2}, {20, 20}, {20, 2}}, 10)
	var runs [2][]string
	var reps [2]*AutoscaleReport
	for k := range runs {
		a := Autoscale{Signal: SignalP95TTFT, Threshold: 0.2, Max: 4, Interval: 5 * time.Second, Window: 10 * time.Second, ProvisionDelay: 5 * time.Second}
		c, err := New(Config{Replicas: replicas(1, sim.DefaultConfig()), Router: Router{Policy: PolicyLeastOutstanding}, Autoscale: &a})
		if err != nil {
			t.Fatal(err)
		}
		evs, routes := drive(t, c, arrivals)
		runs[k] = append(routes, evs...)
		reps[k] = c.Autoscaling(0)
	}
	if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(reps[0], reps[1]); diff != "" {
		t.Errorf("two reports differ (-first +second):\n%s", diff)
	}
	if len(reps[0].Decisions) == 0 {
		t.Error("the burst scaled nothing; the test checks too little")
	}
}

// burstTrace is Poisson arrivals over segments of (seconds, requests/s),
// prompts of 500–2,000 tokens and outputs of 50–350 tokens / outDiv.
func burstTrace(seed uint64, segs [][2]float64, outDiv int) []arrival {
	rng := rand.New(rand.NewPCG(seed, seed^0xb005))
	var out []arrival
	var t, from float64
	for _, s := range segs {
		to := from + s[0]
		for {
			t += rng.ExpFloat64() / s[1]
			if t >= to {
				t = to
				break
			}
			out = append(out, arrival{at: int64(t * 1e9), req: Request{Request: sim.Request{ID: "r" + strconv.Itoa(len(out)),
				PromptTokens: 500 + rng.IntN(1500), OutputTokens: (50 + rng.IntN(300)) / outDiv}}})
		}
		from = to
	}
	return out
}

// scaledRun drives arrivals through a cluster of cfg replicas under a,
// least-outstanding, and counts the requests whose TTFT (first token
// less arrival) exceeds slo.
func scaledRun(t *testing.T, cfg sim.Config, a Autoscale, arrivals []arrival, slo time.Duration) (misses int, rep *AutoscaleReport) {
	t.Helper()
	c, err := New(Config{Replicas: replicas(max(a.Min, 1), cfg), Router: Router{Policy: PolicyLeastOutstanding}, Autoscale: &a})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(map[string]int64, len(arrivals))
	for _, ar := range arrivals {
		sent[ar.req.ID] = ar.at
	}
	var now int64
	i := 0
	for {
		for i < len(arrivals) && arrivals[i].at <= now {
			if _, err := c.Add(arrivals[i].at, arrivals[i].req); err != nil {
				t.Fatal(err)
			}
			i++
		}
		until := int64(math.MaxInt64)
		if i < len(arrivals) {
			until = arrivals[i].at
		}
		end, evs := c.Step(now, until)
		for _, b := range evs {
			for _, ev := range b.Events {
				if at, ok := sent[ev.ID]; ok && ev.Kind == sim.EventTokens {
					if end-at > int64(slo) {
						misses++
					}
					delete(sent, ev.ID)
				}
			}
		}
		if end == now && len(evs) == 0 {
			if i == len(arrivals) {
				break
			}
			end = arrivals[i].at
		}
		now = end
	}
	if len(sent) != 0 {
		t.Fatalf("%d requests got no first token", len(sent))
	}
	return misses, c.Autoscaling(now)
}

// The must-show: on a burst trace, autoscaling on P95 TTFT misses
// fewer TTFT SLOs than autoscaling on GPU utilisation at about equal
// GPU-hours. qwen3-32b on one H100 per replica; 0.5 req/s for 10 min, 5
// req/s for 4 min, 0.5 req/s for 10 min (1,791 requests, outputs of
// 50–350 tokens); SLO TTFT ≤ 1 s; from 1 replica, decisions every 10 s
// over a 30 s window, 20 s cooldown, 30 s provisioning, up 2 / down 1.
//
// p95-ttft:1s (max 8) misses 226 (those queued on the first replica in
// the ~40 s before new ones serve) for 0.731 GPU-hours, going 1→8→1.
// Utilisation reads above 0.9 on one replica already at 0.5 req/s (a
// continuously batching engine has an iteration in flight whenever it
// holds a request), so a util:0.9 autoscaler climbs to its maximum early
// and stays near it: held to about the same GPU-hours (maximum 2, 0.789)
// it misses 1,091; with room to grow (maximum 8, measured in
// docs/simulator.md) it misses none but pays 2.0 GPU-hours.
func TestAutoscaleBurstP95VsUtil(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Model = "qwen3-32b"
	arrivals := burstTrace(1, [][2]float64{{600, 0.5}, {240, 5}, {600, 0.5}}, 1)
	base := Autoscale{Min: 1, Max: 8, UpStep: 2, Interval: 10 * time.Second, Window: 30 * time.Second, Cooldown: 20 * time.Second, ProvisionDelay: 30 * time.Second}
	p95, util := base, base
	p95.Signal, p95.Threshold = SignalP95TTFT, 1
	util.Signal, util.Threshold, util.Max = SignalUtil, 0.9, 2
	mp, rp := scaledRun(t, cfg, p95, arrivals, time.Second)
	mu, ru := scaledRun(t, cfg, util, arrivals, time.Second)
	t.Logf("%d requests; p95-ttft:1s %d misses, %.3f GPU-h (%d→%d→%d); util:0.9 max 2 %d misses, %.3f GPU-h (%d→%d→%d)",
		len(arrivals), mp, rp.GPUHours, rp.Start, rp.Peak, rp.Final, mu, ru.GPUHours, ru.Start, ru.Peak, ru.Final)
	if mp != 226 || mu != 1091 || math.Abs(rp.GPUHours-0.731) > 0.001 || math.Abs(ru.GPUHours-0.789) > 0.001 {
		// The simulation is deterministic: a change here is a change of
		// the engine or the controller, to look into and restate above.
		t.Errorf("figures moved from 226 / 0.731 and 1,091 / 0.789")
	}
	if r := rp.GPUHours / ru.GPUHours; r < 0.85 || r > 1.15 {
		t.Errorf("GPU-hours p95-ttft %.3f vs util %.3f: not comparable (ratio %.2f)", rp.GPUHours, ru.GPUHours, r)
	}
	if mp*3 > mu {
		t.Errorf("p95-ttft missed %d SLOs, util %d at equal GPU-hours; want p95-ttft under a third", mp, mu)
	}
	if rp.Peak < 4 || rp.Final != 1 || ru.Final != 2 {
		t.Errorf("p95-ttft peak %d, final %d; util final %d; want p95-ttft up for the burst and back to 1, util stuck at its maximum 2", rp.Peak, rp.Final, ru.Final)
	}
}
