package cluster

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/sim"
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
		{"0/s", 0, 0, `rate "0": want a number > 0`},
		{"5/h", 0, 0, `unit "h": want /s or /min`},
		{"5/s,burst=0.5", 0, 0, `burst "0.5": want a number ≥ 1`},
		{"5/s,cap=3", 0, 0, `"cap=3": want burst=N after the rate`},
		{"NaN", 0, 0, `rate "NaN"`},
	} {
		b, err := ParseRate(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseRate(%q) = %v; want an error saying %q", tt.in, err, tt.err)
			}
		case err != nil || b.Rate != tt.rate || b.Burst != tt.burst:
			t.Errorf("ParseRate(%q) = %+v, %v; want rate %v burst %v", tt.in, b, err, tt.rate, tt.burst)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"20/s", "1200/min,burst=40", "0", "1e309/s", "-1", "5/s,burst=", "/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseRate(s)
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
			t.Fatalf("ParseRate(%q) = %+v accepted", s, b)
		}
	})
}

func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"0.8,0.2", "1,1,1", "0,0", "1", "x,1", "NaN,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
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
			t.Fatalf("ParseMix(%q) = %v accepted", s, m)
		}
		if c := ClassOf(m, 1, 3); c < 0 || c >= len(m) {
			t.Fatalf("class %d of %d", c, len(m))
		}
	})
}

func FuzzParsePools(f *testing.F) {
	for _, s := range []string{"interactive=1-6,batch=7-8", "1-4,5-8", "1,2", "a=0-3", "a=3-1,b=4", "x=1-99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePools(s, 8)
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
		d, reps, err := ParseDegrade(s, 8)
		if err != nil {
			return
		}
		switch d.Action {
		case DegradeMaxTokens:
			if d.Value < 1 {
				t.Fatalf("cap %d from %q", d.Value, s)
			}
		case DegradeReasoning:
			if d.Value < 0 {
				t.Fatalf("budget %d from %q", d.Value, s)
			}
		case DegradeSmallModel:
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
		n, per, err := ParseDegradeAbove(s)
		if err != nil {
			return
		}
		if n < 0 || per && !strings.HasSuffix(s, "/replica") {
			t.Fatalf("ParseDegradeAbove(%q) = %d, %v", s, n, per)
		}
	})
}

func TestParseSplits(t *testing.T) {
	got, err := ParseSplits(" 1:3, 2 : 2,3:1")
	if err != nil || len(got) != 3 || got[0] != (Split{1, 3}) || got[1] != (Split{2, 2}) || got[2] != (Split{3, 1}) {
		t.Errorf("ParseSplits = %v, %v; want 1:3 2:2 3:1", got, err)
	}
	for _, bad := range []string{"", "1", "1:0", "0:1", "a:b", "1:3,1:2", "1:-1", "1:3,", strings.Repeat("1:1,", 17) + "1:1", "40000:40000"} {
		if r, err := ParseSplits(bad); err == nil {
			t.Errorf("ParseSplits(%q) = %v; want an error", bad, r)
		}
	}
}

// FuzzParseSplits: whatever it reads has pools ≥ 1 of one total, at most
// MaxSplits of them, and a refusal is an error, never a panic.
func FuzzParseSplits(f *testing.F) {
	for _, s := range []string{"1:3,2:2,3:1", "1:1", "", "1:", ":1", "2:2,,", "9999999999999999999:1", " 3 : 1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseSplits(s)
		if err != nil {
			return
		}
		if len(rs) == 0 || len(rs) > MaxSplits {
			t.Fatalf("ParseSplits(%q) = %d splits", s, len(rs))
		}
		for _, r := range rs {
			if r.Prefill < 1 || r.Decode < 1 || r.Prefill+r.Decode != rs[0].Prefill+rs[0].Decode {
				t.Fatalf("ParseSplits(%q) = %v", s, rs)
			}
		}
	})
}

// TestCopies: three copies of one engine, each its own value; none for 0.
func TestCopies(t *testing.T) {
	eng := sim.DefaultConfig()
	cs := Copies(eng, 3)
	if len(cs) != 3 || cs[0] != eng || cs[2] != eng {
		t.Fatalf("Copies(eng, 3) = %d configs", len(cs))
	}
	cs[0].Model = "other"
	if cs[1].Model != eng.Model {
		t.Error("the copies share a value")
	}
	if Copies(eng, 0) != nil || Copies(eng, -1) != nil {
		t.Error("copies of nothing")
	}
}
