package cli

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in    string
		rate  float64
		burst float64
		err   string
	}{
		{"20", 20, 0, ""},
		{"20/s", 20, 0, ""},
		{"1200/min,burst=40", 20, 40, ""},
		{"0.5/s,burst=1", 0.5, 1, ""},
		{"0/s", 0, 0, `--rate-limit "0/s": rate "0": want a number > 0`},
		{"5/h", 0, 0, `unit "h": want /s or /min`},
		{"5/s,burst=0.5", 0, 0, `burst "0.5": want a number ≥ 1`},
		{"5/s,cap=3", 0, 0, `"cap=3": want burst=N after the rate`},
		{"NaN", 0, 0, `rate "NaN"`},
	} {
		b, err := parseRate("--rate-limit", tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseRate(%q) = %v; want an error saying %q", tt.in, err, tt.err)
			}
		case err != nil || b.Rate != tt.rate || b.Burst != tt.burst:
			t.Errorf("parseRate(%q) = %+v, %v; want rate %v burst %v", tt.in, b, err, tt.rate, tt.burst)
		}
	}
}

// The flags build the gateway: class pools in order, the small-model
// replicas a pool after them running --small-model, the rest of the
// replicas pool 0 when there are no class pools.
func TestGatewayApply(t *testing.T) {
	eng := sim.DefaultConfig()
	cc := &cluster.Config{Replicas: []sim.Config{eng, eng, eng, eng}}
	g := gatewayFlags{pools: "interactive=1-2,batch=3", degrade: "small-model:4", degradeAbove: "3/replica", smallModel: "qwen2.5-7b"}
	if err := g.apply(&cc, eng); err != nil {
		t.Fatal(err)
	}
	gc := cc.Gateway
	names := []string{}
	for _, p := range gc.Pools {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"interactive", "batch", "small"}) || !slices.Equal(gc.Pools[0].Replicas, []int{0, 1}) ||
		!slices.Equal(gc.ClassPools, []int{0, 1}) || gc.Degrade.Pool != 2 || gc.Degrade.Above != 3 || !gc.Degrade.PerReplica || cc.Replicas[3].Model != "qwen2.5-7b" || cc.Replicas[2].Model != eng.Model {
		t.Errorf("gateway %+v, degrade %+v", gc, gc.Degrade)
	}
	var one *cluster.Config
	if err := (&gatewayFlags{degrade: "small-model:2"}).apply(&one, eng); err == nil || !strings.Contains(err.Error(), "replicas \"2\": want 1 ≤ A ≤ B ≤ 1") {
		t.Errorf("small-model of one replica: %v", err)
	}
	one = nil
	if err := (&gatewayFlags{rateLimit: "5/s"}).apply(&one, eng); err != nil || one == nil || len(one.Replicas) != 1 || one.Gateway.Requests.Rate != 5 {
		t.Errorf("a gateway in front of one engine: %+v, %v", one, err)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"20/s", "1200/min,burst=40", "0", "1e309/s", "-1", "5/s,burst=", "/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseRate("--rate-limit", s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of two lines: %q", err)
			}
			return
		}
		if s == "" {
			if b != nil {
				t.Fatal("a limit from nothing")
			}
			return
		}
		if !(b.Rate > 0) || math.IsInf(b.Rate, 0) || b.Burst != 0 && !(b.Burst >= 1) || math.IsInf(b.Burst, 0) {
			t.Fatalf("parseRate(%q) = %+v accepted", s, b)
		}
	})
}

func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"0.8,0.2", "1,1,1", "0,0", "1", "x,1", "NaN,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMix(s)
		if err != nil {
			return
		}
		var total float64
		for _, v := range m {
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("share %v accepted", v)
			}
			total += v
		}
		if len(m) < 2 || !(total > 0) {
			t.Fatalf("parseMix(%q) = %v accepted", s, m)
		}
		if c := cluster.ClassOf(m, 1, 3); c < 0 || c >= len(m) {
			t.Fatalf("class %d of %d", c, len(m))
		}
	})
}

func FuzzParsePools(f *testing.F) {
	for _, s := range []string{"interactive=1-6,batch=7-8", "1-4,5-8", "1,2", "a=0-3", "a=3-1,b=4", "x=1-99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := parsePools(s, 8)
		if err != nil {
			return
		}
		for _, p := range ps {
			if len(p.Replicas) == 0 {
				t.Fatalf("empty pool from %q", s)
			}
			for _, i := range p.Replicas {
				if i < 0 || i >= 8 {
					t.Fatalf("replica %d from %q", i, s)
				}
			}
		}
	})
}

func FuzzParseDegrade(f *testing.F) {
	for _, s := range []string{"max_tokens:256", "reasoning:0", "small-model:7-8", "max_tokens:0", "shed:1", "reasoning"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, reps, err := parseDegrade(s, 8)
		if err != nil {
			return
		}
		switch d.Action {
		case cluster.DegradeMaxTokens:
			if d.Value < 1 {
				t.Fatalf("cap %d from %q", d.Value, s)
			}
		case cluster.DegradeReasoning:
			if d.Value < 0 {
				t.Fatalf("budget %d from %q", d.Value, s)
			}
		case cluster.DegradeSmallModel:
			if len(reps) == 0 || reps[0] < 0 || reps[len(reps)-1] >= 8 {
				t.Fatalf("replicas %v from %q", reps, s)
			}
		default:
			t.Fatalf("action %q from %q", d.Action, s)
		}
	})
}

func FuzzParseDegradeAbove(f *testing.F) {
	for _, s := range []string{"", "8", "8/replica", "-1", "x/replica", "/replica"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, per, err := parseDegradeAbove(s)
		if err != nil {
			return
		}
		if n < 0 || per && !strings.HasSuffix(s, "/replica") {
			t.Fatalf("parseDegradeAbove(%q) = %d, %v", s, n, per)
		}
	})
}
